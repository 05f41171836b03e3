"""bench cases=runs_per_hour (perf/bench_batches.py): the baseline 1 × 1 is measured first, the record is on disk
after every level (a timeout keeps what finished), each level carries the memory model's bytes beside its
measured peak, and the store's writes are counted."""
import json

import pytest

from fssl_core.config import ConfigError
from fssl_core.engine.trainer import batch_key, network_size, run_bytes
from fssl_core.perf import bench_batches
from fssl_core.perf.bench_batches import RECORD, configs, measure, plan_levels
from fssl_core.store.files import atomic_write_text, tally_writes

from .conftest import requires_mnist

TINY = {"cases": "runs_per_hour", "device": "cpu", "size": "tiny", "batches": "2,4", "processes": "2", "mixes": "2x2"}


def test_the_process_baseline_comes_first_then_batches_processes_and_mixes():
    assert plan_levels((2, 16), (2,), ((4, 16),)) == [("baseline", 1, 1), ("batch", 1, 2), ("batch", 1, 16),
                                                      ("processes", 2, 1), ("mix", 4, 16)]
    # a level given twice (a batch of 1 is the baseline; a mix 2x1 is 2 processes) is measured once, where it first comes
    assert plan_levels((1, 2), (2,), ((2, 1), (1, 2), (2, 2))) == [("baseline", 1, 1), ("batch", 1, 2),
                                                                   ("processes", 2, 1), ("mix", 2, 2)]


def fake_level(seen: list, out_dir):
    """A run_level that checks the record on disk holds every level before it, and measures nothing: a process's
    round takes 0.5 s a run of its batch, its peak is 1000 + 100 bytes a run, round 2 writes a checkpoint and a row
    per run."""
    def run_level(batches, root):
        rows = json.loads((out_dir / RECORD).read_text())["rows"]
        assert [(r["processes"], r["batch"]) for r in rows] == seen      # written after each level, before the next
        seen.append((len(batches), len(batches[0])))
        b = len(batches[0])
        return [{"round_s": 0.5 * b, "writes": 2 * b, "bytes": 300 * b, "write_s": 0.01 * b,
                 "by_name": {"checkpoint.pt": [b, 290 * b], "metrics.jsonl": [b, 10 * b]}, "level_writes": 9 * b,
                 "level_bytes": 1000 * b, "peak_over": "round 2", "peak_bytes": 1000 + 100 * b} for _ in batches]
    return run_level


def test_the_record_holds_every_finished_level_after_each_level(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(bench_batches, "run_level", fake_level(seen, tmp_path))
    rows = bench_batches.main({**TINY, "out": str(tmp_path)})
    assert seen == [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2)]
    record = json.loads((tmp_path / RECORD).read_text())
    assert record["complete"] and record["levels"] == ["1x1", "1x2", "1x4", "2x1", "2x2"]
    assert record["rows"] == rows and record["checkpoint_every"] == 1
    mix = rows[-1]         # 2 processes × 2 runs: their writes summed, the slowest process's round
    assert (mix["runs"], mix["round_s"], mix["store_writes"], mix["store_files"]["checkpoint.pt"]) == (4, 1.0, 8, [4, 1160])
    assert mix["runs_per_hour"] == pytest.approx(4 * 3600 / (1.0 * 50), abs=0.05)
    assert mix["vs_one_run"] == pytest.approx(mix["runs_per_hour"] / rows[0]["runs_per_hour"], abs=0.01)


def test_a_cut_measurement_leaves_the_levels_it_finished(tmp_path, monkeypatch):
    seen = []
    level = fake_level(seen, tmp_path)

    def cut_at_the_third(batches, root):
        if len(seen) == 2:
            raise KeyboardInterrupt("signal 15")       # what `timeout` is turned into (sigterm_as_interrupt)
        return level(batches, root)
    monkeypatch.setattr(bench_batches, "run_level", cut_at_the_third)
    with pytest.raises(SystemExit, match="130"):
        bench_batches.main({**TINY, "out": str(tmp_path)})
    record = json.loads((tmp_path / RECORD).read_text())
    assert not record["complete"]
    assert [(r["way"], r["processes"], r["batch"]) for r in record["rows"]] == [("baseline", 1, 1), ("batch", 1, 2)]


def test_each_level_sets_the_memory_models_bytes_beside_its_peak(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_batches, "run_level", fake_level([], tmp_path))
    rows = bench_batches.main({**TINY, "out": str(tmp_path)})
    cfg = configs("tiny", "cpu", 1)[0]
    per_run = run_bytes(cfg, *network_size(cfg))
    assert network_size(cfg) == (21_840, 11_394)         # the MNIST CNN (tests/test_trainer.py counts it by hand)
    record = json.loads((tmp_path / RECORD).read_text())
    assert record["memory_model"]["bytes_per_run"] == per_run
    for r in rows:          # the model's bytes for one process's batch, beside that process's peak
        assert r["model_bytes"] == r["batch"] * per_run and r["peak_bytes"] == 1000 + 100 * r["batch"]
    # the peak beyond the baseline's, a run beyond the first: (1000 + 100 b - 1100) / (b - 1) = 100
    assert [r.get("peak_per_added_run") for r in rows] == [None, 100, 100, None, 100]


@pytest.mark.parametrize("bad", ["4x", "4", "4x0", "ax2", "4x16x2", "4×16", "4x16,"])
def test_a_mix_is_processes_x_batch(bad):
    with pytest.raises(ConfigError, match=f"^bench: mixes='{bad}': must be processes x batch pairs, e.g. mixes=4x16"):
        bench_batches.main({"cases": "runs_per_hour", "mixes": bad})


def test_the_store_counts_its_writes_while_a_tally_is_open(tmp_path):
    atomic_write_text(tmp_path / "before.json", "x" * 7)
    with tally_writes() as tally:
        atomic_write_text(tmp_path / "a.json", "x" * 10)
        atomic_write_text(tmp_path / "a.json", "x" * 30)
        atomic_write_text(tmp_path / "b.txt", "y" * 5)
    atomic_write_text(tmp_path / "after.json", "x" * 11)
    assert (tally.writes, tally.bytes, tally.by_name) == (3, 45, {"a.json": [2, 40], "b.txt": [1, 5]})
    assert tally.seconds > 0


@requires_mnist
def test_a_real_level_trains_into_a_store_and_counts_its_checkpoints():
    assert len({c.run_id for c in configs("tiny", "cpu", 3)}) == 3
    assert len({batch_key(c) for c in configs("tiny", "cpu", 3)}) == 1       # one batch
    assert len({batch_key(c) for c in configs("full", "cpu", 3)}) == 1
    rows = measure("tiny", "cpu", batches=(2,), processes=(), mixes=())
    assert [(r["way"], r["processes"], r["batch"]) for r in rows] == [("baseline", 1, 1), ("batch", 1, 2)]
    for r in rows:         # checkpoint_every = 1: round 2 writes each run's row and checkpoint
        assert r["round_s"] > 0 and r["peak_bytes"] > 0 and r["peak_over"] == "round 2"
        assert r["store_files"]["checkpoint.pt"][0] == r["store_files"]["metrics.jsonl"][0] == r["runs"]
    assert rows[0]["vs_one_run"] == 1.0
