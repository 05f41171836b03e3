"""The run store: one directory per run, named by the hash of its config; a finished run is read
back, an unfinished one resumes from its checkpoint.

The store persists and proves; it trains nothing. A trainer (fssl_core/engine/trainer.py) claims a run
(`RunStore.claim`), gets its `RunRecorder`, and reports each round to it; which process trains, and
how many runs side by side, is an executor's business (fssl_core/executors/).
"""
from __future__ import annotations

import json
import os
import platform
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch

from .. import __version__
from ..learning import precision
from ..config import ConfigError
from ..run_config import RunConfig
from ..paths import runs_dir
from .files import CHECKPOINT, CONFIG, ENV, METRICS, RESULT, Damage, DamagedRun, StoreIOError, atomic_write_text, \
    move_aside, read_json, read_rows, run_lock
from .integrity import (canonical_json, check_config, env_sealed, prove_finished, read_checkpoint, save_checkpoint,
                        write_result, write_rows)
from .summary import DIVERGED, OK, describe


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

    def load(self, cfg: RunConfig, open_checkpoint: bool = True) -> RunResult | None:
        """The finished run of `cfg`; None when it has not finished, or when its files do not prove
        it (named in a DamagedRun warning; `execute` repairs such a run). `open_checkpoint`: as
        integrity.prove_finished's (False for a plan that serves nothing)."""
        try:
            return self._proven(cfg, open_checkpoint)
        except Damage as err:
            warnings.warn(f"{err}: not served as finished (trainer.train repairs it)", DamagedRun, stacklevel=2)
            return None

    def _proven(self, cfg: RunConfig, open_checkpoint: bool = True) -> RunResult | None:
        """The finished run of `cfg` if its files prove it (integrity.prove_finished); None if there is
        no result.json; else raises Damage naming the first file that disagrees."""
        proven = prove_finished(self.dir(cfg), cfg, open_checkpoint)
        return None if proven is None else RunResult(cfg, *proven)

    def has_final_state(self, cfg: RunConfig) -> bool:
        """Whether `final_state` can answer: the run finished and its checkpoint is here (committed runs carry none)."""
        return self.load(cfg) is not None and (self.dir(cfg) / CHECKPOINT).exists()

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

    def recorded_paces(self) -> list[tuple[RunConfig, float]]:
        """(config, seconds per round) of every run whose result.json records a pace, unproven: a plan's time
        estimate reads this machine's speed, never a result, so it skips the proof (which reads every checkpoint:
        seconds on a store of hundreds of runs); a run whose files do not parse is left out."""
        out = []
        for result_file in sorted(self.root.glob(f"*/{RESULT}")):
            try:
                pace = read_json(result_file).get("seconds_per_round")
                if pace:
                    out.append((RunConfig.from_dict(read_json(result_file.parent / CONFIG)), float(pace)))
            except (Damage, ConfigError, OSError, ValueError, TypeError):
                continue
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
                if d.is_symlink():
                    raise Damage(f"{d}: a symbolic link where a run's directory belongs (the store follows no link)")
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

    @contextmanager
    def claim(self, cfg: RunConfig) -> Iterator["RunResult | RunRecorder"]:
        """The finished run of `cfg`, read back; else, holding the run's lock, its recorder for a trainer
        (fssl_core/engine/trainer.py) to train it with.

        One process at a time checks, repairs or trains a run (files.run_lock): a second claim of the
        same config waits for the first, then reads its result back. Claims of several runs at once take
        their locks in run-id order (the trainer's batches), so two such claims never wait on each other."""
        done = self.load(cfg)
        if done is not None:
            yield done
            return
        with run_lock(self.dir(cfg)):       # waits while another process holds the run
            try:
                done, damage = self._proven(cfg), None    # finished by the process we waited for?
            except Damage as err:
                done, damage = None, err
            yield done if done is not None else RunRecorder(self, cfg, damage)


class RunRecorder:
    """The records of one run while a trainer trains it (the store's side of the run lock): where it
    starts, each finished round, and its result. The trainer owns the rounds; this writes and proves."""

    def __init__(self, store: RunStore, cfg: RunConfig, damage: Damage | None):
        self.store, self.cfg, self.damage = store, cfg, damage
        self.dir = store.dir(cfg)
        self.rows: list[dict[str, Any]] = []

    def start(self, device: torch.device, initial_state: Callable[[], Any], data_digest: str | None,
              batch: int = 1, executor: str = "engine") -> Any:
        """The state training (re)starts from: the checkpoint's if it proves itself (metrics.jsonl cut to
        its rows; rows past it are redone, identically), else `initial_state()` with round 0's checkpoint
        written, so a run diverging in round 1 has one. Writes config.json and, for a run with rounds left,
        env.json (`batch`: how many runs were trained together with it; `executor`: what trained it, fssl's
        engine or an integration such as Flower), which result.json seals. A run whose rounds are all in its
        checkpoint keeps the env.json its result sealed; without one (deleted, or moved aside with an
        unproven result) it gets this machine's, the machine that summarised it."""
        start = self._resume_point(device, initial_state)
        self.damage = None       # named and moved aside: a second start (a batch's run going on alone) resumes quietly
        cfg, d = self.cfg, self.dir
        self.rows = start.rows
        atomic_write_text(d / CONFIG, json.dumps(cfg.fields_read(), indent=2, sort_keys=True))   # what it reads
        if len(self.rows) < cfg.rounds or not (d / ENV).exists():
            env = _environment(cfg, data_digest, batch, executor)
            atomic_write_text(d / ENV, json.dumps(env, indent=2, sort_keys=True))
        if start.saved is None:
            save_checkpoint(d, cfg, 0, start.state, self.rows)
        return start.state

    @property
    def next_round(self) -> int:
        return len(self.rows) + 1

    def record_round(self, round: int, state: Any, row: dict[str, Any]) -> None:
        """Round `round` finished with `state` and metrics `row`: the row is written, then the checkpoint
        when one is due, so metrics.jsonl always holds at least the checkpoint's rows."""
        if round != self.next_round:
            raise ValueError(f"record_round: round {round} of run {self.cfg.run_id}, expected {self.next_round}")
        self.rows.append(row)
        write_rows(self.dir, self.rows)
        if round % self.cfg.checkpoint_every == 0 or round == self.cfg.rounds:
            save_checkpoint(self.dir, self.cfg, round, state, self.rows)

    def finish(self, status: str, failure: dict | None, model_parameters: int, num_classes: int) -> RunResult:
        """result.json, written last: the summary of the rows recorded (a diverged run's last checkpoint
        stays its final state)."""
        summary = write_result(self.dir, self.cfg, self.rows, status, failure, model_parameters, num_classes)
        return RunResult(self.cfg, self.rows, summary)

    def _resume_point(self, device: torch.device, initial_state: Callable[[], Any]) -> _Start:
        """Where training (re)starts: after the checkpoint if it proves itself, with metrics.jsonl cut
        to its rows; from round 1 without one. Every file that disagrees is moved aside and named, with
        what is wrong, in one warning."""
        cfg, d = self.cfg, self.dir
        problems = [str(self.damage)] if self.damage is not None else []
        aside = [RESULT] if (d / RESULT).exists() else []     # not proven (else we would not be here)
        if aside and (d / ENV).exists() and not env_sealed(d):   # no seal vouches for it: a recovery must not seal an edit
            aside.append(ENV)
        ckpt = None
        if (d / CHECKPOINT).exists():
            try:
                ckpt = read_checkpoint(d / CHECKPOINT, cfg, device)
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
            return _Start(initial_state(), rows, None)
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


def this_cpu() -> str:
    """The CPU as its kernels see it: the model name (/proc/cpuinfo, or platform.processor() where there is none)
    and the vector instructions torch dispatches to. Two records of one VM image can come from different host CPUs
    and differ in their last bits (measurements/2026-11-29-verify-platforms): `platform` alone does not say so."""
    name = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            name = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), name)
    except OSError:          # no /proc (macOS, Windows): the processor platform names
        pass
    return f"{name or 'unknown'}; {torch.backends.cpu.get_cpu_capability()}"


def _environment(cfg: RunConfig, data_digest: str | None = None, batch: int = 1, executor: str = "engine") -> dict:
    """Where the run was trained, and on which data: `data_digest` is the content digest of the data set's
    files as verified at load (data.datasets.data_digest; None for the synthetic set). The run's provenance,
    sealed by its result.json; the run id hashes the data set's name, whose files load_dataset verifies against
    the official ones before any run is trained on them, so this digest can only be the official one's."""
    env = {
        "fssl_core": __version__, "torch": torch.__version__, "python": sys.version.split()[0],
        "platform": platform.platform(), "cpu": this_cpu(), "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "executor": executor,
    }
    if data_digest is not None:
        env["data"] = {cfg.dataset: data_digest}
    env["precision"] = {"policy": cfg.precision, **precision.flags(torch.device(cfg.device))}
    if batch > 1:        # trained in lockstep with other runs (trainer.train_batch); not in the identity
        env["batch"] = batch
    return env

