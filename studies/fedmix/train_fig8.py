"""Train the journal's Fig. 8 runs (streaming non-IID Fashion-MNIST) side by side, without a notebook.

    python -m studies.fedmix.train_fig8 --device cuda --precision tf32

A GPU machine here has torch but no Jupyter, so this trains exactly the runs the streaming notebook
plans (`streaming_cells`, the same configs and run ids) through the executor, one process a run, and
stops; `python -m fssl_core records` then lists the files to commit, and the notebook, run where
Jupyter is, reads the runs back. Defaults: the paper profile (FedMatch's BN-free ResNet-9, 150 rounds) and the four
methods the journal's claims compare (SL, FedMatch, FedMix-FedLoss, FedMix-FedFreq). On an H200
the four shared the GPU at 0.2 s (SL) to 3.8 s (FedMatch) a round with TF32 convolutions.
"""
from __future__ import annotations

import argparse

from fssl_core.config import DEVICES, ConfigError
from fssl_core.executors import run_all
from fssl_core.papers.fedmix.cells import METHODS, NETWORKS, QUICK_METHODS, SHARED, streaming_cells
from fssl_core.profiles import PROFILES, get_profile
from studies.options import parse_set


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.fedmix.train_fig8", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="paper", choices=list(PROFILES))
    parser.add_argument("--device", default="cuda", choices=list(DEVICES))
    parser.add_argument("--precision", default="fp32", choices=["fp32", "tf32"])
    parser.add_argument("--methods", default=",".join(QUICK_METHODS),
                        help=f"comma-separated, among {', '.join(METHODS)}")
    parser.add_argument("--network", default=SHARED["model"], choices=list(NETWORKS),
                        help="the paper protocol's ResNet-9: the reading (FedMatch's, no BatchNorm) or the BatchNorm "
                             "alternative, whose rows the notebook files under their own setting")
    parser.add_argument("--set", action="append", default=[], metavar="key=value",
                        help="a RunConfig change for every run (an exploratory reading, e.g. fedmix_teacher=received: "
                             "new run ids, rows the notebook does not show)")
    args = parser.parse_args(argv)
    try:
        changes = parse_set(args.set)
    except ConfigError as err:
        parser.error(f"--set: {err}")
    methods = [m for m in args.methods.split(",") if m]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        parser.error(f"--methods {','.join(unknown)}: must be among {', '.join(METHODS)}")
    try:
        cells = streaming_cells(get_profile(args.profile), args.device, methods=methods, precision=args.precision,
                                network=args.network)
    except ConfigError as err:
        parser.error(str(err))
    try:
        configs = list({c.run_id: c for c in (cfg.replace(**changes) for cell in cells for cfg in cell.configs)}.values())
    except ConfigError as err:
        parser.error(f"--set: {err}")
    print(f"[fig8] {len(configs)} run(s) at profile {args.profile} on {args.device} ({args.precision}), side by side: "
          + ", ".join(f"{cfg.algorithm}/{cfg.client_weighting} {cfg.run_id}" for cfg in configs), flush=True)
    results = run_all(configs, workers=len(configs))
    for r in results:
        s = r.summary
        print(f"[fig8] {r.config.run_id} {r.config.algorithm}/{r.config.client_weighting}: {r.status}, final "
              f"{s['accuracy']}%, best {s['best_accuracy']}% (round {s['best_round']}), {s['seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
