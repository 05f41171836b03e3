"""The run store: one directory per run, named by the hash of its config (docs/store.md: the files, the
threat model, what a commit holds).

    runs/<run_id>/config.json, env.json, metrics.jsonl   the config, the machine, one row per finished round
    runs/<run_id>/checkpoint.pt   server state after the last checkpointed round (local; never committed)
    runs/<run_id>/result.json     written last: the summary; its presence means "finished"

Every file is written atomically and durably (files.py): an interrupted run leaves the previous or the new
version, never half of one; a write the disk refuses raises `StoreIOError` naming the path and the cause.
A finished run is read back, not retrained; an unfinished one resumes from its checkpoint and, as every
random draw derives from (seed, round, party), ends with the metrics of a run never interrupted.

No wrong number is served: result.json and checkpoint.pt carry the run id, the config's identity hash and
digests of the rows they cover, and every read checks them and recomputes result.json's figures from its
rows (integrity.py). Files that disagree are named in a `DamagedRun` warning; a trainer's claim
(`RunStore.claim`) keeps what still proves itself, moves the rest into runs/<id>/damaged-<time>/ and
recomputes. A run's status, "ok", "diverged" or "at-chance", is set in its summary (summary.py).

The store persists and proves; it trains nothing and imports neither the engine nor an executor: the
trainer (engine/trainer.py) owns the rounds through `RunStore.claim` and its `RunRecorder`.
"""
from .files import (CHECKPOINT, CONFIG, ENV, METRICS, RESULT, Damage, DamagedRun, StoreIOError, atomic_torch_save,
                    atomic_write_bytes, atomic_write_text, exclusive, run_lock)
from .integrity import save_checkpoint, write_result, write_rows
from .run_store import RunResult, RunStore, record_files
from .summary import AT_CHANCE, AT_CHANCE_FACTOR, DIVERGED, MEASURED, OK, describe, summarize

__all__ = ["AT_CHANCE", "AT_CHANCE_FACTOR", "CHECKPOINT", "CONFIG", "DIVERGED", "Damage", "DamagedRun", "ENV",
           "MEASURED", "METRICS", "OK", "RESULT", "RunResult", "RunStore", "StoreIOError", "atomic_torch_save", "atomic_write_bytes",
           "atomic_write_text", "describe", "exclusive", "record_files", "run_lock", "save_checkpoint", "summarize",
           "write_result", "write_rows"]
