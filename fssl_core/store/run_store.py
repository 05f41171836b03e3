"""The run store: one directory per run, named by the hash of its config; a finished run is read
back, an unfinished one resumes from its checkpoint.

A run is trained here, in the calling process (`RunStore.execute` builds the engine's Federation);
which process calls it, and how many side by side, is an executor's business (fssl_core/executors/).
"""
from __future__ import annotations

import json
import os
import platform
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch

from .. import __version__, precision
from ..config import ConfigError, RunConfig
from ..paths import runs_dir
from ..training import Diverged
from .files import CHECKPOINT, CONFIG, ENV, METRICS, RESULT, Damage, DamagedRun, StoreIOError, atomic_write_text, \
    move_aside, read_json, read_rows, run_lock
from .integrity import (canonical_json, check_config, prove_finished, read_checkpoint, save_checkpoint, write_result,
                        write_rows)
from .summary import DIVERGED, OK, describe

if TYPE_CHECKING:
    from ..engine import Federation


@dataclass(eq=False)
class RunResult:
    config: RunConfig
    metrics: list[dict[str, Any]]
    summary: dict[str, Any]

    @property
    def status(self) -> str:
        return self.summary["status"]

    @property
    def accuracy(self) -> float | None:
        return self.summary.get("accuracy")


class RunStore:
    def __init__(self, root: Path | str | None = None):
        # Path("") is ".": an empty --runs or $FSSL_RUNS (an unset variable in a script) would fill the working
        # directory (a kernel's is notebooks/)
        if root is not None and not str(root).strip():
            raise ConfigError(f"run store root {str(root)!r}: empty; give a directory (--runs DIR), or none for "
                              "$FSSL_RUNS or ./runs")
        if root is None and os.environ.get("FSSL_RUNS") == "":
            raise ConfigError("$FSSL_RUNS='': empty; set it to a directory, or unset it for ./runs")
        self.root = Path(root) if root is not None else runs_dir()

    def dir(self, cfg: RunConfig) -> Path:
        return self.root / cfg.run_id

    def load(self, cfg: RunConfig) -> RunResult | None:
        """The finished run of `cfg`; None when it has not finished, or when its files do not prove
        it (named in a DamagedRun warning; `execute` repairs such a run)."""
        try:
            return self._proven(cfg)
        except Damage as err:
            warnings.warn(f"{err}: not served as finished (execute() repairs it)", DamagedRun, stacklevel=2)
            return None

    def _proven(self, cfg: RunConfig) -> RunResult | None:
        """The finished run of `cfg` if its files prove it (integrity.prove_finished); None if there is
        no result.json; else raises Damage naming the first file that disagrees."""
        proven = prove_finished(self.dir(cfg), cfg)
        return None if proven is None else RunResult(cfg, *proven)

    def final_state(self, cfg: RunConfig) -> dict[str, Any]:
        """The server state after the last round of the finished run of `cfg` (its checkpoint)."""
        if self.load(cfg) is None:
            raise FileNotFoundError(f"final_state: run {cfg.run_id} ({describe(cfg)}) has not finished in {self.root}")
        if not (self.dir(cfg) / CHECKPOINT).exists():
            raise FileNotFoundError(
                f"final_state: run {cfg.run_id} ({describe(cfg)}) is stored as records only (no {CHECKPOINT}: "
                f"committed runs carry none); delete {self.dir(cfg)} and run it again to get its final state")
        return read_checkpoint(self.dir(cfg) / CHECKPOINT, cfg, cfg.device)["state"]

    def finished(self, **match: Any) -> list[RunResult]:
        """Every finished run in the store whose config has the given field values; a run whose files
        do not prove it is named in a DamagedRun warning and left out."""
        out = []
        for _, proven in self.survey(**match):
            if isinstance(proven, Damage):
                warnings.warn(f"{proven}: not served as finished", DamagedRun, stacklevel=2)
            else:
                out.append(proven)
        return out

    def survey(self, **match: Any) -> list[tuple[Path, "RunResult | Damage"]]:
        """Every run directory holding a result.json, in name order, with its proven run or the Damage
        that names the first file that does not prove it (a config of another id, a digest mismatch).
        With `match`, only the runs whose config has those field values are proven (a config that
        names another id is listed whatever it holds)."""
        if self.root.exists() and not self.root.is_dir():     # else it would list nothing, unsaid
            raise StoreIOError(f"{self.root}: the run store is a file, not a directory")
        out: list[tuple[Path, RunResult | Damage]] = []
        for result_file in sorted(self.root.glob(f"*/{RESULT}")):
            d = result_file.parent
            try:
                try:
                    cfg = RunConfig.from_dict(read_json(d / CONFIG))
                except ConfigError as err:
                    raise Damage(f"{d / CONFIG}: {err}") from None
                if cfg.run_id != d.name:
                    raise Damage(f"{d / CONFIG}: the config of run {cfg.run_id}, not of this directory (a damaged "
                                 "run, or one of an older computation: a revision bump gave its config a new id)")
                if not all(getattr(cfg, k) == v for k, v in match.items()):
                    continue
                proven = prove_finished(d, cfg)
                out.append((d, RunResult(cfg, *proven) if proven is not None else
                            Damage(f"{d / RESULT}: vanished while the store was read")))
            except Damage as err:
                out.append((d, err))
        return out

    def execute(self, cfg: RunConfig, progress: bool = True,
                after_round: Callable[[int], None] | None = None) -> RunResult:
        """Read back a finished run, else run it (resuming from its checkpoint if any).

        One process at a time checks, repairs or trains a run (files.run_lock): a second
        executor of the same config waits for the first, then reads its result back.
        `after_round(r)` is called once round r is checkpointed (tests use it to interrupt a run).
        CPU runs use one thread: a float reduction split over a different number of threads sums
        in a different order, and a run must give the same numbers whichever executor ran it.
        """
        done = self.load(cfg)
        if done is not None:
            return done
        with run_lock(self.dir(cfg)):       # waits while another process holds the run
            try:
                done, damage = self._proven(cfg), None    # finished by the process we waited for?
            except Damage as err:
                done, damage = None, err
            if done is not None:
                return done
            threads = torch.get_num_threads()
            if cfg.device == "cpu":
                torch.set_num_threads(1)
            try:
                return self._execute(cfg, progress, after_round, damage)
            finally:
                torch.set_num_threads(threads)

    def _execute(self, cfg: RunConfig, progress: bool, after_round: Callable[[int], None] | None,
                 damage: Damage | None) -> RunResult:
        from ..engine import Federation   # deferred: the store is usable without building data
        d = self.dir(cfg)
        fed = Federation.build(cfg)
        start = self._resume_point(cfg, fed, damage)
        state, metrics = start.state, start.rows
        atomic_write_text(d / CONFIG, json.dumps(cfg.to_dict(), indent=2, sort_keys=True))
        if len(metrics) < cfg.rounds:
            atomic_write_text(d / ENV, json.dumps(_environment(cfg, fed.data.digest), indent=2, sort_keys=True))
        if start.saved is None:      # a fresh start: round 0's checkpoint, so a run diverging in round 1 has one
            save_checkpoint(d, cfg, 0, state, metrics)
        status, failure = OK, None
        bar = _progress(cfg, len(metrics) + 1, progress)
        for r in range(len(metrics) + 1, cfg.rounds + 1):
            try:
                state, m = fed.run_round(state, r)
            except Diverged as err:      # `state` may be half-updated: the last checkpoint stays the final one
                status, failure = DIVERGED, {"round": r, "reason": str(err)}
                break
            metrics.append(m)
            write_rows(d, metrics)
            if r % cfg.checkpoint_every == 0 or r == cfg.rounds:
                save_checkpoint(d, cfg, r, state, metrics)
            if bar is not None:
                bar.update(1)
                if "accuracy" in m:
                    bar.set_postfix(acc=f"{m['accuracy']:.2f}")
            if after_round is not None:
                after_round(r)
        if bar is not None:
            bar.close()
        summary = write_result(d, cfg, metrics, status, failure, fed.model_parameters, fed.num_classes)
        return RunResult(cfg, metrics, summary)

    def _resume_point(self, cfg: RunConfig, fed: Federation, damage: Damage | None) -> _Start:
        """Where training (re)starts: after the checkpoint if it proves itself, with metrics.jsonl cut
        to its rows (rows past it are redone, identically); from round 1 without one. Every file that
        disagrees is moved aside and named, with what is wrong, in one warning."""
        d = self.dir(cfg)
        problems = [str(damage)] if damage is not None else []
        aside = [RESULT] if (d / RESULT).exists() else []     # not proven (else we would not be here)
        ckpt = None
        if (d / CHECKPOINT).exists():
            try:
                ckpt = read_checkpoint(d / CHECKPOINT, cfg, fed.device)
            except Damage as err:
                problems.append(str(err))
                aside.append(CHECKPOINT)
                ckpt = None
        rows = list(ckpt["metrics"]) if ckpt else []
        # metrics.jsonl is written before the checkpoint of its round (and round 0's before any row), so
        # it holds at least the checkpoint's rows and, with rows, a checkpoint exists
        if (d / METRICS).exists() or rows:
            try:
                on_disk = read_rows(d / METRICS)
                if len(on_disk) < len(rows):
                    raise Damage(f"{d / METRICS}: {len(on_disk)} rows, {CHECKPOINT} covers {len(rows)}")
                if [canonical_json(r) for r in on_disk[:len(rows)]] != [canonical_json(r) for r in rows]:
                    raise Damage(f"{d / METRICS}: its first {len(rows)} rows differ from those {CHECKPOINT} covers")
                if on_disk and not (d / CHECKPOINT).exists():
                    problems.append(f"{d / CHECKPOINT}: missing, beside {len(on_disk)} rows in {METRICS}")
            except Damage as err:
                problems.append(str(err))
                if (d / METRICS).exists():
                    aside.append(METRICS)
        if (d / CONFIG).exists():
            try:
                check_config(d / CONFIG, cfg)
            except Damage as err:
                problems.append(str(err))
                aside.append(CONFIG)
        if problems:
            n = ckpt["round"] if ckpt else 0
            then = (f"result recomputed from the {n} rows of {CHECKPOINT}" if n == cfg.rounds else
                    f"resuming after round {n} of {CHECKPOINT}" if n else "rerunning from round 1")
            if aside:
                where = move_aside(d, list(dict.fromkeys(aside)))
                then = f"Moved {', '.join(dict.fromkeys(aside))} to {where}; {then}"
            warnings.warn(f"{'; '.join(dict.fromkeys(problems))}. {then[0].upper()}{then[1:]}", DamagedRun, stacklevel=4)
        write_rows(d, rows)
        if ckpt is None:
            return _Start(fed.initial_state(), rows, None)
        return _Start(ckpt["state"], rows, ckpt["round"])


@dataclass
class _Start:
    state: Any
    rows: list[dict]
    saved: int | None            # the round of the checkpoint it starts from; None: a fresh start


def record_files(root: Path | str | None = None) -> list[Path]:
    """The records of every finished run in the store at `root` whose result.json proves itself, each
    run's CONFIG, env.json, METRICS and RESULT: what a batch commits (checkpoints stay out)."""
    store = RunStore(root)
    files = []
    for result in store.finished():
        d = store.dir(result.config)
        files += [d / name for name in (CONFIG, ENV, METRICS, RESULT) if (d / name).exists()]
    return files


def _environment(cfg: RunConfig, data_digest: str | None = None) -> dict:
    """Where the run was trained, and on which data: `data_digest` is the content digest of the data set's
    files as verified at load (data.datasets.data_digest; None for the synthetic set). Informative, like the
    rest of env.json: the run id does not hash the data, which load_dataset verifies against the official
    files before any run is trained on them."""
    env = {
        "fssl_core": __version__, "torch": torch.__version__, "python": sys.version.split()[0],
        "platform": platform.platform(), "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
    }
    if data_digest is not None:
        env["data"] = {cfg.dataset: data_digest}
    env["precision"] = {"policy": cfg.precision, **precision.flags(torch.device(cfg.device))}
    return env


def _progress(cfg: RunConfig, first: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm
    return tqdm(total=cfg.rounds, initial=first - 1, desc=f"{cfg.algorithm}/{cfg.dataset}", unit="round",
                leave=False, file=sys.stderr)
