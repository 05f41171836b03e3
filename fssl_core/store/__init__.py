"""The run store: one directory per run, named by the hash of its config.

    runs/<run_id>/config.json     the full config
    runs/<run_id>/env.json        versions, device, host
    runs/<run_id>/metrics.jsonl   one JSON object per finished round
    runs/<run_id>/checkpoint.pt   server state after the last checkpointed round (+ its metrics)
    runs/<run_id>/result.json     written last: the summary; its presence means "finished"
    runs/<run_id>/.lock           held (flock) by the one process that checks, repairs or trains the run
    runs/<run_id>/damaged-<time>/ files that failed their checks, moved aside (never deleted)

Every file is written atomically and durably (files.py), so an interrupted run leaves either the
previous or the new version, never half of one. A write the disk refuses (read-only, full, a file where
a directory belongs) raises `StoreIOError` naming the path and the cause, the files as they were. A finished run is read back, not retrained; an
unfinished one resumes from its checkpoint and, as every random draw is derived from (seed, round,
party), ends with the same metrics as a run that was never interrupted (run_store.py).

No wrong number is served: result.json and checkpoint.pt carry the run id, the config's identity
hash and digests of the rows they cover, and every read checks them and recomputes result.json's
figures from its rows (integrity.py). Files that disagree are named in a `DamagedRun` warning;
A trainer's claim (`RunStore.claim`) then keeps what still proves itself (a checkpoint and the rows it covers), moves the rest
into runs/<id>/damaged-<time>/ and recomputes.

Threat model. Detected: accidental damage (truncation, flipped bytes, a disk full mid-write, a directory, link or
FIFO in a file's place) and careless edits, including an edited record resealed with the store's own functions
while its checkpoint is beside it (the checkpoint's rows and digests must agree with result.json). Not detected,
and git's job: a deliberate forgery of committed records without their checkpoint, or of a checkpoint with its
digests recomputed. A user checks a committed run with `git log -p -- runs/<id>/`: who changed its records
after the commit that added them, and how.

A finished run's records (config.json, env.json, metrics.jsonl, result.json; a few kB to a few hundred kB) are
what a batch commits, so that its runs outlive the machine that trained them (`python -m fssl_core records`
lists them for `git add`). runs/ is tracked: .gitignore keeps each run's checkpoint, lock, temporaries and
damaged files out, so the records sit beside the local files they are proven with. A clone holding a run's records without its
checkpoint serves the run, since result.json's digests prove its rows and config; only `final_state` needs the
checkpoint, and says how to get it back.

A finished run's status, "ok", "diverged" or "at-chance", is set in its summary (summary.py).

The store persists and proves; it trains nothing and imports neither the engine nor an executor. The
trainer (fssl_core/trainer.py) owns the rounds, through `RunStore.claim` and its `RunRecorder`; which
processes or machines train, and how many runs at once, is the business of fssl_core/executors/.
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
