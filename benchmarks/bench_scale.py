#!/usr/bin/env python
"""Census scale (issue 15): measurement out of core with the embedded engine, sampling with flat memory, and the
whole release end to end with its time and memory per stage.

    python benchmarks/census_like.py --rows 55000000 --csv /tmp/c55m.csv --parquet /tmp/c55m.parquet
    python benchmarks/census_like.py --rows 5000000 --csv /tmp/c5m.csv --parquet /tmp/c5m.parquet
    nice -n 10 python benchmarks/bench_scale.py measure --file /tmp/c55m.parquet --file /tmp/c55m.csv \\
        --pandas /tmp/c5m.csv --json benchmarks/results/scale-measure-2026-11-23.json
    nice -n 10 python benchmarks/bench_scale.py sample --rows 5000000 --rows 55000000 --json OUT
    nice -n 10 python benchmarks/bench_scale.py release --rows 1000000 [--rows M ...] [--parquet FILE ...] \\
        [--timeout S] [--privacy-risk defaults|demo] [--decomposability defaults] --json OUT

``measure``: for each file, in a fresh subprocess (peak = its ``ru_maxrss``), App 3's 21 two-way marginals
(``examples/census2011/app3.yaml``) counted by :mod:`sdgov.engines` — (a) ``scan``: one ``GROUPING SETS`` scan of
the source itself, the measurement alone; (b) ``release``: what a release does, validate + encode to Parquet +
fingerprint (:meth:`Engine.encode`) and then the 21 marginals from the encoded copy (:meth:`Engine.marginals`).
``--pandas`` runs the in-memory reference on a file pandas can hold (``read_csv_strict`` + ``encode`` +
``marginal_counts``, with the same fingerprint), and the engine on the same file, so the ratio is measured in
one run. ``sample``: a PGM fitted to App 3 (σ = 10) on the census extract, then ``sample_to_parquet`` of each row
count in a fresh subprocess; peak = ``ru_maxrss`` after sampling minus after the fit.

``release``: for each ``--rows N``, the census-like Parquet of N rows (``census_like.py``, timed apart as setup;
``--parquet FILE``, one per ``--rows``, keeps it and reuses a file of N rows), App 3's spec pointed at it with no
pre-registered audits (the structural checks only), a registry set up as a controller does (approvers, the
default policy, then max_rows ≥ N and ε per release 3.0 by a second signed commit) and the spec's standing
approval signed by its people; then ``sdgov release --spec … --root … --json`` in a subprocess, as an operator
runs it (it never pauses: the signed standing approval is the release decision). Per stage — the CLI's
pre-flight, the temporary Prefect server's start, agree_phi, measure, generate, audit, utility_report,
draft_card, release — its seconds (from the stage log lines; the StageRecords' own seconds beside them) and the
peak RSS of the whole process tree sampled every 0.5 s inside its window; the total wall, the exit code and the
release id. ``--timeout S`` stops a release that runs longer (its unfinished stage is marked so).
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SPEC = REPO / "examples" / "census2011" / "app3.yaml"
EXTRACT = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def worker_measure(mode: str, path: str) -> dict[str, object]:
    from sdgov.agreement.load import load_spec
    from sdgov.engines import engine
    from sdgov.engines.duckdb_engine import _connection, _ident, _source

    loaded = load_spec(SPEC)
    schema, cliques = loaded.schema_, loaded.agreement.cliques
    from sdgov.data.encoding import encode, read_csv_strict
    from sdgov.data.fingerprint import fingerprint
    from sdgov.measurement.marginals import marginal_counts

    src = Path(path)
    out: dict[str, object] = {"mode": mode, "file": path, "bytes": src.stat().st_size}
    with tempfile.TemporaryDirectory(prefix="bench-scale-", dir="/tmp") as tmp:
        t0 = time.perf_counter()
        if mode == "scan":
            relation, _ = _source(src, schema)
            cols = ", ".join(_ident(a) for a in loaded.agreement.attributes)
            sets = ", ".join("(" + ", ".join(_ident(a) for a in c) + ")" for c in cliques)
            with _connection(Path(tmp) / "x") as con:
                groups = con.sql(
                    f"SELECT {cols}, GROUPING_ID({cols}), count(*) FROM {relation} GROUP BY GROUPING SETS ({sets})"
                ).fetchall()
            out["seconds"] = time.perf_counter() - t0
            out["cells"] = len(groups)
        elif mode == "release":
            enc = engine().encode(src, schema, Path(tmp) / "codes.parquet")
            t1 = time.perf_counter()
            tables2 = engine().marginals(enc.path, schema, cliques)
            t2 = time.perf_counter()
            out.update(
                rows=enc.rows,
                encode_fingerprint_s=t1 - t0,
                marginals_s=t2 - t1,
                seconds=t2 - t0,
                codes_bytes=enc.path.stat().st_size,
                fingerprint=enc.fingerprint,
                cells=sum(t.size for t in tables2.values()),
            )
        else:  # pandas: the in-memory reference
            codes = encode(read_csv_strict(src), schema, where=path)
            fp = fingerprint(codes, schema)
            t1 = time.perf_counter()
            tables3 = {c: marginal_counts(codes, schema, c) for c in cliques}
            t2 = time.perf_counter()
            out.update(
                rows=len(codes),
                encode_fingerprint_s=t1 - t0,
                marginals_s=t2 - t1,
                seconds=t2 - t0,
                fingerprint=fp,
                cells=sum(t.size for t in tables3.values()),
            )
    out["peak_rss_bytes"] = _peak()
    return out


def worker_sample(rows: int, model_path: str) -> dict[str, object]:
    import pickle

    from sdgov.agreement.load import load_spec
    from sdgov.generators.sampler import sample_to_parquet

    model = pickle.loads(Path(model_path).read_bytes())
    schema = load_spec(SPEC).schema_
    with tempfile.TemporaryDirectory(prefix="bench-sample-", dir="/tmp") as tmp:
        sample_to_parquet(model, schema, 20_000, 1, Path(tmp) / "warm.parquet")  # untimed warm-up
        base = _peak()
        t0 = time.perf_counter()
        done = sample_to_parquet(model, schema, rows, 2011, Path(tmp) / "synthetic.parquet")
        seconds = time.perf_counter() - t0
        size = (Path(tmp) / "synthetic.parquet").stat().st_size
    peak = _peak()
    return {
        "rows": done,
        "seconds": seconds,
        "rows_per_s": done / seconds,
        "parquet_bytes": size,
        "peak_rss_bytes": peak,
        "baseline_rss_bytes": base,
        "peak_increase_bytes": peak - base,
    }


# ---------------------------------------------------------------------------------------------------------------
# ``release``: the whole governed release at N rows, time and peak memory per stage (issue 15's end-to-end figure)

CENSUS_LIKE = REPO / "benchmarks" / "census_like.py"
SDGOV = Path(sys.executable).with_name("sdgov")  # the venv's command, the one an operator runs
STAGES = ("agree_phi", "measure", "generate", "audit", "utility_report", "draft_card", "release")
STAGE_LINE = re.compile(r"stage (\w+) \(v[^)]*\) started|stage (\w+) finished in")
SERVER_LINE = "Starting temporary server"


def census_like_parquet(rows: int, path: Path) -> dict[str, object]:
    """The census-like Parquet of ``rows`` rows at ``path``, made by census_like.py unless a file of that many rows
    is already there (making 55M rows takes a minute, and it is setup, not the release: timed apart)."""
    import pyarrow.parquet as pq

    if path.exists() and pq.ParquetFile(path).metadata.num_rows == rows:
        return {"parquet": str(path), "reused": True, "seconds": 0.0}
    t0 = time.perf_counter()
    cmd = [sys.executable, str(CENSUS_LIKE), "--rows", str(rows), "--parquet", str(path)]
    subprocess.run(cmd, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    return {"parquet": str(path), "reused": False, "seconds": round(time.perf_counter() - t0, 3)}


def release_spec(
    workdir: Path, parquet: Path, rows: int, privacy_risk: str | None = None, decomposability: str | None = None
) -> Path:
    """App 3's spec pointed at the census-like file, with its schema and standing approval copied beside it.

    Pre-registered audits are dropped, so only the structural checks run (what the scale attempt of 2026-11-23
    ran), unless ``privacy_risk`` pre-registers the privacy-risk audit: ``defaults`` with its default settings (every
    default part: membership and attribute inference, the one-run ε lower bound, memorisation, record checks), or
    ``demo`` with the demo spec's smaller settings (fewer targets and shadow worlds, 300 iterations per shadow fit),
    and unless ``decomposability`` is ``defaults``: the decomposability audit pre-registered with every setting at
    its default (K = 10 fits per extremal dataset). App 3 has Φ = 21 two-way marginals at σ = 10."""
    spec = yaml.safe_load(SPEC.read_text())
    spec["dataset"] = {"name": f"census_like_{rows}", "path": str(parquet.resolve())}
    # no rows: the noisy total is released (since issue 39 rows = N, which the file would publish, is refused)
    spec.pop("rows", None)
    spec.pop("audit", None)
    if privacy_risk == "defaults":
        spec["privacy_risk"] = {}
    elif privacy_risk == "demo":
        spec["privacy_risk"] = yaml.safe_load((REPO / "sdgov" / "demo" / "spec.yaml").read_text())["privacy_risk"]
    if decomposability == "defaults":
        spec["audit"] = {}
    for name in ("schema.yaml", "approvals.yaml"):
        shutil.copy(SPEC.parent / name, workdir / name)
    path = workdir / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    return path


def governed_registry(workdir: Path, spec: Path, rows: int) -> Path:
    """A registry as a controller sets one up (approvers, the default policy, a signed commit), then the policy
    raised by a second signed commit so the release fits it — max_rows ≥ N (the default is 10M) and ε per release
    3.0 (App 3 at σ = 10 with δ = 10^-ceil(log10 N) costs ε ≈ 2.6 at 55M) — and the spec's standing approval
    signed by the people it names, so ``sdgov release`` runs through without a pause."""
    from sdgov.governance.controller import commit
    from sdgov.governance.policy import policy_path
    from sdgov.registry.log import Registry
    from tests.governance import controller_registry, sign_standing_approval

    root = workdir / "registry"
    keys = controller_registry(root, workdir / "keys")
    policy = yaml.safe_load(policy_path(root).read_text())
    policy["defaults"].update(max_rows=max(rows, policy["defaults"]["max_rows"]), max_epsilon_per_release=3.0)
    policy_path(root).write_text(yaml.safe_dump(policy, sort_keys=False))
    commit(Registry(root), "Carl Controller", keys["Carl Controller"])
    sign_standing_approval(spec, root, keys)
    return root


class RssSampler(threading.Thread):
    """Polls the resident memory of a process and all its descendants (the flow's temporary Prefect server, the
    generator's sampling workers) every ``interval`` seconds: ``ru_maxrss`` would miss the children."""

    def __init__(self, pid: int, interval: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.samples: list[tuple[float, int]] = []  # (epoch seconds, bytes)
        self.at_peak: dict[str, int] = {}  # the highest sample, by process role (where the memory sits)
        self.done = threading.Event()

    def run(self) -> None:
        import psutil

        try:
            proc = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return
        while not self.done.is_set():
            roles: dict[str, int] = {}
            for p in [proc, *self._children(proc)]:
                with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):  # a child that just ended
                    role = "release" if p.pid == self.pid else self._role(p.cmdline())
                    roles[role] = roles.get(role, 0) + p.memory_info().rss
            total = sum(roles.values())
            if total > max((r for _, r in self.samples), default=0):
                self.at_peak = roles
            self.samples.append((time.time(), total))
            self.done.wait(self.interval)

    @staticmethod
    def _role(cmdline: list[str]) -> str:
        """What a descendant of the release is: the temporary Prefect server, a pool worker, or something else."""
        line = " ".join(cmdline)
        if "uvicorn" in line:
            return "prefect server"
        if "spawn_main" in line or "loky" in line:
            return "workers"
        return "other"

    @staticmethod
    def _children(proc):  # type: ignore[no-untyped-def]
        import psutil

        try:
            return proc.children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def peak(self, start: float, end: float) -> int | None:
        """The highest sample in [start, end], widened to the samples either side: a stage shorter than the
        interval still gets the memory held around it."""
        times = [t for t, _ in self.samples]
        lo = max(0, bisect.bisect_right(times, start) - 1)
        hi = bisect.bisect_left(times, end) + 1
        inside = [rss for _, rss in self.samples[lo:hi]]
        return max(inside) if inside else None


def kill_tree(pid: int) -> None:
    """Stop the release and everything it started (the --timeout: a stage that does not scale can otherwise
    run until memory runs out, as the utility report did at 55M rows)."""
    import psutil

    with contextlib.suppress(psutil.NoSuchProcess):
        proc = psutil.Process(pid)
        for p in [*proc.children(recursive=True), proc]:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()


def run_release(spec: Path, root: Path, workdir: Path, timeout: float | None) -> dict[str, object]:
    """``sdgov release --spec … --root … --json`` in a subprocess, as an operator runs it: its own PREFECT_HOME and
    budget authority, analytics off. Each stderr line is stamped with the time it arrived: the stage log lines give
    every stage's window even when the run fails before the card (whose stage records are used when it succeeds)."""
    env = {
        **os.environ,
        "PREFECT_HOME": str(workdir / "prefect"),
        "SDGOV_AUTHORITY": str(workdir / "authority.sqlite"),  # its own budget: runs on one machine share nothing
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "DVC_NO_ANALYTICS": "1",
        "PREFECT_LOGGING_LEVEL": "INFO",
    }
    cmd = [str(SDGOV), "release", "--spec", str(spec), "--root", str(root), "--json"]
    started = time.time()
    proc = subprocess.Popen(cmd, env=env, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = RssSampler(proc.pid)
    sampler.start()
    watchdog = threading.Timer(timeout, kill_tree, [proc.pid]) if timeout else None
    if watchdog:
        watchdog.start()
    lines: list[tuple[float, str]] = []
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    for line in proc.stderr:  # type: ignore[union-attr]
        lines.append((time.time(), line.rstrip("\n")))
    code = proc.wait()
    ended = time.time()
    timed_out = bool(watchdog and not watchdog.is_alive() and code < 0)
    if watchdog:
        watchdog.cancel()
    reader.join()
    sampler.done.set()
    sampler.join()
    return {
        "code": code,
        "timed_out": timed_out,
        "started": started,
        "ended": ended,
        "stdout": "".join(out),
        "lines": lines,
        "sampler": sampler,
    }


def windows_from_log(lines: list[tuple[float, str]]) -> dict[str, list[float]]:
    """Each stage's [start] or [start, end] from its 'stage X started' / 'stage X finished' log lines (the end is
    absent if the stage never finished), stamped when the line arrived (millisecond resolution, unlike the
    StageRecords' whole seconds); the temporary server's start as the pseudo-stage '_server'."""
    found: dict[str, list[float]] = {}
    for t, line in lines:
        if SERVER_LINE in line and "_server" not in found:
            found["_server"] = [t]
        m = STAGE_LINE.search(line)
        if m and m.group(1):
            found[m.group(1)] = [t]
        elif m and m.group(2) in found:
            found[m.group(2)].append(t)
    return found


def recorded_seconds(root: Path) -> dict[str, float]:
    """Each stage's ``seconds`` from the StageRecords a released run writes to ``runs/<id>/provenance.json``
    (agree_phi … draft_card: the timings its card publishes), to set beside the log's."""
    found: dict[str, float] = {}
    for prov in (root / "runs").glob("*/provenance.json"):
        found.update({rec["stage"]: rec["seconds"] for rec in json.loads(prov.read_text())["stages"]})
    return found


def stage_table(run: dict[str, object], root: Path) -> list[dict[str, object]]:
    """One row per stage, in order, with its seconds and the process tree's peak RSS inside its window. Before
    the flow's stages: the CLI's pre-flight (imports; the one read, validation and encoding of the data; the
    policy check) until the flow starts Prefect's temporary server, then the server's start until agree_phi."""
    log = windows_from_log(run["lines"])  # type: ignore[arg-type]
    records = recorded_seconds(root)
    sampler: RssSampler = run["sampler"]  # type: ignore[assignment]
    start, end = float(run["started"]), float(run["ended"])  # type: ignore[arg-type]
    first = log["agree_phi"][0] if "agree_phi" in log else end
    server = log.get("_server", [first])[0]
    rows = [_row("pre-flight", start, server, sampler), _row("server start", server, first, sampler)]
    for name in STAGES:
        if name not in log:
            continue
        window = log[name]
        row = _row(name, window[0], window[1] if len(window) > 1 else end, sampler)
        row["finished"] = len(window) > 1
        if name in records:
            row["stage_record_seconds"] = records[name]
        rows.append(row)
    return rows


def _row(stage: str, start: float, end: float, sampler: RssSampler) -> dict[str, object]:
    return {"stage": stage, "seconds": round(end - start, 3), "peak_rss_bytes": sampler.peak(start, end)}


def bench_release(
    rows: int,
    parquet: Path | None,
    timeout: float | None,
    privacy_risk: str | None = None,
    decomposability: str | None = None,
) -> dict[str, object]:
    """One end-to-end release at ``rows`` rows in a temporary directory (registry, spec, Prefect home)."""
    from sdgov.agreement.load import load_spec

    with tempfile.TemporaryDirectory(prefix="bench-e2e-", dir="/tmp") as tmp:
        workdir = Path(tmp)
        setup = census_like_parquet(rows, parquet or workdir / "census_like.parquet")
        spec = release_spec(workdir, Path(str(setup["parquet"])), rows, privacy_risk, decomposability)
        root = governed_registry(workdir, spec, rows)
        run = run_release(spec, root, workdir, timeout)
        stages = stage_table(run, root)
        sampler: RssSampler = run["sampler"]  # type: ignore[assignment]
        published = windows_from_log(run["lines"]).get("release", [])  # type: ignore[arg-type]
        result: dict[str, object] = {
            "rows": rows,
            "audits": "structural checks"
            + (f" + privacy risk ({privacy_risk} settings)" if privacy_risk else "")
            + (f" + decomposability ({decomposability} settings)" if decomposability else ""),
            "agreement_sha256": load_spec(spec).agreement.sha256(),
            "setup_census_like": setup,
            "exit_code": run["code"],
            "stopped_by_timeout": run["timed_out"],
            "wall_s": round(float(run["ended"]) - float(run["started"]), 3),  # type: ignore[arg-type]
            "to_release_s": round(published[1] - float(run["started"]), 3) if len(published) > 1 else None,  # type: ignore[arg-type]
            "peak_rss_bytes": max((r for _, r in sampler.samples), default=None),
            "peak_rss_by_process": sampler.at_peak,
            "stages": stages,
        }
        result.update(release_outcome(run, root))
    return result


def release_outcome(run: dict[str, object], root: Path) -> dict[str, object]:
    """The verdict: on success the CLI's JSON and the card (release id, audit verdict, privacy spent), else the
    last lines of the log; the registry's events either way."""
    from sdgov.registry.log import Registry

    log = list(Registry(root).events())
    events = [e.event for e in log]
    # `sdgov release` never pauses: the release decision is the signed standing approval, logged before publication
    approved = [f"{e.actor} ({e.comment})" for e in log if e.event == "release_approved"]
    if run["code"] == 0:
        stdout = str(run["stdout"])
        payload = json.loads(stdout[stdout.index("{") :])  # the CLI's --json payload, pretty-printed
        card = json.loads(Path(payload["card_json"]).read_text())
        return {
            "verdict": "released",
            "release_id": payload["release_id"],
            "card_verdict": card["verdict"]["result"],
            "privacy": {k: card["privacy"][k] for k in ("rho", "epsilon", "delta")},
            "paused_for_approval": False,
            "release_approved_by": approved,
            "events": events,
        }
    tail = [line for _, line in run["lines"]][-5:]  # type: ignore[union-attr]
    return {"verdict": "not released", "error_tail": tail, "events": events, "audit_failed": _failed_checks(root)}


def _failed_checks(root: Path) -> list[dict[str, object]]:
    """The audit's checks that did not pass (the run directory goes with the temporary directory)."""
    return [
        {"name": c["name"], "severity": c.get("severity"), "detail": c.get("detail")}
        for report in root.glob("runs/*/audit.json")
        for c in json.loads(report.read_text()).get("checks", [])
        if not c.get("passed", True)
    ]


def print_release(result: dict[str, object]) -> None:
    """One line per stage, then the outcome."""
    print(f"{result['rows']:,} rows — census_like setup {result['setup_census_like']['seconds']} s (not counted)")  # type: ignore[index]
    for row in result["stages"]:  # type: ignore[union-attr]
        peak = row["peak_rss_bytes"]
        gb = f"{peak / 1e9:.2f} GB" if peak else "n/a"
        mark = "" if row.get("finished", True) else "  (did not finish)"
        print(f"  {row['stage']:<24.24} {row['seconds']:>9.1f} s   peak {gb}{mark}")
    where = ", ".join(f"{k} {v / 1e9:.2f}" for k, v in (result.get("peak_rss_by_process") or {}).items())  # type: ignore[union-attr]
    if where:
        print(f"  at the peak (GB): {where}")
    print(
        f"  total wall {result['wall_s']:.1f} s, exit {result['exit_code']}: {result['verdict']}"
        f" {result.get('release_id', '')}",
        flush=True,
    )
    for check in result.get("audit_failed") or []:  # type: ignore[union-attr]
        print(f"  audit check not passed: {check['name']} — {check['detail']}", flush=True)


def _memory() -> int:
    import psutil

    return int(psutil.virtual_memory().total)


def _sub(*args: str) -> dict[str, object]:
    res = subprocess.run(
        [sys.executable, __file__, "worker", *args], capture_output=True, text=True, check=False, cwd=REPO
    )
    if res.returncode:
        raise SystemExit(f"worker {args} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["measure", "sample", "release", "worker"])
    ap.add_argument("--file", action="append", default=[])
    ap.add_argument("--pandas")
    ap.add_argument("--rows", action="append", type=int, default=[])
    ap.add_argument("--parquet", action="append", default=[], type=Path, help="release: one per --rows, reused")
    ap.add_argument("--timeout", type=float, help="release: stop the release after this many seconds")
    ap.add_argument(
        "--privacy-risk", choices=["defaults", "demo"], help="release: pre-register the privacy-risk audit (settings)"
    )
    ap.add_argument(
        "--decomposability", choices=["defaults"], help="release: pre-register the decomposability audit (settings)"
    )
    ap.add_argument("--json")
    ap.add_argument("rest", nargs="*")
    args = ap.parse_args()
    if args.what == "worker":
        kind, *rest = args.rest
        res = worker_measure(*rest) if kind == "measure" else worker_sample(int(rest[0]), rest[1])
        print(json.dumps(res))
        return
    import duckdb

    out: dict[str, object] = {
        "command": " ".join(["python", *sys.argv]),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "spec": str(SPEC.relative_to(REPO)),
        "load_start": os.getloadavg(),
        "results": [],
    }
    results: list[dict[str, object]] = out["results"]  # type: ignore[assignment]
    if args.what == "release":
        if args.parquet and len(args.parquet) != len(args.rows):
            raise SystemExit("bench_scale.py: error: give one --parquet per --rows, or none")
        out["machine"] = {"node": platform.node(), "platform": platform.platform(), "memory_bytes": _memory()}
        for rows, parquet in zip(args.rows, args.parquet or [None] * len(args.rows), strict=True):
            res = bench_release(rows, parquet, args.timeout, args.privacy_risk, args.decomposability)
            print_release(res)
            results.append(res)
    elif args.what == "measure":
        if args.pandas:
            ref = _sub("measure", "pandas", args.pandas)
            eng = _sub("measure", "release", args.pandas)
            assert ref["fingerprint"] == eng["fingerprint"], "engine and pandas disagree"
            ref["engine_speedup"] = float(ref["seconds"]) / float(eng["seconds"])  # type: ignore[arg-type]
            ref["engine_peak_ratio"] = float(eng["peak_rss_bytes"]) / float(ref["peak_rss_bytes"])  # type: ignore[arg-type]
            results += [ref, eng]
            print(ref, eng, sep="\n", flush=True)
        for f in args.file:
            for mode in ("scan", "release"):
                res = _sub("measure", mode, f)
                print(res, flush=True)
                results.append(res)
    else:
        import pickle

        from sdgov.agreement.load import load_spec
        from sdgov.budget.accounting import plan_privacy
        from sdgov.engines import load_encoded
        from sdgov.generators.pgm_mbi import fit_pgm
        from sdgov.measurement.marginals import measure_agreement

        loaded = load_spec(SPEC)
        ag = loaded.agreement
        codes = load_encoded(EXTRACT, loaded.schema_)
        plan = plan_privacy(ag.privacy, ag.cliques)
        mset = measure_agreement(codes, loaded.schema_, ag, plan, "bench")
        model = fit_pgm(mset, ag.generator.model_copy(update={"iterations": 300}))
        with tempfile.TemporaryDirectory(prefix="bench-model-") as tmp:
            mp = Path(tmp) / "model.pkl"
            mp.write_bytes(pickle.dumps(model))
            for rows in args.rows:
                res = _sub("sample", str(rows), str(mp))
                print(res, flush=True)
                results.append(res)
        if len(results) >= 2:
            first, last = results[0], results[-1]
            out["peak_rss_ratio_largest_vs_smallest"] = float(last["peak_rss_bytes"]) / float(first["peak_rss_bytes"])  # type: ignore[arg-type]
            small = float(first["peak_increase_bytes"])  # type: ignore[arg-type]
            # an increase of 0 at both sizes: sampling never rose above the loaded model's high-water mark
            out["peak_increase_ratio_largest_vs_smallest"] = (
                float(last["peak_increase_bytes"]) / small if small else None
            )  # type: ignore[arg-type]
    out["load_end"] = os.getloadavg()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
