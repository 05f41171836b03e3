"""How a run directory proves itself: the digests its files carry, how they are sealed, how they are checked.

A finished run's files vouch for each other (written here, checked here on every read):

    result.json    run_id, config_hash, rounds, metrics_digest (of the rows it summarises),
                   checkpoint_sha256 (the file beside it), digest (of result.json itself)
    checkpoint.pt  run_id, config_hash, round, metrics (rows 1..round), metrics_digest, state_digest
    metrics.jsonl  the rows; their digest is over canonical JSON lines, so formatting does not matter
    config.json    the config; it must have the run's identity
    env.json       where the run was trained (versions, device, precision, executor, batch) and the content
                   digest of its data set's verified files (data.datasets.data_digest): the run's provenance,
                   sealed by result.json's env_digest, so an edited, deleted or garbage env.json is damage

result.json's figures that derive from the rows (accuracy, best accuracy and round, rounds, seconds, bytes,
status) are recomputed from the proven rows and must equal the stored ones (`check_summary`): a digest
proves that a file is the one written, not that its numbers summarise its rows.

`config_hash` is RunConfig.identity_hash: the hash of the fields that change what a run computes
(`run_id` is its first 16 digits), not of cfg.to_dict(), so a knob added later with its default, or a
different `checkpoint_every`, leaves stored files valid, as it leaves their run id.

Every check raises `Damage` naming the file and what is wrong; the store (run_store.py) decides what
to do about it.
"""
from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import torch

from ..config import ConfigError

from ..run_config import RunConfig, field_types
from .files import (CHECKPOINT, CONFIG, ENV, METRICS, RESULT, Damage, atomic_torch_save, atomic_write_text,
                    file_sha256, read_bytes, read_json, read_rows)
from .summary import DIVERGED, OK, summarize

CHECKPOINT_KEYS = {"run_id", "config_hash", "round", "state", "metrics", "metrics_digest", "state_digest"}


# --- digests -------------------------------------------------------------------------------------
def canonical_json(obj: Any) -> str:
    """One spelling per value: sorted keys, no spaces; floats as repr, which JSON reads back exactly."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def rows_digest(rows: list[dict]) -> str:
    """sha256 of the rows as canonical JSON lines (metrics.jsonl's content, whatever its spacing)."""
    return sha256_text("".join(canonical_json(r) + "\n" for r in rows))


def summary_digest(summary: dict) -> str:
    """sha256 of result.json's content but its own digest and `run_dir` (a store may be moved)."""
    return sha256_text(canonical_json({k: v for k, v in summary.items() if k not in ("digest", "run_dir")}))


def env_digest(env: dict) -> str:
    """sha256 of env.json's content as canonical JSON (whatever its spacing)."""
    return sha256_text(canonical_json(env))


def state_digest(state: Any) -> str:
    """sha256 over a (nested) server state: every tensor's dtype, shape and bytes, in key order."""
    h = hashlib.sha256()

    def feed(x: Any) -> None:
        if isinstance(x, torch.Tensor):
            t = x.detach().cpu().contiguous()
            h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
        elif isinstance(x, dict):
            h.update(b"{")
            for k in sorted(x, key=repr):
                h.update(repr(k).encode() + b":")
                feed(x[k])
            h.update(b"}")
        elif isinstance(x, (list, tuple)):
            h.update(b"[")
            for v in x:
                feed(v)
            h.update(b"]")
        else:
            h.update(repr(x).encode() + b";")
    feed(state)
    return h.hexdigest()


# --- sealing -------------------------------------------------------------------------------------
def write_rows(d: Path, rows: list[dict]) -> None:
    atomic_write_text(d / METRICS, "".join(json.dumps(x) + "\n" for x in rows))


def save_checkpoint(d: Path, cfg: RunConfig, round: int, state: Any, rows: list[dict]) -> None:
    atomic_torch_save(d / CHECKPOINT, {
        "run_id": cfg.run_id, "config_hash": cfg.identity_hash, "round": round, "state": state,
        "metrics": list(rows), "metrics_digest": rows_digest(rows), "state_digest": state_digest(state)})


def write_result(d: Path, cfg: RunConfig, rows: list[dict], status: str, failure: dict | None,
                 model_parameters: int, num_classes: int) -> dict:
    """result.json, written last: the summary of `rows`, sealed with what it covers (the run, its
    rows, its env.json, the checkpoint beside it) and its own digest. Returns the summary."""
    summary = summarize(cfg, rows, status, model_parameters, d, num_classes)
    if failure:
        summary["diverged"] = failure
    summary.update(config_hash=cfg.identity_hash, metrics_digest=rows_digest(rows),
                   env_digest=env_digest(read_json(d / ENV)), checkpoint_sha256=file_sha256(d / CHECKPOINT))
    summary["digest"] = summary_digest(summary)
    atomic_write_text(d / RESULT, json.dumps(summary, indent=2, sort_keys=True))
    return summary


# --- checks --------------------------------------------------------------------------------------
def prove_finished(d: Path, cfg: RunConfig, open_checkpoint: bool = True) -> tuple[list[dict], dict] | None:
    """The rows and summary of the finished run of `cfg` in `d` if its files agree with each other and
    with `cfg`; None if there is no result.json; else raises Damage naming the first file that disagrees.
    Without its checkpoint a run still proves itself (result.json's digests cover its rows and config):
    committed records carry none. `open_checkpoint=False` checks the checkpoint's sha256 only, not its own
    digests (torch.load: a second of import, then the file's bytes unpickled): for a plan that serves nothing."""
    if d.is_symlink():
        raise Damage(f"{d}: a symbolic link where a run's directory belongs (the store follows no link)")
    if not (d / RESULT).exists() and not (d / RESULT).is_symlink():
        return None
    summary = read_json(d / RESULT)
    if "digest" not in summary:
        raise Damage(f"{d / RESULT}: carries no digest (written by an older store, or edited)")
    if summary["digest"] != summary_digest(summary):
        raise Damage(f"{d / RESULT}: its content does not match its digest (edited?)")
    if summary.get("run_id") != cfg.run_id or summary.get("config_hash") != cfg.identity_hash:
        raise Damage(f"{d / RESULT}: belongs to run {summary.get('run_id')} (another config), not {cfg.run_id}")
    rounds, failure = summary.get("rounds"), summary.get("diverged")
    diverged_after = summary.get("status") == DIVERGED and isinstance(failure, dict) and failure.get("round")
    if not (rounds == cfg.rounds or (isinstance(rounds, int) and diverged_after == rounds + 1)):
        raise Damage(f"{d / RESULT}: {rounds} rounds, the config has {cfg.rounds} and no divergence is recorded")
    rows = read_rows(d / METRICS)
    if len(rows) != rounds:
        raise Damage(f"{d / METRICS}: {len(rows)} rows, {RESULT} says {rounds}")
    if rows_digest(rows) != summary.get("metrics_digest"):
        raise Damage(f"{d / METRICS}: its rows are not those {RESULT} summarises (digest mismatch)")
    check_summary(d / RESULT, cfg, rows, summary)
    check_config(d / CONFIG, cfg)
    check_env(d, summary)
    if (d / CHECKPOINT).exists() or (d / CHECKPOINT).is_symlink():
        check_final_checkpoint(d, cfg, summary, open_checkpoint)
    return rows, {**summary, "run_dir": str(d)}


def check_env(d: Path, summary: dict) -> None:
    """env.json must be the one result.json was sealed with: the provenance a run is served with (its data
    digest, device, versions, precision, executor, batch) is what was recorded when it was trained."""
    if "env_digest" not in summary:
        raise Damage(f"{d / RESULT}: does not seal an {ENV} (written by an older store, or edited)")
    if env_digest(read_json(d / ENV)) != summary["env_digest"]:
        raise Damage(f"{d / ENV}: not the environment {RESULT} was sealed with (digest mismatch: edited?)")


def env_sealed(d: Path) -> bool:
    """Whether env.json is the one the (possibly otherwise damaged) result.json beside it seals: what a
    recovery may keep when it recomputes the result from the checkpoint, rather than seal an edit."""
    try:
        check_env(d, read_json(d / RESULT))
    except Damage:
        return False
    return True


def check_final_checkpoint(d: Path, cfg: RunConfig, summary: dict, open_checkpoint: bool = True) -> None:
    """The checkpoint beside a finished run must be the one result.json was written with (its sha256), and
    its own rows must be the rows result.json covers (its metrics digest, its round): a result.json whose
    last row, summary and digests were all recomputed after an edit still disagrees with the checkpoint,
    which proves itself by its own digests."""
    data = read_bytes(d / CHECKPOINT)
    if hashlib.sha256(data).hexdigest() != summary.get("checkpoint_sha256"):
        raise Damage(f"{d / CHECKPOINT}: not the checkpoint {RESULT} was written with (sha256 mismatch)")
    if not open_checkpoint:
        return
    ckpt = read_checkpoint(d / CHECKPOINT, cfg, "cpu", data)
    if ckpt["metrics_digest"] != summary.get("metrics_digest") or ckpt["round"] != summary.get("rounds"):
        raise Damage(f"{d / METRICS}: its rows, which {RESULT} covers, are not those of {CHECKPOINT} (round "
                     f"{ckpt['round']}), which proves itself: edited after the run finished")


# result.json's fields that are figures of the metrics rows (summary.summarize computes them from the rows)
DERIVED = ("accuracy", "best_accuracy", "best_round", "rounds", "seconds", "seconds_per_round", "upload_bytes",
           "download_bytes", "status")


def check_summary(path: Path, cfg: RunConfig, rows: list[dict], summary: dict) -> None:
    """The summary's figures must be those its proven rows give: its digests prove that the file is
    the one written, not that its numbers came from the rows (a forged accuracy with a recomputed digest).
    The rows are summarised again, with the summary's own chance level, model size and ending (ok or
    diverged), and every derived field must be equal: the same sums in the same order, so floats too."""
    chance = summary.get("chance_accuracy")
    if not isinstance(chance, (int, float)) or isinstance(chance, bool) or not chance > 0:
        raise Damage(f"{path}: chance_accuracy={chance!r}, not a positive number")
    ended = DIVERGED if summary.get("status") == DIVERGED else OK
    try:
        again = summarize(cfg, rows, ended, summary.get("model_parameters"), path.parent, round(100.0 / chance))
    except (KeyError, TypeError, ValueError) as err:      # rows of the right digest but not of this store's shape
        raise Damage(f"{path}: its rows cannot be summarised ({type(err).__name__}: {err})") from None
    wrong = [f"{k}={summary.get(k)!r} (its rows give {again[k]!r})" for k in DERIVED
             if not _same(summary.get(k), again[k])]
    if wrong:
        raise Damage(f"{path}: {', '.join(wrong)}: not the summary of the rows it covers (forged?)")


def _same(stored: Any, derived: Any) -> bool:
    """Equal, a NaN equalling a NaN (JSON reads back a NaN row's NaN)."""
    return stored == derived or (isinstance(stored, float) and isinstance(derived, float) and stored != stored
                                 and derived != derived)


def check_config(path: Path, cfg: RunConfig) -> None:
    """config.json must hold a config with `cfg`'s identity (fields not in the identity, such as
    checkpoint_every, may differ: they do not change what the run computes).

    Keys this version does not know were written by a newer one sharing the store (a long batch
    started before a field was added): they hold their defaults, since the run id hashes every field
    that differs from its default and this run's id is `cfg`'s, so they are set aside, not read as
    damage."""
    try:
        raw = read_json(path)
        known = field_types()
        stored = RunConfig.from_dict({k: v for k, v in raw.items() if k in known} if isinstance(raw, dict) else raw)
    except ConfigError as err:
        raise Damage(f"{path}: not a valid config ({err})") from None
    if stored.identity_hash != cfg.identity_hash:
        diff = [f"{k}={v!r} (config: {getattr(cfg, k)!r})" for k, v in stored.to_dict().items() if v != getattr(cfg, k)]
        raise Damage(f"{path}: another config ({', '.join(diff[:3])})")


def read_checkpoint(path: Path, cfg: RunConfig, device: Any, data: bytes | None = None) -> dict:
    """The checkpoint at `path` (its bytes `data` where already read) after checking it is this run's and
    unaltered."""
    data = read_bytes(path) if data is None else data     # a regular file, not through a link
    try:
        ckpt = torch.load(io.BytesIO(data), map_location=device, weights_only=True)
    except Exception as err:   # a damaged file fails in many ways: zip, pickle, EOF, unknown types
        detail = str(err).splitlines()[0] if str(err) else ""
        raise Damage(f"{path}: unreadable ({type(err).__name__}{': ' + detail if detail else ''})") from None
    if not isinstance(ckpt, dict):
        raise Damage(f"{path}: not a checkpoint (a {type(ckpt).__name__})")
    try:
        return _checked(path, ckpt, cfg)
    except Damage:
        raise
    except Exception as err:    # fields of unexpected types
        raise Damage(f"{path}: malformed ({type(err).__name__}: {err})") from None


def _checked(path: Path, ckpt: dict, cfg: RunConfig) -> dict:
    if set(ckpt) != CHECKPOINT_KEYS:
        missing = sorted(CHECKPOINT_KEYS - set(ckpt))
        raise Damage(f"{path}: not a checkpoint of this store (missing {', '.join(missing) or 'nothing'}; "
                     f"extra {', '.join(sorted(set(ckpt) - CHECKPOINT_KEYS)) or 'nothing'})")
    if ckpt["run_id"] != cfg.run_id or ckpt["config_hash"] != cfg.identity_hash:
        raise Damage(f"{path}: belongs to run {ckpt['run_id']} (another config), not {cfg.run_id}")
    r, rows = ckpt["round"], ckpt["metrics"]
    if not isinstance(r, int) or not 0 <= r <= cfg.rounds:
        raise Damage(f"{path}: round {r!r}, the config has {cfg.rounds} rounds")
    if not isinstance(rows, list) or len(rows) != r:
        raise Damage(f"{path}: round {r} but {len(rows) if isinstance(rows, list) else 'no'} metrics rows")
    if rows_digest(rows) != ckpt["metrics_digest"]:
        raise Damage(f"{path}: its metrics rows do not match their digest")
    if state_digest(ckpt["state"]) != ckpt["state_digest"]:
        raise Damage(f"{path}: its server state does not match its digest (altered bytes)")
    return ckpt
