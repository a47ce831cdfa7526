"""Package discovery for the one ``sdgov`` namespace.

The core library is ``sdgov/``; the top-level rooms the project is known by (``commands/``, ``flows/``, ``tasks/``,
``cards/``) install as ``sdgov.commands``, ``sdgov.flows``, ``sdgov.tasks`` and ``sdgov.cards`` through a
package-dir mapping, so
nothing generic lands at the top of site-packages. Every package below each room is found automatically:
adding a subpackage never needs an edit here. Metadata and dependencies are in ``pyproject.toml``.
"""

from setuptools import find_packages, setup

ROOMS = ("commands", "flows", "tasks", "cards")

packages = find_packages(include=["sdgov", "sdgov.*"])
package_dir = {}
for room in ROOMS:
    package_dir[f"sdgov.{room}"] = room
    packages += [f"sdgov.{room}"] + [f"sdgov.{room}.{sub}" for sub in find_packages(where=room)]

setup(packages=packages, package_dir=package_dir)
