"""A run directory's files: their names, durable writes, checked reads, one writer per run.

Every file is written atomically and durably (temporary file, fsync, rename, fsync of the directory),
so an interrupted write leaves either the previous or the new version, never half of one.

The readers here raise `Damage`, whose message names the file and what is wrong; the store decides
what to do about it (recompute from what still proves itself, move the rest aside: run_store.py).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import stat
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

RESULT, METRICS, CHECKPOINT, CONFIG = "result.json", "metrics.jsonl", "checkpoint.pt", "config.json"
ENV = "env.json"               # versions, device, host of the run
LOCK = ".lock"


class Damage(Exception):
    """A run file that cannot be trusted; the message names the file and what is wrong."""


class DamagedRun(UserWarning):
    """The category of the store's warnings about damaged or foreign run files."""


class StoreIOError(Exception):
    """A run store's directory or file could not be made or written: a read-only or full disk, a path that is
    a file. The message names the path and the cause; the files already there are left as they were (a failed
    write removes its temporary file), so the same command resumes once the cause is gone."""


def io_cause(err: BaseException) -> OSError | None:
    """The OSError behind `err`: itself, or the one it was raised while handling. torch.save's writer turns
    a full disk into RuntimeError("unexpected pos ...") raised while handling the OSError (ENOSPC) of the file
    object's write, which names no file."""
    for _ in range(8):                # a chain is short; a bound against a cycle
        if err is None or isinstance(err, OSError):
            return err
        err = err.__cause__ or err.__context__
    return None


def _store_io_error(path: Path, doing: str, err: BaseException) -> StoreIOError | None:
    """StoreIOError(`path`: cannot `doing`: the cause) where an OSError is behind `err`, else None."""
    cause = io_cause(err)
    if cause is None:
        return None
    where = f" ({cause.filename})" if cause.filename and Path(cause.filename) != path else ""
    return StoreIOError(f"{path}: cannot {doing}: {cause.strerror or cause}{where}")


# --- durable writes ------------------------------------------------------------------------------
class WriteTally:
    """What the store wrote while a `tally_writes()` was open: files, bytes and wall seconds (serialising,
    fsyncs and renames included), and per file name [writes, bytes]: the checkpoint's cost is a run's."""

    def __init__(self) -> None:
        self.writes, self.bytes, self.seconds = 0, 0, 0.0
        self.by_name: dict[str, list[int]] = {}

    def add(self, path: Path, seconds: float) -> None:
        size = path.stat().st_size
        self.writes, self.bytes, self.seconds = self.writes + 1, self.bytes + size, self.seconds + seconds
        counts = self.by_name.setdefault(path.name, [0, 0])
        counts[0], counts[1] = counts[0] + 1, counts[1] + size


_TALLIES: list[WriteTally] = []       # the open tallies; none open, a write costs no stat and no clock read


@contextmanager
def tally_writes() -> Iterator[WriteTally]:
    """Count every atomic write of this process while open (bench cases=runs_per_hour: the store's cost)."""
    tally = WriteTally()
    _TALLIES.append(tally)
    try:
        yield tally
    finally:
        _TALLIES.remove(tally)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    _atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_torch_save(path: Path, obj: Any) -> None:
    _atomic_write(path, lambda f: torch.save(obj, f))


def _atomic_write(path: Path, write: Callable[[Any], Any]) -> None:
    """Write through a uniquely named temporary file beside `path`, fsync it, rename it over `path`,
    fsync the directory: after a crash `path` is the old or the new file, and the new one is on disk
    once this returns. A killed write leaves a `.<name>.<random>.tmp` (removed under the run's lock).
    A write the disk refuses (read-only, full) raises StoreIOError naming `path`, `path` as it was."""
    tmp, began = None, time.perf_counter() if _TALLIES else 0.0
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)     # mkstemp makes files private; results are meant to be shared
        os.replace(tmp, path)
        fsync_dir(path.parent)
        for tally in _TALLIES:
            tally.add(path, time.perf_counter() - began)
    except BaseException as err:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        refused = _store_io_error(path, "write", err)
        if refused is None:
            raise
        raise refused from err


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in `path` survive a power cut (the file's own fsync does not)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_orphans(run_dir: Path) -> list[Path]:
    """Remove the temporary files (`.<name>.<random>.tmp`, atomic_write_*) of writes that were
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


# --- checked reads -------------------------------------------------------------------------------
# The store reads only regular files it could have written: never through a symbolic link (a run's file
# that is a link could point anywhere), never a FIFO or device (a read would block, or never end).
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory", stat.S_IFLNK: "a symbolic link"}


def read_bytes(path: Path) -> bytes:
    """The bytes of the regular file at `path`; Damage naming the file if it is missing, unreadable, a
    symbolic link or not a regular file (opened without following a link and without blocking)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise Damage(f"{path}: missing") from None
    except OSError as err:
        if os.path.islink(path):
            raise Damage(f"{path}: a symbolic link, not a file of the run (the store follows no link)") from None
        raise Damage(f"{path}: unreadable ({type(err).__name__}: {err.strerror})") from None
    try:
        kind = stat.S_IFMT(os.fstat(fd).st_mode)
        if kind != stat.S_IFREG:
            raise Damage(f"{path}: unreadable: {_KINDS.get(kind, 'not a regular file')}, not a file of the run")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    except OSError as err:
        raise Damage(f"{path}: unreadable ({type(err).__name__}: {err.strerror})") from None
    finally:
        os.close(fd)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(read_bytes(path)).hexdigest()


def read_text(path: Path) -> str:
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Damage(f"{path}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})") from None


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """An object's pairs as a dict, refusing a key given twice: json.loads keeps the last, another reader the
    first, so a record with a duplicate `accuracy` says two things."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _parse_json(text: str, where: str, verb: str = ":") -> Any:
    """json.loads, bounded: nesting past the interpreter's recursion limit (about a thousand levels; a run's
    records nest a few) and integers past Python's digit limit are Damage naming `where`, not a
    RecursionError or ValueError."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as err:
        raise Damage(f"{where}{verb} key {err.args[0]!r} given twice (JSON readers keep either one)") from None
    except json.JSONDecodeError as err:
        raise Damage(f"{where}{verb} not JSON ({err})") from None
    except RecursionError:
        raise Damage(f"{where}{verb} nested too deeply to be a run's record") from None
    except ValueError as err:      # an integer of thousands of digits
        raise Damage(f"{where}{verb} not JSON this store reads ({str(err).splitlines()[0][:120]})") from None


def read_json(path: Path) -> dict:
    text = read_text(path)
    if not text.strip():
        raise Damage(f"{path}: empty")
    value = _parse_json(text, str(path))
    if not isinstance(value, dict):
        raise Damage(f"{path}: a JSON {type(value).__name__}, not an object")
    return value


def read_rows(path: Path) -> list[dict]:
    """metrics.jsonl's rows; row i must say round i."""
    rows = []
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        row = _parse_json(line, f"{path}: line {n}", " is")
        if not isinstance(row, dict) or row.get("round") != len(rows) + 1:
            raise Damage(f"{path}: line {n} is not the row of round {len(rows) + 1}")
        rows.append(row)
    return rows


# --- one writer per run --------------------------------------------------------------------------
@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold runs/<id>/.lock exclusively: only the holder checks, repairs or trains the run. Taking
    it removes the temporary files of killed writes (`remove_orphans`)."""
    if run_dir.parent.exists() and not run_dir.parent.is_dir():
        raise StoreIOError(f"{run_dir.parent}: the run store is a file, not a directory")
    if run_dir.is_symlink():        # it would train inside whatever it points to
        raise StoreIOError(f"{run_dir}: a symbolic link where run {run_dir.name}'s directory belongs; the store "
                           "follows no link: replace it with the directory itself")
    if run_dir.exists() and not run_dir.is_dir():
        raise StoreIOError(f"{run_dir}: a file where run {run_dir.name}'s directory belongs; move it away")
    if not run_dir.exists():
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            fsync_dir(run_dir.parent)
        except OSError as err:
            raise _store_io_error(run_dir, "create the run's directory", err) from err
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
    try:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        # O_RDWR: a read-only store refuses it; O_NOFOLLOW, O_NONBLOCK: a link or a FIFO in its place is
        # refused below, and nothing outside the store is opened for writing
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as err:
        if os.path.islink(lock_file):
            raise StoreIOError(f"{lock_file}: a symbolic link where the lock file belongs; the store follows no "
                               "link: remove it") from None
        raise _store_io_error(lock_file, "open the lock file", err) from err
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StoreIOError(f"{lock_file}: {_KINDS.get(stat.S_IFMT(os.lstat(lock_file).st_mode), 'not a file')} where "
                           "the lock file belongs; remove it")
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
