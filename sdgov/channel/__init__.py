"""The release channel: a public release repository (git + DVC) that sdgov fills after every release, and the
one command a third party runs on a clone of it (``sdgov verify-release``).

:mod:`.folder` lays out one public release folder, :mod:`.regenerate` reproduces its synthetic data from ψ alone,
:mod:`.verify` checks a folder without the registry or the confidential data, :mod:`.project` drives git and DVC,
and :mod:`.publish` tracks, commits and pushes a release into the repository the controller configured.

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "Published": "publish",
    "ReleaseVerified": "verify",
    "Trust": "pins",
    "default_pin_file": "pins",
    "pin": "pins",
    "publish_after_release": "publish",
    "publish_named": "publish",
    "publish_releases": "publish",
    "regenerate": "regenerate",
    "registry_of": "verify",
    "trust": "pins",
    "verify_release": "verify",
    "verify_with_pins": "verify",
}
__all__ = [
    "Published",
    "ReleaseVerified",
    "Trust",
    "default_pin_file",
    "pin",
    "publish_after_release",
    "publish_named",
    "publish_releases",
    "regenerate",
    "registry_of",
    "trust",
    "verify_release",
    "verify_with_pins",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
