"""Environment and shared helpers for both suites: unit/ (pure, fast) and system/ (real Prefect, DVC, browser, census).

The environment is set before anything imports Prefect or DVC, so no test writes to ~/.prefect or sends analytics,
and every test gets its own budget authority (``authority``), so no two tests share an account by accident.
The Prefect test server lives in system/conftest.py: unit tests never start one."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

_home = tempfile.mkdtemp(prefix="sdgov-prefect-")
os.environ["PREFECT_HOME"] = _home
# registry signing keys live outside every registry (sdgov/registry/key.py): here, never in ~/.config
os.environ["SDGOV_KEY_DIR"] = tempfile.mkdtemp(prefix="sdgov-keys-")
os.environ.pop("SDGOV_REGISTRY_KEY", None)
# the controller's budget authority (sdgov/governance/authority.py) is shared by every registry on the machine: never
# ~/.local/share's here. The fixtures below give each module and each test a fresh one (every test uses the same
# demo data, so one shared authority would reuse another test's noise and spend another test's budget)
os.environ["SDGOV_AUTHORITY"] = str(Path(tempfile.mkdtemp(prefix="sdgov-authority-")) / "authority.sqlite")
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
os.environ["DVC_NO_ANALYTICS"] = "1"
# one JAX compilation cache for the run (sdgov/base/jaxsetup.py): the many release processes the tests start (the CLI,
# DVC stages, audit workers) compile the same small models; a fresh directory per run, so nothing carries over
if "SDGOV_JAX_CACHE_DIR" not in os.environ:  # set once; the processes the tests start inherit it
    os.environ["SDGOV_JAX_CACHE_DIR"] = tempfile.mkdtemp(prefix="sdgov-jax-cache-")

# the test suite's audit-generator plug-ins (crashing and part-leaking generators) are "installed" as a controller's
# installation would install a plug-in: a distribution whose entry points (group sdgov.audit_generators) name them,
# found on the path — here and in every process the tests start (the CLI, audit workers)
PLUGINS = Path(__file__).resolve().parent / "plugins"
import sys  # noqa: E402

if str(PLUGINS) not in sys.path:
    sys.path.append(str(PLUGINS))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(PLUGINS)) if p)

# Prefect configures logging on first import (``logging.config.dictConfig``), which closes every existing handler.
# absl's handler (imported with optax by mbi's estimators on a first fit) closes its stream unless that stream is
# sys.stderr at that moment: a first Prefect import inside a test that redirects sys.stderr (``tests.fixtures.cli``)
# closed pytest's own capture file, and a single-process run (``-n 0``) of such a file crashed. Configure it now.
import prefect.main  # noqa: E402,F401
import pytest  # noqa: E402
import yaml  # noqa: E402

# JAX (via mbi) binds its log handler to sys.stderr at import; import it now, not inside a test whose
# captured stream is closed afterwards.
import sdgov.generators.pgm  # noqa: E402,F401

if TYPE_CHECKING:
    from sdgov.contracts import Agreed
    from sdgov.data.schema import Schema
    from sdgov.governance.site import Site
    from tests.fixtures.inputs import Inputs

REPO = Path(__file__).resolve().parents[1]
CENSUS = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"


def make_demo_inputs(dest: Path, rows: int = 3000, **spec_overrides) -> Path:
    """A private copy of the demo inputs with ``rows`` generated records; returns the spec path. The spec asks for
    :func:`synthetic_rows` of them (never the true count N, which the controller's policy refuses to publish). The
    demo's ``audit``/``privacy_risk`` sections are left out unless given in ``spec_overrides``."""
    from sdgov.data.schema import load_schema
    from sdgov.demo import inputs
    from sdgov.demo.data import write_demo_data

    dest.mkdir(parents=True, exist_ok=True)
    for name in ("schema.yaml", "approvals.yaml"):
        shutil.copy(inputs() / name, dest / name)
    write_demo_data(load_schema(dest / "schema.yaml"), dest / "data.csv", rows=rows)
    spec = yaml.safe_load((inputs() / "spec.yaml").read_text())
    spec["dataset"]["path"] = "data.csv"
    spec["rows"] = synthetic_rows(rows)
    for section in ("audit", "privacy_risk"):  # the demo's pre-registered audits take a minute: opt in per test
        spec.pop(section, None)
    spec.update(spec_overrides)
    (dest / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return dest / "spec.yaml"


def synthetic_rows(records: int) -> int:
    """The synthetic rows a test spec asks for from ``records`` confidential ones: 90 % of them, never N itself."""
    return records - max(1, records // 10)


def init_registry(root: Path, datasets: dict | None = None, **defaults: object) -> Path:
    """A registry with the controller's default policy (what ``sdgov init`` writes), ``defaults`` overriding its
    defaults and ``datasets`` its per-dataset entries, adopted in the log as ``sdgov init`` does (only if the
    registry has no policy adopted yet: a later call edits the file behind the log's back); returns ``root``."""
    from sdgov.governance.controller import init
    from sdgov.governance.policy import init_policy, policy_path
    from sdgov.registry.log import Registry

    init_policy(root, controller="Carl Controller")
    if defaults or datasets is not None:
        policy = yaml.safe_load(policy_path(root).read_text())
        policy["defaults"].update(defaults)
        if datasets is not None:
            policy["datasets"] = datasets
        policy_path(root).write_text(yaml.safe_dump(policy, sort_keys=False))
    init(Registry(root), controller="Carl Controller")
    return root


@pytest.fixture(scope="session", autouse=True)
def empty_cwd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test runs in the directory pytest started in: the README's demo leaves its registry at ./registry there,
    where a command given neither ``--root`` nor ``$SDGOV_REGISTRY`` would find that registry's log and look for its
    commitment secret in the run's key directory. An empty directory stands for a clean checkout's (tests name the
    repository's files by ``REPO``, never relative to the working directory). A session fixture, not an import-time
    ``chdir``: pytest reads ``testpaths`` relative to the working directory after importing this file."""
    start = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    yield
    os.chdir(start)


@pytest.fixture(scope="module", autouse=True)
def module_authority(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh budget authority for a module's shared fixtures (a release built once for many tests)."""
    with own_authority(tmp_path_factory.mktemp("authority")) as path:
        yield path


@pytest.fixture(autouse=True)
def authority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh budget authority for each test, in the environment, so the processes a test starts share it too."""
    path = tmp_path / "authority" / "authority.sqlite"
    monkeypatch.setenv("SDGOV_AUTHORITY", str(path))
    return path


@contextlib.contextmanager
def own_authority(directory: Path) -> Iterator[Path]:
    """``SDGOV_AUTHORITY`` pointed at a fresh authority under ``directory`` while the block runs (a shared fixture
    that releases the demo data must not meet another fixture's draws)."""
    path = directory / "authority.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SDGOV_AUTHORITY", str(path))
        yield path


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes: "nothing written" means this is unchanged."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def demo_spec(tmp_path: Path) -> Path:
    return make_demo_inputs(tmp_path / "inputs")


def agree(spec: Path | str, site: Site, run_id: str | None = None) -> Agreed:
    """The agree stage's task code on ``spec``'s inputs, checked first as a release checks them (no flow run)."""
    import uuid

    from sdgov.intake.inputs import check_release_inputs
    from sdgov.tasks.agree_phi import agree_phi

    return agree_phi.fn(check_release_inputs(site, spec), site, run_id or uuid.uuid4().hex)


def draw_measurement(spec: Path, root: Path, run_id: str = "t0") -> Path:
    """The governed draw (agree + measure task code, under the ledger) without a flow run; returns ψ's path."""
    from sdgov.governance.site import Site
    from sdgov.tasks.measure import measure

    init_registry(root)
    site = Site.resolve(root)
    return Path(measure.fn(agree(spec, site, run_id), site).measurements.path)


# ----------------------------------------------------------------------------------------- shared by unit and system
# (a test module never imports another: the fixtures both suites use live here, their helpers in tests/fixtures/)


@pytest.fixture(scope="module")
def demo_csv(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The demo's generated data (~300 rows), as text, generated once for the module."""
    from sdgov.data.schema import load_schema
    from sdgov.demo.data import write_demo_data
    from tests.fixtures.inputs import DEMO, ROWS

    path = tmp_path_factory.mktemp("demo-data") / "data.csv"
    write_demo_data(load_schema(DEMO / "schema.yaml"), path, rows=ROWS)
    return path.read_text(encoding="utf-8")


@pytest.fixture
def inputs(tmp_path: Path, demo_csv: str) -> Inputs:
    """A valid copy of the demo inputs in ``tmp_path`` (:class:`tests.fixtures.inputs.Inputs`), for a case to break."""
    from tests.fixtures.inputs import DEMO, ROWS, Inputs

    d = tmp_path / "inputs"
    d.mkdir()
    (d / "schema.yaml").write_text((DEMO / "schema.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    (d / "approvals.yaml").write_text((DEMO / "approvals.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    spec = yaml.safe_load((DEMO / "spec.yaml").read_text(encoding="utf-8"))
    spec["dataset"]["path"] = "data.csv"
    spec["schema"] = "schema.yaml"
    spec["approvals"] = "approvals.yaml"
    spec["generator"]["iterations"] = 50
    spec["rows"] = ROWS - 30  # never the data's true count N = ROWS, which the controller's policy refuses
    # the privacy-risk audit draws on more records than these ROWS (the pre-flight would refuse every case for it)
    spec.pop("privacy_risk", None)
    (d / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
    (d / "data.csv").write_text(demo_csv, encoding="utf-8")
    return Inputs(dir=d, root=tmp_path / "registry")


@pytest.fixture
def no_flow(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fail loudly (instead of starting a Prefect server) if a bad input gets past pre-flight validation."""
    import types
    from typing import Any

    def release_flow(**kwargs: Any) -> None:
        raise AssertionError(f"malformed input reached the release flow (validation let it through): {kwargs}")

    fake = types.ModuleType("sdgov.flows.release")
    fake.release_flow = release_flow  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sdgov.flows.release", fake)
    monkeypatch.chdir(tmp_path)  # anything written relative to the cwd would show up in the tree snapshot
    monkeypatch.delenv("SDGOV_REGISTRY", raising=False)


@pytest.fixture
def adult(tmp_path: Path) -> tuple[Path, Schema, list[list[str]]]:
    """A copy of examples/uci_adult with 3,000 records in adult.data's form (tests/fixtures/adult.py)."""
    from sdgov.data.schema import load_schema
    from tests.fixtures.adult import EXAMPLE, adult_like, write_adult

    inputs = tmp_path / "inputs"
    shutil.copytree(EXAMPLE, inputs)
    schema = load_schema(inputs / "schema.yaml")
    records = adult_like(schema, 3000)
    write_adult(inputs / "adult.data", records)
    spec = yaml.safe_load((inputs / "spec.yaml").read_text())
    spec["generator"]["iterations"] = 200
    spec["rows"] = 3000
    (inputs / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return inputs, schema, records
