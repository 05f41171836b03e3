"""Command line: `python -m fssl_core {run,records,verify,partition,bench,gpu-check,fingerprint,reproduce,site} ...`.

`key=value` pairs are RunConfig fields (see fssl_core/run_config.py); bad keys or values exit with
the message naming the key, the value and what is allowed (status 2), as do a data set that is not
on this machine, device=cuda where there is no CUDA, and a split the data cannot give.

Exit status: 0 done; 1 a reproduction's runs failed or a check did (gpu-check, fingerprint); 2 a refused
input; 3 (`run`) a run that diverged or ended at chance; 4 an I/O failure: a file or directory that could not
be written or read (a read-only or full disk, --runs or a run's directory that is a file), named with its
cause; the files already there are left as they were, and the same command resumes once the cause is gone;
130 interrupted.
"""
from __future__ import annotations

import argparse
import builtins
import importlib.machinery
import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING

from .config import ConfigError, key_value_pairs

if TYPE_CHECKING:
    from .run_config import RunConfig

from .executors import EXECUTORS, RunsFailed
from .profiles import PROFILES


# `run`'s exit status for a run that finished but is no result: it diverged (a NaN or infinite loss) or
# ended at chance (store/summary.py AT_CHANCE_FACTOR); a script tells them from a refused config (2).
NOT_A_RESULT = 3
# the exit status of an I/O failure (store.StoreIOError, or an OSError naming its file): one line with the path and
# the cause, so that a script tells a full or read-only disk from a refused input (2) or a failed run (1, 3)
IO_FAILURE = 4

# Per command: each command (cmd_*, its helpers, main's error handling) imports its own modules inside its function,
# so that `--help` and the other commands load none of them (torch with most: tests/test_cli.py). Every import
# inside a function of this module is of that kind and says "per command".


def cmd_run(args) -> int:
    from .executors import sigterm_as_interrupt      # per command
    from .store import OK, RunStore, describe
    from .engine.trainer import train
    from .run_config import RunConfig
    cfg = RunConfig.from_strings(key_value_pairs(args.pairs))
    tracker = tracker_of(args)
    try:
        with sigterm_as_interrupt():
            result = train(cfg, RunStore(args.runs), progress=not args.quiet, tracker=tracker)
    except KeyboardInterrupt:
        # as reproduce does: the run's checkpoint holds its last finished round, and the same command resumes
        print(f"\n[run] interrupted: {describe(cfg)} resumes from its last checkpoint when the same command is "
              "run again", file=sys.stderr)
        raise SystemExit(130)
    print(json.dumps(result.summary, sort_keys=True) if args.json else run_line(describe(cfg), result.summary))
    return 0 if result.summary["status"] == OK else NOT_A_RESULT


def tracker_of(args):
    """The tracker `--track` asks for (integrations/mlflow_track.py), or None. Not a RunConfig field: tracking
    changes nothing a run computes, so it is no part of the run's identity or config.json."""
    if args.track is None:
        options = (("--track-uri", args.track_uri), ("--track-experiment", args.track_experiment))
        given = [flag for flag, value in options if value is not None]
        if given:
            raise ConfigError(f"{', '.join(given)}: given without --track mlflow, which they configure")
        return None
    from .integrations.mlflow_track import MlflowTracker      # per command: only with --track
    return MlflowTracker(args.track_uri or "sqlite:///mlflow.db", args.track_experiment or "fssl")


def add_track_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--track", choices=("mlflow",), default=None,
                        help="log each run to MLflow while it trains: every round as it ends, the summary, tags and "
                             "params (fssl_core/integrations/mlflow_track.py; needs pip install -e '.[mlflow]')")
    parser.add_argument("--track-uri", default=None, metavar="URI",
                        help="with --track mlflow: the tracking URI (default sqlite:///mlflow.db, the file `mlflow ui` "
                             "opens in this folder)")
    parser.add_argument("--track-experiment", default=None, metavar="NAME",
                        help="with --track mlflow: the MLflow experiment (default fssl)")


def run_line(what: str, s: dict) -> str:
    """One line a reader takes in: the run, its final and best accuracy, cost, status and directory."""
    if s["accuracy"] is None:
        scores = "no accuracy"
    else:
        scores = f"accuracy {s['accuracy']:.2f}% (best {s['best_accuracy']:.2f}% at round {s['best_round']})"
    traffic = (s["upload_bytes"] + s["download_bytes"]) / 1e6
    # no round finished (a run that diverged in round 1): no time per round to give
    speed = "" if s["seconds_per_round"] is None else f" {s['seconds_per_round']:.2f} s/round,"
    return (f"{what}: {scores}, {s['rounds']} rounds,{speed} "
            f"{traffic:.1f} MB exchanged, status {s['status']} -> {s['run_dir']}")


def cmd_records(args) -> None:
    from .store import record_files      # per command
    print("\n".join(str(f) for f in record_files(args.runs)))


def cmd_verify(args) -> int:
    from .job.verify import verify      # per command
    if args.sample is not None and args.sample < 0:
        raise ConfigError(f"verify: --sample {args.sample}: must be 0 or more runs")
    if args.minutes is not None and not 0 <= args.minutes < 10_000:
        raise ConfigError(f"verify: --minutes {args.minutes:g}: must be within [0, 10000) minutes")
    if args.sample is not None and args.minutes is not None:
        raise ConfigError("verify: --sample and --minutes: give one (a count, or a time budget the count follows)")
    from .store import RunStore      # per command
    done = verify(sample=1 if args.sample is None else args.sample, seed=args.seed, store=RunStore(args.runs),
                  minutes=args.minutes)
    for line in [*(f"published rows name unproven runs: {v}" for v in done.unproven.values()), *done.mismatches]:
        print(f"error: {line}", file=sys.stderr)
    return 0 if done.ok else 1


def cmd_partition(args) -> None:
    from .data.datasets import load_dataset      # per command
    from .engine.federation import Federation
    cfg = partition_config(key_value_pairs(args.pairs))
    data = load_dataset(cfg.dataset)
    counts = Federation.partition_of(cfg, data).counts(data.train_y.cpu().numpy(), data.num_classes)
    print(json.dumps(counts, sort_keys=True) if args.json else partition_table(cfg, counts))


def partition_config(pairs: dict[str, str]) -> RunConfig:
    """The config `partition` splits by. It trains no algorithm, so where none is given it takes the first
    registered one that reads labels where the partition puts them (RunConfig refuses FedAvg, the
    default, on a labels-at-server partition); the split does not depend on it."""
    from .run_config import RunConfig      # per command
    if "algorithm" not in pairs:
        from .algorithms import ALGORITHMS      # per command
        from .data.partition import PARTITIONS
        partition = PARTITIONS.get(pairs.get("partition", RunConfig.partition))
        fitting = [name for name, cls in ALGORITHMS.items() if partition and partition.labels_at in cls.labels_at]
        pairs = {**pairs, "algorithm": fitting[0] if fitting else RunConfig.algorithm}
    return RunConfig.from_strings(pairs)


# above this many classes a party's per-class counts are summarised, not listed (CIFAR-100)
MAX_CLASS_COLUMNS = 10


def partition_table(cfg: RunConfig, counts: dict) -> str:
    """`Partition.counts` as a fixed-width table: one row per party (the server first when it holds
    labels, then every client), its labeled and unlabeled counts, then per class "labeled/unlabeled"
    ("-" where the party holds none of the class), or for many classes how many classes the party
    holds and its three largest."""
    import pandas as pd      # per command: pandas for `partition` alone
    from .data.partition import PARTITIONS
    reads = PARTITIONS[cfg.partition].reads
    parties = ([("server", counts["server"]["labeled"], None)] if sum(counts["server"]["labeled"].values()) else [])
    parties += [(str(k), c["labeled"], c["unlabeled"]) for k, c in enumerate(counts["clients"])]
    classes = list(counts["server"]["labeled"])
    rows = {}
    for name, labeled, unlabeled in parties:
        unlabeled = unlabeled or dict.fromkeys(classes, 0)
        row = {"labeled": sum(labeled.values()), "unlabeled": sum(unlabeled.values())}
        if len(classes) <= MAX_CLASS_COLUMNS:
            row.update({c: f"{labeled[c]}/{unlabeled[c]}" if labeled[c] or unlabeled[c] else "-" for c in classes})
        else:
            row["labeled classes"] = sum(v > 0 for v in labeled.values())
            row["unlabeled classes"] = sum(v > 0 for v in unlabeled.values())
            largest = sorted(classes, key=lambda c: -(labeled[c] + unlabeled[c]))[:3]
            row["largest (class:labeled/unlabeled)"] = " ".join(f"{c}:{labeled[c]}/{unlabeled[c]}" for c in largest)
        rows[name] = row
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("party").reset_index()
    # γ, or at the server the count N_s that takes its place (Federation.partition_of); the partition's other
    # arguments where they differ from RunConfig's defaults
    size = (f"server_labeled={cfg.server_labeled}" if cfg.server_labeled > 0 and "server_labeled" in reads
            else f"γ={cfg.labeled_ratio}")
    default = type(cfg)()
    others = [f"{field}={getattr(cfg, field)}" for field in reads
              if field not in ("labeled_ratio", "server_labeled") and getattr(cfg, field) != getattr(default, field)]
    settings = " ".join([size] + others)
    labeled, unlabeled = int(table["labeled"].sum()), int(table["unlabeled"].sum())
    at_server = int(table.loc[table["party"] == "server", "labeled"].sum())
    where = (f"({at_server} at the server, {labeled - at_server} at the clients)" if 0 < at_server < labeled
             else "at the server" if at_server else "at the clients")
    head = (f"partition={cfg.partition} dataset={cfg.dataset} clients={cfg.clients} {settings} seed={cfg.seed}\n"
            f"{labeled + unlabeled} samples: {labeled} labeled {where}, {unlabeled} unlabeled; "
            + ("per class: labeled/unlabeled" if len(classes) <= MAX_CLASS_COLUMNS
               else f"{len(classes)} classes, summarised"))
    return head + "\n" + table.to_string(index=False)


def cmd_bench(args) -> None:
    from .perf.bench import main as bench_main      # per command
    bench_main(key_value_pairs(args.pairs))


def cmd_gpu_check(args) -> int:
    from .perf.gpu_check import main as gpu_check_main      # per command
    return gpu_check_main(args.pairs)


def cmd_fingerprint(args) -> None:
    from .perf.fingerprint import main as fingerprint_main      # per command
    raise SystemExit(fingerprint_main(out=args.out, against=args.against,
                                      cases=args.cases.split(",") if args.cases else None))


def cmd_reproduce(args) -> None:
    from .report.publish import ValueMoved      # per command
    from .job.reproduce import parse_parameters, reproduce
    try:
        if args.until_decided:
            if args.param or args.only or args.profile:
                raise ConfigError("--until-decided: takes no --param, --only or --profile (the stopping rule fixes its "
                                  "cells, seeds and protocol: papers/fedsiam/stopping.py)")
            from .job.preflight import check_environment      # per command
            from .job.until_decided import until_decided
            check_environment()
            until_decided(dry_run=args.dry_run, device=args.device)
            return
        reproduce(profile=args.profile, only=args.only, device=args.device, parameters=parse_parameters(args.param),
                  executor=args.executor, gpus_per_run=args.gpus_per_run, dry_run=args.dry_run,
                  replace_figures=args.replace_figures, train_only=args.train_only, replace=args.replace,
                  tracker=tracker_of(args), from_records=args.from_records)
    except (RunsFailed, ValueMoved) as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(1)
    except KeyboardInterrupt:
        print("\n[reproduce] interrupted: every worker stopped; run the same command again to resume", file=sys.stderr)
        raise SystemExit(130)


DEFERRED = ("torch", "torchvision")
_IMPORT = builtins.__import__       # Python's own, back in place once torch runs


def defer_torch() -> None:
    """From here on in this process, torch and torchvision run only once an attribute of theirs is read. An import of
    one of their modules (`import torch`, `import torch.nn.functional as F`, `from torch import nn`) binds a stand-in;
    the first attribute read from one runs the real import and is answered by it. For the commands that only plan
    (`reproduce --dry-run`): the registries that build a plan's configs import torch at their top and read none of it
    as they are imported (tests/test_cli.py holds a plan to that), which saves the seconds torch takes to import.

    Why stand-ins bound by the import statement and kept out of sys.modules, as Mercurial's demandimport does:
    importlib.util.LazyLoader's module runs as soon as it is imported a second time (the import system reads its
    `__spec__`, CPython gh-127036), and a lazy module in sys.modules runs as soon as a library asks whether a value is
    one of its tensors (scipy's and matplotlib's array checks read sys.modules["torch"].Tensor). Function-level
    imports instead would be one in each of about a hundred functions of the algorithms, the learning pieces and the
    data; declaring an algorithm's settings apart from its loss would split each method's file. What a module on a
    plan's path keeps to: no name of torch's other than a module is read at its top (`from torch import Tensor` under
    TYPE_CHECKING; no torch base class, decorator or constant there), since each would run torch.
    Only in the command line's own process (`main()` given no argv): nothing that trains, and no test process, runs
    under it; a spawned worker imports as usual; a torch already imported is left as it is."""
    if builtins.__import__ is _IMPORT and not any(name in sys.modules for name in DEFERRED):
        builtins.__import__ = _deferring_import


class _Deferred(types.ModuleType):
    """A stand-in for a module of torch or torchvision: its submodules imported so far are set on it; any other
    attribute runs the real import (_run) and is read from the real module."""

    def __getattr__(self, name: str):
        return getattr(_run(self.__name__), name)


_STAND_INS: dict[str, _Deferred] = {}
_LOCATIONS: dict[str, list[str]] = {}       # a deferred package's folders, where its submodules are looked for


def _stand_in(name: str) -> _Deferred | None:
    """The stand-in for module `name` (its parent's too), None where no file of it is found: a module that does
    not exist, or one a compiled module registers as it runs (torch._C._functorch), is imported for real."""
    if name not in _STAND_INS:
        parent, _, child = name.rpartition(".")
        if parent and _stand_in(parent) is None:
            return None
        spec = (importlib.machinery.PathFinder.find_spec(name, _LOCATIONS.get(parent, [])) if parent
                else importlib.util.find_spec(name))
        if spec is None:
            return None
        _LOCATIONS[name] = list(spec.submodule_search_locations or [])
        _STAND_INS[name] = _Deferred(name)
        if parent:
            vars(_STAND_INS[parent])[child] = _STAND_INS[name]
    return _STAND_INS[name]


def _deferring_import(name, globals=None, locals=None, fromlist=(), level=0):
    top = name.partition(".")[0]
    if level or top not in DEFERRED or top in sys.modules:
        return _IMPORT(name, globals, locals, fromlist, level)
    if _stand_in(name) is None:      # imported for real, so found or refused as without the deferral
        _end()
        return _IMPORT(name, globals, locals, fromlist, level)
    for attribute in fromlist or ():
        _stand_in(f"{name}.{attribute}")       # `from torch import nn`: a submodule, deferred too; other names run it
    return _STAND_INS[name] if fromlist else _STAND_INS[top]


def _run(name: str) -> types.ModuleType:
    """Module `name`, imported for real; the deferral ends."""
    _end()
    _IMPORT(name)           # as an import statement does (importlib.import_module would hide it from -X importtime)
    return sys.modules[name]


def _end() -> None:
    """Python's own import back, for good: the stand-ins bound so far hand every attribute on to the real modules."""
    if builtins.__import__ is _deferring_import:
        builtins.__import__ = _IMPORT


def cmd_export(args) -> None:
    from .integrations.mlflow_export import export      # per command
    report = export(runs=args.runs, uri=args.uri, experiment=args.experiment)
    print(report.line())


def cmd_site(args) -> None:
    from .report.site import build_site      # per command: nbconvert loads for this command alone
    index, pages = build_site(notebooks=Path(args.notebooks) if args.notebooks else None,
                              out=Path(args.out) if args.out else None)
    print(f"[site] {len(pages)} notebook page(s) and their index -> {index}")


def main(argv: list[str] | None = None) -> int:
    own_process = argv is None          # the command line's own process (__main__), not a caller's
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["flower"]:          # its own parser: flwr run's arguments, passed on as Flower reads them
        from .integrations.flower_submit import main as flower_main      # per command
        return flower_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m fssl_core", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one configuration (or read it back from the run store); exit status 3 "
                                     "when it diverged or ended at chance, 2 for a refused config, 4 when the store "
                                     "cannot be written (read-only, full, a file)")
    run.add_argument("pairs", nargs="*", metavar="key=value")
    run.add_argument("--runs", default=None, help="run store directory (default: $FSSL_RUNS or ./runs)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--json", action="store_true", help="print the run's summary as one line of JSON (for scripts)")
    add_track_options(run)
    run.set_defaults(func=cmd_run)
    records = sub.add_parser(
        "records", help="list the records of every finished run (no checkpoints), one path a line: what a batch "
                        "commits so its runs outlive the machine, e.g. git add $(python -m fssl_core records)")
    records.add_argument("--runs", default=None, help="run store directory (default: $FSSL_RUNS or ./runs)")
    records.set_defaults(func=cmd_records)
    ver = sub.add_parser(
        "verify", help="prove every record, retrain a random sample of the paper-protocol runs the published rows "
                       "name and compare each with its record (every metric, bit for bit), and say what the published "
                       "claims answer; exit 1 on a mismatch or an unproven run (fssl_core/job/verify.py)")
    ver.add_argument("--sample", type=int, default=None, help="runs to retrain (default 1; 0: prove and answer only)")
    ver.add_argument("--minutes", type=float, default=None,
                     help="instead of --sample: retrain as many drawn runs as their recorded training times fit in "
                          "this budget, revised by this machine's pace as they go (make reproduce: 10)")
    ver.add_argument("--seed", type=int, default=0, help="the seed of the sample's draw (default 0)")
    ver.add_argument("--runs", default=None, help="run store directory (default: $FSSL_RUNS or ./runs)")
    ver.set_defaults(func=cmd_verify)
    part = sub.add_parser("partition", help="print a partition's labeled and unlabeled counts per party and class")
    part.add_argument("pairs", nargs="*", metavar="key=value")
    part.add_argument("--json", action="store_true",
                      help="print Partition.counts as one line of JSON instead of the table (for scripts)")
    part.set_defaults(func=cmd_partition)
    bench = sub.add_parser(
        "bench", help="seconds per round: the papers' DataLoader loop vs the sequential vs the cohort trainer",
        description="By default a quick look (mnist_fedavg and mnist_fedsiam_d, one timed round each: about 2½ min "
                    "on CPU); cases=all runs every case (rounds=3; tens of minutes or more on CPU, at most 3 min on "
                    "CUDA, where each round is timed over its first steps and scaled); cases=a,b picks. Options: "
                    "device=cpu|cuda, cases=..., rounds=N, table=yes (every figure, as a table), readme=yes. Each case "
                    "is printed when it finishes, in one short line (table=yes: its table row). "
                    "See fssl_core/perf/bench.py.")
    bench.add_argument("pairs", nargs="*", metavar="key=value")
    bench.set_defaults(func=cmd_bench)
    gpu = sub.add_parser(
        "gpu-check", help="a bounded check on a GPU: environment, cohort vs sequential, kill -9 and resume, bench, "
                          "runs per hour at rising concurrency; a report written after every row",
        description="Options: device=cuda|cpu (default cuda), size=full|tiny (default full on cuda, tiny on cpu), "
                    "out=DIR (default ./gpu-check), budget=SECONDS (default 360, in all, split over the steps). "
                    "Exit status 1 when a check failed. See fssl_core/perf/gpu_check.py.")
    gpu.add_argument("pairs", nargs="*", metavar="key=value")
    gpu.set_defaults(func=cmd_gpu_check)
    fp = sub.add_parser(
        "fingerprint", help="hash what short cohort runs compute: before and after a speed change, on one machine, "
                            "it says whether the change kept every float (see fssl_core/perf/fingerprint.py)")
    fp.add_argument("--out", default=None, help="write the digests to this JSON file")
    fp.add_argument("--against", default=None, help="compare with digests written earlier by --out (exit 1 if any differs)")
    fp.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    fp.set_defaults(func=cmd_fingerprint)
    sub.add_parser("flower", add_help=False,
                   help="flwr run, then wait for the run and exit as `run` does (0 done, 2 refused, 3 diverged or at "
                        "chance, 1 failed, 130 stopped): python -m fssl_core flower [APP] [SUPERLINK] --run-config "
                        "\"...\" (fssl_core/integrations/flower_submit.py; --help for its options)")
    exp = sub.add_parser(
        "export", help="export the store's finished runs to a tracking tool: `export mlflow` logs each proven run as "
                       "an MLflow run (the settings it reads as params, per-round metrics by round, its summary, "
                       "result.json and env.json as artifacts), as `run --track mlflow` does while training; "
                       "idempotent; needs pip install -e '.[mlflow]'")
    exp.add_argument("target", choices=("mlflow",))
    exp.add_argument("--runs", default=None, help="run store directory (default: $FSSL_RUNS or ./runs)")
    exp.add_argument("--uri", default="sqlite:///mlflow.db",
                     help="MLflow tracking URI (default sqlite:///mlflow.db, the file `mlflow ui` opens in this folder)")
    exp.add_argument("--experiment", default="fssl", help="MLflow experiment name (default fssl)")
    exp.set_defaults(func=cmd_export)
    rep = sub.add_parser("reproduce", help="plan and train the notebooks' runs, execute the notebooks with papermill, "
                                           "write the report")
    rep.add_argument("--profile", default=None, choices=tuple(PROFILES),
                     help="default: $FSSL_PROFILE, else headline (the flag wins over the variable). headline: each "
                          "paper's headline cells; quick: every cell a CPU affords at a reduced protocol; paper: the "
                          "papers' protocols; smoke: wiring only. --dry-run prints a profile's estimated time, from "
                          "the model the progress bar's ETA uses")
    rep.add_argument("--only", default=None, help="glob over notebook names, e.g. 'fedsiam_*'")
    rep.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    rep.add_argument("--param", action="append", default=[], metavar="name=value",
                     help="override a notebook parameter (JSON value, else a string), e.g. 'labeled_ratios=[0.1]' (quoted: a shell globs brackets)")
    rep.add_argument("--executor", default=None, choices=tuple(EXECUTORS),
                     help="local: this machine's processes (default, or $FSSL_EXECUTOR); ray: one Ray task per run, on "
                          "the cluster at $RAY_ADDRESS, else a local Ray (needs pip install -e '.[ray]')")
    rep.add_argument("--gpus-per-run", type=float, default=None, metavar="G",
                     help="with --executor ray and --device cuda: each run's share of a GPU (default 1; 0.25 puts "
                          "four runs on a GPU)")
    rep.add_argument("--dry-run", action="store_true",
                     help="print the plan (runs to train and to read back, the estimated time) and stop: nothing is "
                          "trained, executed or written")
    rep.add_argument("--train-only", action="store_true",
                     help="train the plan's runs and stop: no notebook is executed and nothing is published (a "
                          "batch run in the background; a later reproduce reads the runs back)")
    rep.add_argument("--replace-figures", action="store_true",
                     help="with --param: this slice's figures replace the published ones (by default they stay, "
                          "since a slice may draw part of a figure); for a slice that is the whole figure")
    rep.add_argument("--replace", action="store_true",
                     help="the notebooks' results replace the published rows: a row averaged over more runs than "
                          "this run measured, and (without --param) a measured row outside this run's scope, are "
                          "dropped (named first). By default a republish drops no measured row and names what it kept")
    rep.add_argument("--from-records", action="store_true",
                     help="train nothing: rebuild the notebooks, tables, claims and figures from the committed run "
                          "records (a cell missing a record publishes no value); fails naming the row, writing "
                          "nothing, where the rebuild would change a published value at the same runs (a row the "
                          "records now hold more runs of is updated and named)")
    rep.add_argument("--until-decided", action="store_true",
                     help="FedSiam's undecided claims under their stopping rule (papers/fedsiam/stopping.py): train only "
                          "the runs each claim's next look needs, stop each at its boundary; with --dry-run, say where "
                          "each stands and what its next look needs")
    add_track_options(rep)
    rep.set_defaults(func=cmd_reproduce)
    site = sub.add_parser(
        "site", help="build a static site of the executed notebooks (nothing trained or executed): one HTML page per "
                     "notebook under results/notebooks/ (its folders too), figures embedded, and an index.html linking "
                     "each under its title; written whole or not at all (fssl_core/report/site.py)")
    site.add_argument("--out", default=None, metavar="DIR",
                      help="where the site goes (default build/site in the project root); an existing DIR is replaced "
                           "only if this command built it, or it is empty")
    site.add_argument("--notebooks", default=None, metavar="DIR",
                      help="the executed notebooks to convert (default results/notebooks in the project root; the "
                           "headline profile's: results/headline/notebooks)")
    site.set_defaults(func=cmd_site)
    args = parser.parse_args(argv)
    if own_process and getattr(args, "dry_run", False):
        defer_torch()
    from .data.datasets import DatasetUnavailable      # per command: after parsing, which ends a --help
    from .data.partition import PartitionError
    from .store import StoreIOError
    try:
        status = args.func(args)
    except (ConfigError, PartitionError, DatasetUnavailable, *_loaded_errors()) as err:
        # one line each; DatasetUnavailable's first line says which data set is missing and where it was
        # looked for, the lines after it which files to put there and how to get them
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (StoreIOError, OSError) as err:
        # the store names the path and the cause; an OSError from elsewhere (the data's files) names its file
        named = isinstance(err, OSError) and err.filename and err.strerror
        print(f"error: {f'{err.filename}: {err.strerror}' if named else err}", file=sys.stderr)
        return IO_FAILURE
    return status or 0


def _loaded_errors() -> tuple[type[Exception], ...]:
    """engine.DeviceUnavailable where the engine was imported (only what trains imports it, and an exception of a
    module never imported cannot have been raised): a plan's error handling imports no engine, nor torch with it."""
    federation = sys.modules.get("fssl_core.engine.federation")
    return () if federation is None else (federation.DeviceUnavailable,)
