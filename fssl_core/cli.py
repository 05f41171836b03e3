"""Command line: `python -m fssl_core {run,partition,bench,reproduce} key=value ...`.

`key=value` pairs are RunConfig fields (see fssl_core/config.py); bad keys or values exit with
the message naming the key, the value and what is allowed.
"""
from __future__ import annotations

import argparse
import json
import sys

from .config import ConfigError, RunConfig
from .profiles import PROFILES


def _pairs(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"argument {item!r}: expected key=value with a RunConfig field as key")
        pairs[key] = value
    return pairs


def cmd_run(args) -> None:
    from .runs import RunStore
    cfg = RunConfig.from_strings(_pairs(args.pairs))
    result = RunStore(args.runs).execute(cfg, progress=not args.quiet)
    print(json.dumps(result.summary, sort_keys=True))


def cmd_partition(args) -> None:
    from .data.datasets import load_dataset
    from .engine import Federation
    cfg = RunConfig.from_strings(_pairs(args.pairs))
    data = load_dataset(cfg.dataset)
    partition = Federation.partition_of(cfg, data)
    print(json.dumps(partition.counts(data.train_y.numpy(), data.num_classes), sort_keys=True))


def cmd_bench(args) -> None:
    from .bench import main as bench_main
    bench_main(_pairs(args.pairs))


def cmd_reproduce(args) -> None:
    from .reproduce import parse_parameters, reproduce
    try:
        reproduce(profile=args.profile, only=args.only, device=args.device, parameters=parse_parameters(args.param))
    except KeyboardInterrupt:
        print("\n[reproduce] interrupted: every worker stopped; run the same command again to resume", file=sys.stderr)
        raise SystemExit(130)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fssl_core", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one configuration (or read it back from the run store)")
    run.add_argument("pairs", nargs="*", metavar="key=value")
    run.add_argument("--runs", default=None, help="run store directory (default: $FSSL_RUNS or ./runs)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(func=cmd_run)
    part = sub.add_parser("partition", help="print label counts per party of a partition as JSON")
    part.add_argument("pairs", nargs="*", metavar="key=value")
    part.set_defaults(func=cmd_partition)
    bench = sub.add_parser("bench", help="seconds per round of FedAvg on the papers' CNNs, per device")
    bench.add_argument("pairs", nargs="*", metavar="key=value")
    bench.set_defaults(func=cmd_bench)
    rep = sub.add_parser("reproduce", help="plan and train the notebooks' runs, execute the notebooks with papermill, "
                                           "write the report")
    rep.add_argument("--profile", default="headline", choices=tuple(PROFILES),
                     help="headline (default): each paper's headline cells, ~20 min on a 2-core CPU; quick: every "
                          "cell a CPU affords at a reduced protocol; paper: the papers' protocols; smoke: wiring only")
    rep.add_argument("--only", default=None, help="glob over notebook names, e.g. 'fedsiam_*'")
    rep.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    rep.add_argument("--param", action="append", default=[], metavar="name=value",
                     help="override a notebook parameter (JSON value, else a string), e.g. labeled_ratios=[0.1]")
    rep.set_defaults(func=cmd_reproduce)
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
