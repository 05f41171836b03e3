"""How a run directory proves itself: digests, checked readers, durable writes, one writer per run.

A finished run's files vouch for each other (runs.py writes them, RunStore checks them on every read):

    result.json    run_id, config_hash, rounds, metrics_digest (of the rows it summarises),
                   checkpoint_sha256 (the file beside it), digest (of result.json itself)
    checkpoint.pt  run_id, config_hash, round, metrics (rows 1..round), metrics_digest, state_digest
    metrics.jsonl  the rows; their digest is over canonical JSON lines, so formatting does not matter
    config.json    the config; it must have the run's identity
    env.json       where the run was trained: informative only, not checked

`config_hash` is RunConfig.identity_hash: the hash of the fields that change what a run computes
(`run_id` is its first 16 digits), not of cfg.to_dict(), so a knob added later with its default, or a
different `checkpoint_every`, leaves stored files valid, as it leaves their run id.

The readers here raise `Damage`, whose message names the file and what is wrong; the store decides
what to do about it (recompute from what still proves itself, move the rest aside).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import torch

RESULT, METRICS, CHECKPOINT, CONFIG = "result.json", "metrics.jsonl", "checkpoint.pt", "config.json"
LOCK = ".lock"


class Damage(Exception):
    """A run file that cannot be trusted; the message names the file and what is wrong."""


class DamagedRun(UserWarning):
    """The category of the store's warnings about damaged or foreign run files."""


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


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except FileNotFoundError:
        raise Damage(f"{path}: missing") from None
    except OSError as err:
        raise Damage(f"{path}: unreadable ({type(err).__name__}: {err.strerror})") from None
    return h.hexdigest()


# --- checked readers -----------------------------------------------------------------------------
def read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise Damage(f"{path}: missing") from None
    except OSError as err:          # a directory in its place, a file we may not read
        raise Damage(f"{path}: unreadable ({type(err).__name__}: {err.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Damage(f"{path}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})") from None


def read_json(path: Path) -> dict:
    text = read_text(path)
    if not text.strip():
        raise Damage(f"{path}: empty")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise Damage(f"{path}: not JSON ({err})") from None
    if not isinstance(value, dict):
        raise Damage(f"{path}: a JSON {type(value).__name__}, not an object")
    return value


def read_rows(path: Path) -> list[dict]:
    """metrics.jsonl's rows; row i must say round i."""
    rows = []
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise Damage(f"{path}: line {n} is not JSON ({err})") from None
        if not isinstance(row, dict) or row.get("round") != len(rows) + 1:
            raise Damage(f"{path}: line {n} is not the row of round {len(rows) + 1}")
        rows.append(row)
    return rows


CHECKPOINT_KEYS = {"run_id", "config_hash", "round", "state", "metrics", "metrics_digest", "state_digest"}


def read_checkpoint(path: Path, cfg, device: Any) -> dict:
    """The checkpoint at `path` after checking it is this run's and unaltered."""
    try:
        ckpt = torch.load(path, map_location=device, weights_only=True)
    except FileNotFoundError:
        raise Damage(f"{path}: missing") from None
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


def _checked(path: Path, ckpt: dict, cfg) -> dict:
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


# --- durable files -------------------------------------------------------------------------------
def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in `path` survive a power cut (the file's own fsync does not)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_orphans(run_dir: Path) -> list[Path]:
    """Remove the temporary files (`.<name>.<random>.tmp`, runs.atomic_write_*) of writes that were
    killed midway. Call only while holding the run's lock: only its holder writes in the directory,
    so every temporary file there then belongs to a writer that is gone."""
    orphans = sorted(run_dir.glob(".*.tmp"))
    for p in orphans:
        p.unlink(missing_ok=True)
    return orphans


def move_aside(run_dir: Path, names: list[str]) -> Path:
    """Move damaged files into runs/<id>/damaged-<time>/ (kept for inspection, never deleted)."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    folder, n = run_dir / f"damaged-{stamp}", 1
    while folder.exists():
        n += 1
        folder = run_dir / f"damaged-{stamp}-{n}"
    folder.mkdir()
    for name in names:
        os.replace(run_dir / name, folder / name)
    fsync_dir(folder)
    fsync_dir(run_dir)
    return folder


# --- one writer per run --------------------------------------------------------------------------
@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold runs/<id>/.lock exclusively: only the holder checks, repairs or trains the run. Taking
    it removes the temporary files of killed writes (`remove_orphans`)."""
    if not run_dir.exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        fsync_dir(run_dir.parent)
    with exclusive(run_dir / LOCK, waiting=f"{run_dir}: {{holder}} is running this run; waiting for it to finish"):
        remove_orphans(run_dir)
        yield


@contextmanager
def exclusive(lock_file: Path, waiting: str = "{holder} holds {lock}; waiting for it") -> Iterator[None]:
    """Hold `lock_file` exclusively (created if missing), for a read-modify-write or a run.

    flock(2) locks belong to the open file, and the kernel drops them when the process dies, however
    it dies (SIGKILL, OOM, power loss on reboot), so a lock is never stale and there is no timeout:
    a second process waits as long as the first is alive. It works across hosts on NFS (Linux maps
    flock onto NFS byte-range locks). The holder's pid and host are written into the file, for the
    `waiting` message only."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            print(waiting.format(holder=holder, lock=lock_file), file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)          # releases the lock
