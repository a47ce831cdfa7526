"""The release channel: a public release repository (git + DVC) that sdgov fills after every release, and the
one command a third party runs on a clone of it (``sdgov verify-release``).

:mod:`.folder` lays out one public release folder, :mod:`.regenerate` reproduces its synthetic data from ψ alone,
:mod:`.verify` checks a folder without the registry or the confidential data, :mod:`.project` drives git and DVC,
and :mod:`.publish` tracks, commits and pushes a release into the repository the controller configured.
"""
