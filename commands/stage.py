"""``sdgov stage measure|generate|utility``: the stages as plain commands, for ``dvc repro``."""

from __future__ import annotations

import argparse

from sdgov.commands._common import Parents, command, emit, site_of


def cmd_stage(args: argparse.Namespace) -> int:
    """The stages as plain commands, for ``dvc repro`` (:mod:`sdgov.flows.dvc_stages`): they call what the flow runs.
    ``measure`` exports the noisy marginals the release flow drew — it never draws noise; exit 0."""
    from sdgov.flows import dvc_stages

    if args.which == "measure":
        mset, out, sha = dvc_stages.export_psi(site_of(args), args.spec, args.out)
        emit(
            args,
            {"measurements": str(out), "statistics": [m.statistic for m in mset.measurements]},
            f"exported the noisy marginals drawn for agreement {sha[:12]}… → {out}",
        )
        return 0
    if args.which == "generate":
        generated = dvc_stages.generate_from_psi(args.spec, args.measurements, args.out)
        emit(
            args,
            {"synthetic": generated.synthetic.path, "sha256": generated.synthetic.sha256},
            f"wrote {generated.rows} rows to {generated.synthetic.path}",
        )
        return 0
    ref = dvc_stages.utility_of(args.spec, args.synthetic, args.out)
    emit(args, {"utility": ref.path, "sha256": ref.sha256}, f"wrote {ref.path}")
    return 0


HELP = (
    "run one stage outside the flow (used by dvc.yaml); 'measure' exports the noisy "
    "marginals the release flow drew — it never draws noise"
)


def add_parser(subparsers: argparse._SubParsersAction, parents: Parents) -> None:
    """Register ``stage measure|generate|utility`` (the commands dvc.yaml runs)."""
    s = command(subparsers, parents, "stage", cmd_stage, HELP, [parents.spec, parents.root])
    s.add_argument("which", choices=["measure", "generate", "utility"])
    s.add_argument("--measurements", help="generate: the noisy-marginal file")
    s.add_argument("--synthetic", help="utility: the synthetic Parquet file")
    s.add_argument("--out", required=True, help="measure: file; generate: directory; utility: file")
