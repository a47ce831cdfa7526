"""The release channel's refusals and failure lines (issue 28); the channel itself, with real git and dvc, is
tests/system/test_release_channel.py."""

from __future__ import annotations

import contextlib
import io

import pytest
import yaml

from sdgov.channel.publish import publish_after_release
from sdgov.commands import main
from sdgov.registry.log import Registry
from tests.conftest import init_registry


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_failing_channel_is_one_warning_and_the_release_stands(tmp_path):
    root = init_registry(tmp_path / "registry")
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("x")
    schema = tmp_path / "schema.yaml"
    said: dict[str, list[str]] = {"warn": [], "info": []}

    def publish():
        return publish_after_release(Registry(root), "r1", schema, said["warn"].append, said["info"].append)

    assert publish() is None and said == {"warn": [], "info": []}  # no channel configured: nothing to do

    channel = {"release_channel": {"project": str(blocked), "remote": str(tmp_path / "remote")}}
    (root / "controller.yaml").write_text(yaml.safe_dump(channel))
    outcome = publish()
    assert outcome is not None and not outcome.pushed and outcome.error
    assert said["info"] == [] and len(said["warn"]) == 1
    [line] = said["warn"]
    assert "\n" not in line and "release r1 stands" in line and "'sdgov publish r1' retries" in line


def test_publish_refuses_bad_requests_and_an_unsigned_channel_in_one_line(tmp_path):
    root = str(init_registry(tmp_path / "registry"))
    code, _, err = run("publish", "--all", "--root", root)
    assert code == 2 and "no release channel is configured" in one_line(err)
    code, _, err = run("publish", "--root", root)
    assert code == 2 and "or --all" in one_line(err)
    code, _, err = run("publish", "nope", "--root", root)
    assert code == 2 and "no release 'nope'" in one_line(err)
    # where releases go is a controller file: changed without a signed commit, nothing is published
    channel = {"release_channel": {"project": "elsewhere", "remote": "s3://attacker/bucket"}}
    (tmp_path / "registry" / "controller.yaml").write_text(yaml.safe_dump(channel))
    code, _, err = run("publish", "--all", "--root", root)
    assert code == 2 and "changed without a signed commit" in one_line(err)


@pytest.mark.parametrize(
    "channel",
    [{"project": "x"}, {"project": "x", "remote": "r", "remote_name": "-r x"}, {"project": "x", "remote": "--help"}],
)
def test_an_invalid_channel_configuration_is_one_line(tmp_path, channel):
    from sdgov.base.errors import SpecError
    from sdgov.governance.controller import load_config

    root = init_registry(tmp_path / "registry")
    (root / "controller.yaml").write_text(yaml.safe_dump({"release_channel": channel}))
    with pytest.raises(SpecError, match="invalid controller configuration"):
        load_config(Registry(root))


def test_verify_release_on_something_that_is_not_a_release(tmp_path):
    code, _, err = run("verify-release", str(tmp_path / "missing"))
    assert code == 2 and "not a release folder" in one_line(err)
    (tmp_path / "empty").mkdir()
    pins = ("--pin-file", str(tmp_path / "pins.json"))
    code, _, err = run("verify-release", str(tmp_path / "empty"), *pins)  # no key given, none pinned
    assert code == 2 and "no key is pinned" in one_line(err) and "--public-key sha256:" in err
    for bad in ("nonsense", "sha256:12"):
        code, _, err = run("verify-release", str(tmp_path / "empty"), *pins, "--public-key", bad)
        assert code == 2 and "is neither 'sha256:<64 hex>' nor 'ed25519:<base64>'" in one_line(err)
    code, out, err = run("verify-release", str(tmp_path / "empty"), *pins, "--public-key", "sha256:" + "0" * 64)
    assert code == 1 and "Traceback" not in err and not (tmp_path / "pins.json").exists()  # nothing verified
    lines = out.strip().splitlines()
    assert lines[0] == f"key: sha256:{'0' * 64} — the key you gave (--public-key)"
    assert lines[-1].startswith("NOT verified") and all(x.startswith("FAIL") for x in lines[1:-1]), out
    assert any(x.startswith("FAIL manifest.json") for x in lines) and any(
        x.startswith("FAIL released.json") for x in lines
    )
