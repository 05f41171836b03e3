"""A run directory proves itself: every damaged or foreign file is detected and named, and what is
served equals a clean run (read back, recomputed from a checkpoint that proves itself, resumed or
rerun); one process trains a run at a time; a SIGKILL mid-run resumes bit for bit."""
import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import pytest
import torch

from fssl_core.run_config import RunConfig
from fssl_core.store import DamagedRun, RunStore, record_files, summarize
from fssl_core.engine.trainer import train

from .conftest import requires_mnist
from .fake_runs import fake_finished_run, row
from .run_workers import execute_and_log_rounds

# each test asserts the warnings it expects (pytest.warns); pytest re-emits the others it caught
pytestmark = [requires_mnist, pytest.mark.filterwarnings("ignore::fssl_core.store.DamagedRun")]

# TINY (test_store.py) for 4 rounds on 10,000 training and 500 test images, evaluated at the last round only:
# a run takes a fifth of a second
CFG = RunConfig(dataset="mnist", partition="iid", labeled_ratio=0.05, clients=100, clients_per_round=2,
                local_epochs=1, rounds=4, batch_size=10, eval_every=100, resplit_train=10_000, resplit_test=500)


def _without_timing(metrics):
    return [{k: v for k, v in m.items() if k != "seconds"} for m in metrics]


class Stop(Exception):
    pass


def _stop_after(round_):
    def hook(r):
        if r == round_:
            raise Stop
    return hook


def _must_not_train(r):
    raise AssertionError(f"trained round {r}: the run should have been recovered without training")


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("clean"))
    return store, train(CFG, store, progress=False)


def _copy_of(clean, tmp_path) -> RunStore:
    store, _ = clean
    shutil.copytree(store.dir(CFG), tmp_path / CFG.run_id)
    return RunStore(tmp_path)


def _served_is_clean(store, clean, result):
    _, reference = clean
    assert _without_timing(result.metrics) == _without_timing(reference.metrics)
    assert result.accuracy == reference.accuracy and result.summary["rounds"] == CFG.rounds
    again = store.load(CFG)                        # the repaired directory proves itself
    assert again is not None and again.metrics == result.metrics
    assert not list(store.dir(CFG).glob(".*.tmp"))


# --- corruptions of a finished run ---------------------------------------------------------------
def _edit_json(path, **changes):
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def _forge(path, **changes):
    """Edit result.json and reseal it: its digest is recomputed, so only its rows can tell."""
    from fssl_core.store.integrity import summary_digest
    summary = {**json.loads(path.read_text()), **changes}
    path.write_text(json.dumps({**summary, "digest": summary_digest(summary)}))


def _unseal_env(path):
    """result.json resealed without its env_digest: a record of a store that did not seal env.json."""
    from fssl_core.store.integrity import summary_digest
    summary = {k: v for k, v in json.loads(path.read_text()).items() if k not in ("env_digest", "digest")}
    path.write_text(json.dumps({**summary, "digest": summary_digest(summary)}))


def _drop_rows(path, keep):
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:keep]))


def _flip_bytes(path, at=None, n=8):
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if at is None else at
    data[at:at + n] = bytes(b ^ 0xFF for b in data[at:at + n])
    path.write_bytes(bytes(data))


def _reseal_with_last_row(path, accuracy=87.82):
    """Edit metrics.jsonl's last row, then rewrite the rows and result.json with the store's own functions
    (every digest recomputed): only the checkpoint beside them, which proves itself, can tell."""
    from fssl_core.store.integrity import write_result, write_rows
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows[-1]["accuracy"] = accuracy
    summary = json.loads((path.parent / "result.json").read_text())
    write_rows(path.parent, rows)
    write_result(path.parent, CFG, rows, "ok", None, summary["model_parameters"],
                 round(100.0 / summary["chance_accuracy"]))


# name: (file corrupted, corruption, what the message says, recovered without training)
FINISHED = {
    "last row edited, result.json resealed by the store's functions": (
        "metrics.jsonl", _reseal_with_last_row, "are not those of checkpoint.pt", True),
    "edited result.json accuracy": ("result.json", lambda p: _edit_json(p, accuracy=99.9), "does not match its digest", True),
    "metrics rows dropped": ("metrics.jsonl", lambda p: _drop_rows(p, 2), "2 rows, result.json says 4", True),
    "truncated result.json": ("result.json", lambda p: p.write_text(p.read_text()[:40]), "not JSON", True),
    "garbage line in metrics": ("metrics.jsonl", lambda p: p.write_text(p.read_text() + "{\"round\": 5, oops\n"),
                                "line 5 is not JSON", True),
    "non-UTF-8 result.json": ("result.json", lambda p: p.write_bytes(b"\xff\xfe" + p.read_bytes()), "not UTF-8", True),
    "truncated metrics.jsonl": ("metrics.jsonl", lambda p: p.write_text(p.read_text()[:-30]), "line 4 is not JSON", True),
    "non-UTF-8 config.json": ("config.json", lambda p: p.write_bytes(p.read_bytes() + b"\xff"), "not UTF-8", True),
    "a directory for result.json": ("result.json", lambda p: (p.unlink(), p.mkdir()), "unreadable", True),
    "non-UTF-8 metrics": ("metrics.jsonl", lambda p: p.write_bytes(p.read_bytes()[:10] + b"\xc3\x28"), "not UTF-8", True),
    "empty result.json": ("result.json", lambda p: p.write_bytes(b""), "empty", True),
    "empty metrics.jsonl": ("metrics.jsonl", lambda p: p.write_bytes(b""), "0 rows, result.json says 4", True),
    "empty config.json": ("config.json", lambda p: p.write_bytes(b""), "empty", True),
    "another config's config.json": ("config.json", lambda p: _edit_json(p, seed=99), "another config", True),
    "forged accuracy, digest recomputed": ("result.json", lambda p: _forge(p, accuracy=99.99),
                                           "accuracy=99.99 (its rows give", True),
    "forged bytes, digest recomputed": ("result.json", lambda p: _forge(p, upload_bytes=1),
                                        "upload_bytes=1 (its rows give", True),
    "result.json of another round count": ("result.json", lambda p: _edit_json(p, rounds=2), "does not match its digest", True),
    "env.json's device edited": ("env.json", lambda p: _edit_json(p, precision={"device": "cuda", "policy": "fp32"}),
                                 "not the environment result.json was sealed with", True),
    "env.json's data digest zeroed": ("env.json", lambda p: _edit_json(p, data={"mnist": "0" * 64}),
                                      "not the environment result.json was sealed with", True),
    "env.json's torch version edited": ("env.json", lambda p: _edit_json(p, torch="9.9.9"),
                                        "not the environment result.json was sealed with", True),
    "garbage env.json": ("env.json", lambda p: p.write_text("{device: cuda"), "not JSON", True),
    "result.json sealing no env.json": ("result.json", _unseal_env, "does not seal an env.json", True),
    "empty checkpoint": ("checkpoint.pt", lambda p: p.write_bytes(b""), "sha256 mismatch", False),
    "flipped bytes in checkpoint": ("checkpoint.pt", _flip_bytes, "sha256 mismatch", False),
}


@pytest.mark.parametrize("case", FINISHED)
def test_a_damaged_finished_run_is_named_and_never_served(case, clean, tmp_path):
    name, corrupt, says, without_training = FINISHED[case]
    store = _copy_of(clean, tmp_path)
    path = store.dir(CFG) / name
    corrupt(path)
    message = re.compile(re.escape(str(path)) + ".*" + re.escape(says))
    with pytest.warns(DamagedRun, match=message):
        assert store.load(CFG) is None
    with pytest.warns(DamagedRun, match=message) as caught:
        result = train(CFG, store, progress=False, after_round=_must_not_train if without_training else None)
    _served_is_clean(store, clean, result)
    assert (next(store.dir(CFG).glob("damaged-*")) / name).exists()     # kept aside, never deleted
    assert any(str(store.dir(CFG) / "damaged-") in str(w.message) for w in caught)


def test_an_edited_env_json_is_never_resealed_and_a_missing_one_is_damage(clean, tmp_path):
    """Provenance is served only as sealed: a recovery from the checkpoint moves an unsealed env.json aside
    and records this machine's, never the edit; a deleted env.json is damage, not a served run."""
    store = _copy_of(clean, tmp_path)
    env = store.dir(CFG) / "env.json"
    _edit_json(env, data={"mnist": "0" * 64})
    with pytest.warns(DamagedRun):
        train(CFG, store, progress=False, after_round=_must_not_train)
    assert json.loads(env.read_text())["data"]["mnist"] != "0" * 64
    assert store.load(CFG) is not None
    env.unlink()
    with pytest.warns(DamagedRun, match=re.escape(str(env)) + ": missing"):
        assert store.load(CFG) is None
    with pytest.warns(DamagedRun, match="env.json: missing"):
        result = train(CFG, store, progress=False, after_round=_must_not_train)
    _served_is_clean(store, clean, result)
    assert json.loads(env.read_text())["data"]["mnist"] == json.loads(
        (clean[0].dir(CFG) / "env.json").read_text())["data"]["mnist"]


def test_a_stalled_writers_leftovers_resume_from_its_checkpoint(clean, tmp_path):
    # What a writer without the lock left behind: another's result.json (4 rounds) beside its own 2 rows and
    # round-2 checkpoint. The checkpoint proves itself: the run resumes after round 2.
    snap = tmp_path / "snapshot"

    def snapshot(r):
        if r == 2:
            shutil.copytree(writer.dir(CFG), snap)
    writer = RunStore(tmp_path / "writer")
    train(CFG, writer, progress=False, after_round=snapshot)
    store = _copy_of(clean, tmp_path / "store")
    for name in ("metrics.jsonl", "checkpoint.pt"):
        shutil.copy(snap / name, store.dir(CFG) / name)
    trained = []
    with pytest.warns(DamagedRun, match=r"metrics.jsonl: 2 rows, result.json says 4.*resuming after round 2"):
        result = train(CFG, store, progress=False, after_round=trained.append)
    assert trained == [3, 4]
    _served_is_clean(store, clean, result)


# --- corruptions of an interrupted run -------------------------------------------------------------
def _interrupted(tmp_path, cfg=CFG, after=2) -> RunStore:
    store = RunStore(tmp_path)
    with pytest.raises(Stop):
        train(cfg, store, progress=False, after_round=_stop_after(after))
    return store


def _set_round(path, value):
    ckpt = torch.load(path, weights_only=True)
    torch.save({**ckpt, "round": value}, path)


def _foreign_checkpoint(path):
    other = _interrupted(path.parent.parent / "other-seed", CFG.replace(seed=CFG.seed + 1))
    shutil.copy(other.dir(CFG.replace(seed=CFG.seed + 1)) / "checkpoint.pt", path)


def _edited_state(path):      # bytes changed as a pickle would not notice: a weight altered in place
    ckpt = torch.load(path, weights_only=True)
    ckpt["state"]["model"][next(iter(ckpt["state"]["model"]))].add_(1e-3)
    torch.save(ckpt, path)


INTERRUPTED = {
    "flipped bytes in checkpoint": (_flip_bytes, "checkpoint.pt: (unreadable|its server state does not match)"),
    "altered weight in checkpoint": (_edited_state, "checkpoint.pt: its server state does not match its digest"),
    "another seed's checkpoint": (_foreign_checkpoint, r"checkpoint.pt: belongs to run \w+ \(another config\)"),
    "checkpoint round set to 99": (lambda p: _set_round(p, 99), "checkpoint.pt: round 99, the config has 4 rounds"),
    "truncated checkpoint": (lambda p: p.write_bytes(p.read_bytes()[:5000]), "checkpoint.pt: unreadable"),
    "empty checkpoint": (lambda p: p.write_bytes(b""), "checkpoint.pt: unreadable"),
    "garbage checkpoint": (lambda p: p.write_bytes(b"PK\x03\x04 not a zip at all"), "checkpoint.pt: unreadable"),
}


@pytest.mark.parametrize("case", INTERRUPTED)
def test_a_damaged_checkpoint_is_not_resumed_but_moved_aside_and_rerun(case, clean, tmp_path):
    corrupt, says = INTERRUPTED[case]
    store = _interrupted(tmp_path / "store")
    corrupt(store.dir(CFG) / "checkpoint.pt")
    trained = []
    with pytest.warns(DamagedRun, match=says + ".*rerunning from round 1"):
        result = train(CFG, store, progress=False, after_round=trained.append)
    assert trained == [1, 2, 3, 4]
    assert (next(store.dir(CFG).glob("damaged-*")) / "checkpoint.pt").exists()
    _served_is_clean(store, clean, result)


def test_an_interrupted_run_cuts_metrics_to_its_checkpoint_and_removes_orphaned_temporary_files(clean, tmp_path):
    store = RunStore(tmp_path)
    d = store.dir(CFG)

    def snapshot_2_stop_3(r):
        if r == 2:
            shutil.copy(d / "checkpoint.pt", tmp_path / "checkpoint-2.pt")
        if r == 3:
            raise Stop
    with pytest.raises(Stop):
        train(CFG, store, progress=False, after_round=snapshot_2_stop_3)
    shutil.copy(tmp_path / "checkpoint-2.pt", d / "checkpoint.pt")    # rows 1-3 on disk, checkpoint at 2
    shutil.copy(d / "checkpoint.pt", d / ".checkpoint.pt.x1y2.tmp")   # a write killed before its rename
    trained = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamagedRun)                     # nothing here is damaged
        result = train(CFG, store, progress=False, after_round=trained.append)
    assert trained == [3, 4] and not list(d.glob(".*.tmp")) and not list(d.glob("damaged-*"))
    _served_is_clean(store, clean, result)


def test_finished_skips_and_names_damaged_runs(clean, tmp_path):
    store = _copy_of(clean, tmp_path)
    fake = CFG.replace(seed=5)
    fake_finished_run(store, fake, [row(r, 50.0) for r in range(1, 5)])
    (store.dir(fake) / "metrics.jsonl").write_text("not json\n")
    stray = tmp_path / "0123456789abcdef"
    stray.mkdir()
    (stray / "config.json").write_text(json.dumps(CFG.to_dict()))     # another run's config in this directory
    (stray / "result.json").write_text("{}")
    with pytest.warns(DamagedRun) as caught:
        found = store.finished(dataset="mnist")
    assert [r.config for r in found] == [CFG]
    named = " ".join(str(w.message) for w in caught)
    assert f"{store.dir(fake)}/metrics.jsonl: line 1 is not JSON" in named and f"{stray}/config.json" in named


def test_a_finished_runs_committed_records_are_served_without_its_checkpoint(clean, tmp_path):
    """What a batch commits (record_files: no checkpoint) is read back in a fresh clone, not retrained; only
    the final state needs the checkpoint, and final_state says so. An unfinished run has no records."""
    store = _copy_of(clean, tmp_path / "batch")
    unfinished = CFG.replace(seed=CFG.seed + 7)
    store.dir(unfinished).mkdir()
    (store.dir(unfinished) / "config.json").write_text(json.dumps(unfinished.to_dict()))
    files = record_files(store.root)
    assert sorted(f.name for f in files) == ["config.json", "env.json", "metrics.jsonl", "result.json"]
    assert {f.parent.name for f in files} == {CFG.run_id}
    clone = RunStore(tmp_path / "clone")
    for f in files:
        (clone.root / f.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(f, clone.root / f.parent.name / f.name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # served as it is: no DamagedRun
        result = train(CFG, clone, progress=False, after_round=_must_not_train)
    _served_is_clean(clone, clean, result)
    with pytest.raises(FileNotFoundError, match=r"records only \(no checkpoint.pt.*run it again"):
        clone.final_state(CFG)
    (clone.dir(CFG) / "checkpoint.pt").write_bytes(b"not the checkpoint it was written with")
    with pytest.warns(DamagedRun, match="checkpoint.pt: not the checkpoint"):
        assert clone.load(CFG) is None           # a checkpoint that is there must still prove itself


def test_final_state_is_the_checked_checkpoint(clean):
    store, result = clean
    state = store.final_state(CFG)
    from fssl_core.engine.federation import Federation
    assert Federation.build(CFG).evaluate(state["model"]) == result.accuracy


def test_a_run_stored_without_digests_is_not_served_but_moved_aside_and_rerun(clean, tmp_path):
    """No compatibility path for an older store: its files prove nothing, so the run is trained again."""
    store = _copy_of(clean, tmp_path)
    d = store.dir(CFG)
    ckpt = torch.load(d / "checkpoint.pt", weights_only=True)
    torch.save({"round": ckpt["round"], "state": ckpt["state"], "metrics": ckpt["metrics"]}, d / "checkpoint.pt")
    old = json.loads((d / "result.json").read_text())
    for key in ("digest", "config_hash", "metrics_digest", "checkpoint_sha256", "chance_accuracy"):
        old.pop(key)
    (d / "result.json").write_text(json.dumps(old))
    with pytest.warns(DamagedRun):
        assert store.load(CFG) is None
    with pytest.warns(DamagedRun, match=r"result.json: carries no digest.*rerunning from round 1"):
        result = train(CFG, store, progress=False)
    _served_is_clean(store, clean, result)
    assert list(d.glob("damaged-*/result.json"))                   # moved aside, never deleted


def test_run_identity_is_pinned():
    # stored runs are keyed by run_id: these values change only with a revision bump (run_config.ENGINE_REVISION,
    # Algorithm.revision) or a config field's change; update them then, on purpose
    assert RunConfig().run_id == "b38dab43ee12f371"
    assert RunConfig(dataset="mnist", rounds=3, seed=7, checkpoint_every=4).run_id == "a17cf909baa07cb5"
    assert RunConfig(seed=7).identity_hash.startswith(RunConfig(seed=7).run_id)


# --- one writer per run --------------------------------------------------------------------------
LONG = CFG.replace(rounds=150)     # long enough that the other executor finds the lock held


def test_two_processes_executing_one_config_train_it_once(tmp_path, capfd):
    # this process and a spawned one start executing the same config at once (a barrier); whichever
    # takes the run's lock first trains, the other waits and reads the result back
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    root, log = str(tmp_path / "runs"), str(tmp_path / "rounds.log")
    other = ctx.Process(target=execute_and_log_rounds, args=(root, LONG.to_dict(), log, barrier, results))
    other.start()
    try:
        execute_and_log_rounds(root, LONG.to_dict(), log, barrier, results)
        got = [results.get(timeout=120) for _ in range(2)]
    finally:
        other.join(timeout=60)
        other.kill()
    lines = [line.split() for line in (tmp_path / "rounds.log").read_text().splitlines()]
    assert [int(r) for _, r in lines] == list(range(1, LONG.rounds + 1))      # every round trained once...
    assert len({pid for pid, _ in lines}) == 1                                 # ...by one process
    assert {pid for pid, _ in got} == {os.getpid(), other.pid}
    assert got[0][1] == got[1][1]                                              # the other read it back
    assert "is running this run; waiting for it to finish" in capfd.readouterr().err


def _writer_script(root, cfg, then):
    return textwrap.dedent(f"""
        import os, signal
        from fssl_core.run_config import RunConfig
        from fssl_core.store import RunStore
        from fssl_core.engine.trainer import train
        cfg = RunConfig.from_dict({cfg.to_dict()!r})
        def then(r):
            {then}
        train(cfg, RunStore({str(root)!r}), progress=False, after_round=then)
    """)


def _wait_for_rows(path, n, process, deadline=60):
    end = time.time() + deadline
    while time.time() < end and process.poll() is None:
        try:
            if len(path.read_text().splitlines()) >= n:
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError(f"{path} never reached {n} rows (writer exit code {process.poll()})")


def test_a_stalled_writer_holds_the_run_until_it_dies_and_the_next_resumes_from_its_checkpoint(clean, tmp_path, capfd):
    store = RunStore(tmp_path)
    stalls = subprocess.Popen([sys.executable, "-c", _writer_script(
        tmp_path, CFG, "if r == 2: os.kill(os.getpid(), signal.SIGSTOP)")])
    try:
        _wait_for_rows(store.dir(CFG) / "metrics.jsonl", 2, stalls)
        threading.Timer(1.0, stalls.kill).start()          # it dies while the next executor waits for it
        trained = []
        result = train(CFG, store, progress=False, after_round=trained.append)
    finally:
        stalls.kill()
        stalls.wait()
    assert "waiting for it to finish" in capfd.readouterr().err
    assert trained == [3, 4]
    _served_is_clean(store, clean, result)


# --- kill -9 mid-run -------------------------------------------------------------------------------
@pytest.mark.parametrize("trainer", ["cohort", "sequential"])
def test_a_run_killed_mid_round_resumes_bit_identical(trainer, tmp_path):
    cfg = CFG.replace(rounds=100, trainer=trainer)
    store = RunStore(tmp_path / "killed")
    writer = subprocess.Popen([sys.executable, "-c", _writer_script(tmp_path / "killed", cfg, "pass")])
    try:
        reference = train(cfg, RunStore(tmp_path / "reference"), progress=False)   # while the writer starts
        _wait_for_rows(store.dir(cfg) / "metrics.jsonl", 20, writer)
        writer.send_signal(signal.SIGKILL)
    finally:
        writer.kill()
        writer.wait()
    assert store.load(cfg) is None
    trained = []
    resumed = train(cfg, store, progress=False, after_round=trained.append)
    assert 20 <= trained[0] < cfg.rounds
    assert _without_timing(resumed.metrics) == _without_timing(reference.metrics)
    assert resumed.accuracy == reference.accuracy
    assert not list(store.dir(cfg).glob(".*.tmp")) and not list(store.dir(cfg).glob("damaged-*"))


# --- status ------------------------------------------------------------------------------------------
def test_a_finite_blow_up_at_chance_is_not_ok_but_keeps_its_value(tmp_path, monkeypatch):
    rows = [row(1, 30.0), row(2, 8.9)]
    assert summarize(CFG, rows, "ok", 0, tmp_path, num_classes=10)["status"] == "at-chance"
    assert summarize(CFG, rows[:1], "ok", 0, tmp_path, num_classes=10)["status"] == "ok"      # 30% > 15%
    assert summarize(CFG, [row(1, 15.0)], "ok", 0, tmp_path, num_classes=10)["status"] == "at-chance"
    assert summarize(CFG, [row(1, 15.0)], "ok", 0, tmp_path, num_classes=100)["status"] == "ok"  # CIFAR-100: 1%
    diverged = summarize(CFG, rows, "diverged", 0, tmp_path, num_classes=10)
    assert diverged["status"] == "diverged" and diverged["accuracy"] is None
    # the report shows an at-chance run's value and flags its row
    from fssl_core.profiles import PROFILES
    from fssl_core.job.cells import reproduce_cells
    from fssl_core.report.tables import Cell
    monkeypatch.setattr("fssl_core.job.cells.dataset_available", lambda name: True)
    store = RunStore(tmp_path / "runs")
    a, b = CFG.replace(rounds=2, seed=1), CFG.replace(rounds=2, seed=2)
    fake_finished_run(store, a, rows)
    fake_finished_run(store, b, [row(1, 40.0), row(2, 90.0)])
    cells = [Cell("fedsiam", "table5", "iid", "0.10", "mnist", "fedavg", (c,)) for c in (a, b)]
    frame = reproduce_cells(cells, PROFILES["quick"], "cpu", store=store, progress=False)
    assert frame.reproduced_value.tolist() == [8.9, 90.0]
    assert frame.status.tolist() == ["at-chance", "reduced"]


def test_a_config_written_by_a_newer_version_with_a_field_this_one_lacks_is_read_back(clean, tmp_path):
    # a long batch started before a field was added shares the store with a newer process, which
    # writes every field; at its default the new field leaves the run id alone, so the run is the same
    store = _copy_of(clean, tmp_path)
    _edit_json(store.dir(CFG) / "config.json", a_field_from_a_newer_version="its default")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamagedRun)
        assert store.load(CFG) is not None
        result = train(CFG, store, progress=False, after_round=_must_not_train)
    _served_is_clean(store, clean, result)


# --- what the store will not open: links, FIFOs, records nested or sized past reason --------------
def test_a_lock_file_that_is_a_link_is_refused_and_its_target_left_alone(clean, tmp_path):
    from fssl_core.store import StoreIOError
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    store = RunStore(tmp_path / "runs")
    store.dir(CFG).mkdir(parents=True)
    (store.dir(CFG) / ".lock").symlink_to(target)
    with pytest.raises(StoreIOError, match=r"\.lock: a symbolic link where the lock file belongs; the store follows no link"):
        train(CFG, store, progress=False)
    assert target.read_text() == "keep me\n"


def test_a_run_directory_that_is_a_link_is_refused_and_the_other_run_left_alone(clean, tmp_path):
    from fssl_core.store import StoreIOError
    store = _copy_of(clean, tmp_path)
    other = CFG.replace(seed=5)
    before = {p.name: p.read_bytes() for p in store.dir(CFG).iterdir() if p.is_file()}
    store.dir(other).symlink_to(store.dir(CFG), target_is_directory=True)
    with pytest.raises(StoreIOError, match="a symbolic link where run .* directory belongs"):
        train(other, store, progress=False)
    assert {p.name: p.read_bytes() for p in store.dir(CFG).iterdir() if p.is_file()} == before
    with pytest.warns(DamagedRun, match="a symbolic link where a run's directory belongs"):
        assert [r.config for r in store.finished()] == [CFG]


@pytest.mark.parametrize("name", ["result.json", "checkpoint.pt"])
def test_a_fifo_in_place_of_a_run_file_is_named_and_moved_aside_without_blocking(name, clean, tmp_path):
    store = _copy_of(clean, tmp_path)
    (store.dir(CFG) / name).unlink()
    os.mkfifo(store.dir(CFG) / name)
    with pytest.warns(DamagedRun, match=f"{name}: unreadable: a FIFO, not a file of the run"):
        result = train(CFG, store, progress=False)
    _served_is_clean(store, clean, result)
    assert list(store.dir(CFG).glob(f"damaged-*/{name}"))


@pytest.mark.parametrize("text,said", [("[" * 200_000, "nested too deeply"),
                                       ('{"accuracy": ' + "9" * 5000 + "}", "not JSON this store reads")])
def test_a_record_nested_or_sized_past_reason_is_damage_and_the_others_still_list(text, said, clean, tmp_path):
    store = _copy_of(clean, tmp_path)
    broken = CFG.replace(seed=5)
    fake_finished_run(store, broken, [row(r, 50.0) for r in range(1, 5)])
    (store.dir(broken) / "result.json").write_text(text)
    with pytest.warns(DamagedRun, match=said):
        assert [r.config for r in store.finished()] == [CFG]
    assert [p.parent.name for p in record_files(store.root) if p.name == "result.json"] == [CFG.run_id]
