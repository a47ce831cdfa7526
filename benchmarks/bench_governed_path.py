#!/usr/bin/env python
"""Issue 27: the whole governed path as a user runs it, against mbi 2.0's MST reference, in one run.

    nice -n 10 .venv/bin/python benchmarks/bench_governed_path.py --mbi /tmp/peers-mbi/bin/python \
        [--census ../shared/data/census2011_teaching_50k.csv] [--adult adult.data] [--seeds 1] [--json OUT]

Each command is a fresh ``sdgov`` process, as typed by the people involved, in this order:

1. ``init --root R`` (the controller's default policy); the controller raises ``max_delta`` to the spec's 1e-5,
   ``max_epsilon_per_release`` to the draft's ε where it is above the default 2, and sets ``sigma_floor`` where
   ``--sigma-floor`` gives one;
2. ``keygen`` for the analyst and the controller; ``approvers commit`` of the approvers registry (and the policy);
3. ``propose --select mst`` of a draft whose Φ is every attribute's 1-way (MST's default share), which prints the
   proposed spec's agreement hash;
4. ``validate --spec PROPOSED --root R``;
5. ``approvals pin`` of the standing approval to that hash, the data and a lapse date (the controller), then
   ``approvals sign`` by the analyst and by the controller;
6. ``release --spec PROPOSED --approvals FILE --root R``: no ``PREFECT_API_URL``, so the release runs against
   Prefect's temporary server (a child of the command), on a ``PREFECT_HOME`` made fresh for the dataset (its
   database migrations are paid in the release; ``--warm-home`` migrates it first, untimed, as a user's second
   release would find it).

The spec pre-registers no audit section (``audit:``, ``privacy_risk:``), so the release runs what every release
runs: the input check, measurement, the fit, sampling, the evidence report (utility against the real data) and
the card.

**CPU seconds of the whole process tree**: this process makes itself the child subreaper (``PR_SET_CHILD_SUBREAPER``),
so every descendant a command leaves behind (the temporary server) is reparented here and reaped, and
``getrusage(RUSAGE_CHILDREN)`` before and after a command counts all of them. The peer, ``benchmarks/peers/mbi_mst.py``
(imports, JAX compilation, selection, measurement, fit and sampling of as many rows), is measured the same way in
the same run, on the same codes, ε = 1, δ = 1e-5. The ratio printed is the whole path's CPU over the peer's.

Data: ``--census`` (default ``../shared/data/census2011_teaching_50k.csv``, all 17 attributes) and ``--adult``
(UCI's ``adult.data`` as distributed, read by ``examples/uci_adult/schema.yaml``, all 15 attributes; without it the
Adult-like file the tests generate). Neither is in the repository; scratch files go under /tmp.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as dt
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
PEERS = Path(__file__).resolve().parent / "peers"
sys.path.insert(0, str(PEERS.parent))
CENSUS = REPO.parent / "shared" / "data" / "census2011_teaching_50k.csv"
SCHEMAS = {
    "census": REPO / "examples" / "census2011" / "schema.yaml",
    "adult": REPO / "examples" / "uci_adult" / "schema.yaml",
}
PEOPLE = {"Ada Analyst": "analyst", "Carl Controller": "controller"}
MODEL_CARD = {
    "contact": "sdgov maintainers (a benchmark, not a data release)",
    "data_controller": "whoever holds the input file",
    "licence": "as the input data",
    "intended_users": "benchmarking",
    "out_of_scope": ["any decision about people"],
    "review_by": "2027-11-26",
}


def become_subreaper() -> None:
    """Orphaned descendants (a server a command started and did not wait for) are reparented to this process, so their
    CPU reaches ``RUSAGE_CHILDREN`` when they are reaped here."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _live_children() -> list[int]:
    me = str(os.getpid())
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            pids.append(int(stat.parent.name))
    return pids


def reap_all(grace: float = 60.0) -> None:
    """Wait for every remaining descendant (SIGTERM after ``grace`` seconds, then SIGKILL) so its CPU is counted."""
    deadline = time.monotonic() + grace
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            continue
        if time.monotonic() > deadline:
            for child in _live_children():
                os.kill(child, signal.SIGTERM if time.monotonic() < deadline + 10 else signal.SIGKILL)
        time.sleep(0.1)


def timed(argv: list[str], env: dict[str, str], cwd: Path, log: Path | None = None) -> dict[str, object]:
    """Run one fresh process; wall seconds, CPU seconds of its whole tree, its stdout (a failure stops the run);
    ``log``: where its stderr is kept."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    reap_all()
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if log is not None:
        log.write_text(proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])} … exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "stdout": proc.stdout}


@dataclass(frozen=True)
class Draft:
    """What the analyst's draft declares beyond the data: the modelled columns (None: every schema column but the
    identifiers), (ε, δ), the selection block and the generator block (None: the defaults)."""

    columns: list[str] | None = None
    epsilon: float = 1.0
    delta: float = 1e-5
    selection: dict | None = None
    generator: dict | None = None


def draft_spec(work: Path, name: str, data: Path, schema: Path, seed: int, draft: Draft = Draft()) -> Path:
    """The analyst's draft: the columns as 1-ways, MST selection (at its defaults unless ``draft`` says otherwise),
    ε = 1, δ = 1e-5 unless ``draft`` says otherwise. No ``rows``: the release makes as many as the measured tables'
    noisy total (since issue 39 the policy refuses rows = the true record count, which the file would publish)."""
    attributes = [c["name"] for c in yaml.safe_load(schema.read_text())["columns"]]
    ids = set(yaml.safe_load(schema.read_text()).get("identifiers") or [])
    spec = {
        "name": f"bench-{name}",
        "description": "issue 27: the governed path against mbi MST",
        "dataset": {"name": f"bench_{name}", "path": str(data)},
        "schema": str(schema),
        "phi": {"all_kway": [{"k": 1, "attributes": draft.columns or [a for a in attributes if a not in ids]}]},
        "privacy": {
            "epsilon": draft.epsilon,
            "delta": draft.delta,
            "selection": draft.selection or {"method": "mst"},
        },
        "seed": seed,
        "approvals": "approvals.yaml",
        "model_card": MODEL_CARD,
    }
    if draft.generator:
        spec["generator"] = draft.generator
    path = work / "draft.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    return path


def governed_path(
    sdgov: str,
    name: str,
    data: Path,
    seed: int,
    warm_home: bool,
    profile: Path | None = None,
    logs: Path | None = None,
    keep: Path | None = None,
    draft: Draft = Draft(),
    score: Callable[[Path], dict[str, float]] | None = None,
    sigma_floor: float | None = None,
) -> dict[str, object]:
    """Every command of the path in a fresh process; per-command wall and CPU seconds (``profile``: each command
    under cProfile, written there as ``NAME-SEED-COMMAND.prof``; ``logs``: each command's stderr there, ``.log``;
    ``keep``: the path's folder — registry, keys, specs, Prefect home, cache — copied there as ``NAME-SEED``;
    ``draft``: what the draft declares; ``score``: figures of the released synthetic file, untimed; ``sigma_floor``:
    the controller's policy floor instead of its default)."""
    with tempfile.TemporaryDirectory(prefix=f"sdgov-path-{name}-") as tmp:
        work = Path(tmp)
        root, keys = work / "registry", work / "keys"
        keys.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SDGOV_"))}
        env |= {
            "PREFECT_HOME": str(work / "prefect"),
            "SDGOV_AUTHORITY": str(work / "authority.sqlite"),
            "XDG_CACHE_HOME": str(work / "cache"),  # JAX's compilation cache starts empty: the path pays each compile
        }
        if warm_home:  # a Prefect home used before: its database already migrated (untimed)
            prefect = str(Path(sdgov).with_name("prefect"))
            subprocess.run([prefect, "server", "database", "upgrade", "-y"], env=env, check=True, capture_output=True)
            reap_all()
        steps: list[tuple[str, dict[str, object]]] = []

        def run(label: str, *argv: str) -> str:
            cmd, stem = [sdgov, *argv], f"{name}-{seed}-{label.replace(' ', '_')}"
            if profile is not None:
                prof = str(profile / f"{stem}.prof")
                cmd = [str(Path(sdgov).with_name("python")), "-m", "cProfile", "-o", prof, "-m", "sdgov.commands"]
                cmd += argv
            out = timed(cmd, env, work, logs / f"{stem}.log" if logs is not None else None)
            steps.append((label, out))
            return str(out["stdout"])

        run("init", "init", "--root", str(root), "--controller", "Carl Controller")
        policy = root / "policy.yaml"
        raw = yaml.safe_load(policy.read_text())
        raw["defaults"]["max_delta"] = 1e-5  # the controller allows the peers' δ
        limits = raw["defaults"]  # and the benchmark's ε (the default policy allows 2 a release)
        limits["max_epsilon_per_release"] = max(float(limits["max_epsilon_per_release"]), draft.epsilon)
        if sigma_floor is not None:  # the controller's σ floor (default 10) set for a comparison without one
            limits["sigma_floor"] = sigma_floor
        policy.write_text(yaml.safe_dump(raw, sort_keys=False))
        approvers = []
        for person, role in PEOPLE.items():
            out = run(f"keygen ({role})", "keygen", "--out", str(keys / f"{role}.pem"))
            public = next(ln.split("public_key:", 1)[1] for ln in out.splitlines() if "public_key:" in ln)
            approvers.append({"name": person, "role": role, "public_key": public.strip().strip('"')})
        (root / "approvers.yaml").write_text(yaml.safe_dump({"approvers": approvers}, sort_keys=False))
        ctl = ["--as", "Carl Controller", "--key", str(keys / "controller.pem"), "--root", str(root)]
        run("approvers commit", "approvers", "commit", *ctl)
        draft_file = draft_spec(work, name, data, SCHEMAS[name], seed, draft)
        proposed = work / "proposed.yaml"
        ada = ["--as", "Ada Analyst", "--key", str(keys / "analyst.pem")]
        out = run("propose --select mst", "propose", "--select", "mst", "--spec", str(draft_file), *ada, "--root",
                  str(root), "--out", str(proposed), "--json")  # fmt: skip
        agreement = json.loads(out)["agreement_sha256"]
        out = run("validate", "validate", "--spec", str(proposed), "--root", str(root), "--json")
        assert json.loads(out)["agreement_sha256"] == agreement, "validate and propose disagree on the agreement"
        approvals = work / "approvals.yaml"
        approvals.write_text(
            yaml.safe_dump(
                {
                    "proposer": {"name": "Ada Analyst", "role": "analyst"},
                    "agreement_approver": {"name": "Carl Controller", "role": "controller"},
                    "release_approver": {"name": "Carl Controller", "role": "controller"},
                },
                sort_keys=False,
            )
        )
        lapse = (dt.date.today() + dt.timedelta(days=30)).isoformat()  # the controller pins agreement, data, lapse
        run("approvals pin", "approvals", "pin", str(approvals), "--spec", str(proposed), "--valid-until", lapse,
            "--root", str(root))  # fmt: skip
        assert yaml.safe_load(approvals.read_text())["agreement_sha256"] == agreement, "pinned another agreement"
        run("approvals sign (analyst)", "approvals", "sign", str(approvals), *ada, "--root", str(root))
        run("approvals sign (controller)", "approvals", "sign", str(approvals), *ctl)
        out = run("release", "release", "--spec", str(proposed), "--approvals", str(approvals), "--root", str(root),
                  "--json")  # fmt: skip
        released = json.loads(out)
        cliques = [c for c in yaml.safe_load(proposed.read_text())["phi"].get("marginals", []) if len(c) > 1]
        pairs = sum(len(c) == 2 for c in cliques)
        figures = score(root / "releases" / released["release_id"] / "synthetic.parquet") if score else {}
        if keep is not None:
            shutil.copytree(work, keep / f"{name}-{seed}", symlinks=True)
    return {
        "steps": [{"command": label, "wall_s": s["wall_s"], "cpu_s": s["cpu_s"]} for label, s in steps],
        "cpu_s": sum(float(s["cpu_s"]) for _, s in steps),  # type: ignore[arg-type]
        "wall_s": sum(float(s["wall_s"]) for _, s in steps),  # type: ignore[arg-type]
        "release_id": released["release_id"],
        "pairs": pairs,
        "triples": sum(len(c) == 3 for c in cliques),
        "cliques": cliques,
        **figures,
    }


def peer_codes(name: str, data: Path, work: Path) -> tuple[Path, Path, int]:
    """The data's codes and domain sizes as the peer reads them (the same encoding sdgov's release uses)."""
    from sdgov.data.schema import load_schema
    from sdgov.engines import load_encoded

    schema = load_schema(SCHEMAS[name])
    real = load_encoded(data, schema)
    attrs = [c for c in real.columns if c not in set(schema.identifiers or [])]
    codes, domain = work / "codes.csv", work / "domain.json"
    real[attrs].to_csv(codes, index=False)
    domain.write_text(json.dumps(schema.domain(attrs)))
    return codes, domain, len(real)


def scorer(name: str, data: Path, columns: list[str] | None, test: Path | None) -> Callable[[Path], dict[str, float]]:
    """Figures of a released synthetic file against the real data (untimed): the average TVD over every pair and
    every triple of the modelled columns, and on Adult with a test file and income modelled, the income accuracy
    of the one classifier trained on the synthetic records (``bench_adult.accuracy``)."""
    from bench_adult import accuracy, read_adult
    from bench_selection import tvd_pairs, tvd_triples

    from sdgov.data.schema import load_schema
    from sdgov.engines import engine, load_encoded

    schema = load_schema(SCHEMAS[name])
    real = read_adult(data, schema) if name == "adult" else load_encoded(data, schema)
    attrs = columns or [c for c in real.columns if c not in set(schema.identifiers or [])]
    sizes = schema.domain(attrs)
    held_out = read_adult(test, schema) if test is not None and "income" in attrs else None

    def score(synthetic: Path) -> dict[str, float]:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "codes.parquet"
            engine().encode_columns(synthetic, schema, attrs, out)
            syn = pd.read_parquet(out)[attrs]
        figures = {"tvd_pairs": tvd_pairs(real[attrs], syn, sizes), "tvd_triples": tvd_triples(real[attrs], syn, sizes)}
        if held_out is not None:
            figures["accuracy"] = accuracy(syn, held_out, [a for a in attrs if a != "income"])
        return figures

    return score


def mbi_peer(python: str, codes: Path, domain: Path, rows: int, work: Path) -> dict[str, object]:
    """mbi 2.0's MST reference in its own venv: one fresh process, CPU of its whole tree."""
    argv = [python, str(PEERS / "mbi_mst.py"), str(codes), str(domain), "1.0", "1e-5", str(rows), str(work / "syn.csv")]
    out = timed(argv, dict(os.environ), work)
    inner = json.loads(str(out["stdout"]).strip().splitlines()[-1])
    return {"wall_s": out["wall_s"], "cpu_s": out["cpu_s"], "inner_cpu_s": inner["cpu_seconds"]}


def adult_like(work: Path) -> Path:
    """Without adult.data: the Adult-like file of the tests (tests/unit/engines/test_ingest.py), written to scratch."""
    sys.path.insert(0, str(REPO))
    from sdgov.data.schema import load_schema
    from tests.fixtures.adult import adult_like as records
    from tests.fixtures.adult import write_adult

    return write_adult(work / "adult.data", records(load_schema(SCHEMAS["adult"]), 32561))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mbi", help="the peers' python with mbi 2.0 (e.g. /tmp/peers-mbi/bin/python); none: no peer")
    ap.add_argument("--census", default=str(CENSUS))
    ap.add_argument("--adult", help="UCI adult.data as distributed (default: the tests' Adult-like file)")
    ap.add_argument("--datasets", default="census,adult")
    ap.add_argument("--no-peer", action="store_true", help="the governed path only (profiling)")
    ap.add_argument("--seeds", type=int, default=1, help="repeats of each arm (median reported)")
    ap.add_argument("--sdgov", default=str(Path(sys.executable).with_name("sdgov")))
    ap.add_argument("--warm-home", action="store_true", help="migrate PREFECT_HOME's database first, untimed")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--profile", help="run each sdgov command under cProfile, writing NAME-SEED-COMMAND.prof here")
    ap.add_argument("--logs", help="keep each sdgov command's stderr here, as NAME-SEED-COMMAND.log")
    ap.add_argument("--keep", help="copy each path's folder (registry, specs, keys, caches) here, as NAME-SEED")
    ap.add_argument("--columns", action="append", default=[], metavar="DATASET=A,B,…",
                    help="model only these columns of a dataset (repeat per dataset)")  # fmt: skip
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument(
        "--selection", type=json.loads, help='the draft\'s privacy.selection, JSON (default {"method": "mst"})'
    )
    ap.add_argument("--generator", type=json.loads, help="the draft's generator block, JSON (default: none)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--score", action="store_true", help="TVD over all pairs and triples of the released file")
    ap.add_argument("--adult-test", help="UCI adult.test: with --score, the income accuracy of the released file")
    ap.add_argument(
        "--sigma-floor",
        type=float,
        help="the controller's policy sigma_floor (default: sdgov init's, 10, which binds at ε = 4 on five columns)",
    )
    args = ap.parse_args()
    subsets = dict(c.split("=", 1) for c in args.columns)
    become_subreaper()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="sdgov-path-peer-") as tmp:
        work = Path(tmp)
        for name in args.datasets.split(","):
            data = Path(args.census) if name == "census" else Path(args.adult) if args.adult else adult_like(work)
            codes, domain, rows = peer_codes(name, data, work)
            columns = subsets[name].split(",") if name in subsets else None
            draft = Draft(columns, args.epsilon, args.delta, args.selection, args.generator)
            test = Path(args.adult_test) if args.adult_test and name == "adult" else None
            score = scorer(name, data, columns, test) if args.score else None
            paths, peers = [], []
            for seed in range(args.first_seed, args.first_seed + args.seeds):  # alternate the arms: load hits both
                paths.append(
                    governed_path(
                        args.sdgov,
                        name,
                        data.resolve(),
                        seed,
                        args.warm_home,
                        Path(args.profile) if args.profile else None,
                        Path(args.logs) if args.logs else None,
                        Path(args.keep) if args.keep else None,
                        draft,
                        score,
                        args.sigma_floor,
                    )
                )
                figures = "".join(f", {k} {paths[-1][k]:.4f}" for k in ("tvd_pairs", "tvd_triples", "accuracy")
                                  if k in paths[-1])  # fmt: skip
                print(f"{name} seed {seed}: governed path {paths[-1]['cpu_s']:.1f} CPU s{figures}", flush=True)
                if args.json:  # a partial table survives an interrupted run
                    Path(args.json).with_suffix(".paths.jsonl").open("a").write(
                        json.dumps({"dataset": name, "seed": seed, **paths[-1]}) + "\n"
                    )
                if args.mbi and not args.no_peer:
                    peers.append(mbi_peer(args.mbi, codes, domain, rows, work))
                    print(f"{name} seed {seed}: mbi MST {peers[-1]['cpu_s']:.1f} CPU s", flush=True)
            path_cpu = statistics.median(float(p["cpu_s"]) for p in paths)  # type: ignore[arg-type]
            peer_cpu = statistics.median(float(p["cpu_s"]) for p in peers) if peers else None  # type: ignore[arg-type]
            results[name] = {"rows": rows, "paths": paths, "peers": peers, "path_cpu_s": path_cpu,
                             "peer_cpu_s": peer_cpu, "ratio": path_cpu / peer_cpu if peer_cpu else None}  # fmt: skip
            print(f"\n{name} ({rows} rows, ε = {args.epsilon}, δ = {args.delta}): CPU s of each command's process tree")
            for s in paths[0]["steps"]:  # type: ignore[union-attr]
                print(f"  {s['command']:30} {s['cpu_s']:7.2f} CPU s {s['wall_s']:7.2f} wall s")
            ratio = f"{path_cpu / peer_cpu:.2f}×" if peer_cpu else "–"
            print(f"  {'whole path':30} {path_cpu:7.2f}   mbi 2.0 MST {peer_cpu or float('nan'):.2f}   ratio {ratio}\n")
    print(f"load average at end: {os.getloadavg()}")
    if args.json:
        meta = {
            "command": sys.argv,
            "load_average_end": os.getloadavg(),
            "machine": platform.platform(),
            "cpus": os.cpu_count(),
            "warm_home": args.warm_home,
            "date": dt.datetime.now(dt.UTC).isoformat(),
        }
        Path(args.json).write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
