"""bench cases=run_split (perf/bench_split.py): a run's time split into data, train, eval and store adds up to the
run's wall, counts one evaluation a round and the checkpoints its config asks for, and leaves the engine and the
store as it found them; bench dispatches the case and its options are checked."""
import pytest

from fssl_core.config import ConfigError
from fssl_core.engine import federation, trainer
from fssl_core.engine.federation import Federation
from fssl_core.perf import bench, bench_split
from fssl_core.run_config import RunConfig
from fssl_core.store import run_store
from fssl_core.store.run_store import RunRecorder

from .conftest import requires_mnist

SMALL = dict(bench.PROTOCOL, dataset="mnist", algorithm="fedavg", clients=10, resplit_train=2000, resplit_test=500)


@requires_mnist
@pytest.mark.parametrize("rounds,every,per_round", [(2, 1, [1, 1]), (3, 2, [0, 1, 1])])
def test_the_parts_add_up_to_the_wall_with_an_evaluation_a_round_and_the_checkpoints_asked(tmp_path, rounds, every,
                                                                                           per_round):
    owners = [(Federation, "build"), (Federation, "partition_of"), (Federation, "test_metrics"),
              (RunRecorder, "start"), (RunRecorder, "record_round"), (RunRecorder, "finish"),
              (trainer, "run_rounds_together"), (federation, "load_dataset"), (run_store, "save_checkpoint")]
    before = [owner.__dict__[name] for owner, name in owners]
    split = bench_split.measure_run(RunConfig(**SMALL, rounds=rounds, checkpoint_every=every), tmp_path)
    parts = [split[k] for k in ("data_s", "train_s", "eval_s", "store_s")]
    assert all(part > 0 for part in parts), parts
    assert abs(sum(parts) - split["wall_s"]) <= 0.1 * split["wall_s"], (parts, split["wall_s"])
    assert split["other_s"] >= 0                                     # the parts do not overlap
    assert split["data_s"] >= split["load_s"] + split["partition_s"] and split["load_s"] > 0
    # one evaluation a round, inside the round it belongs to
    assert split["eval_calls"] == rounds and [r["eval_calls"] for r in split["rounds"]] == [1] * rounds
    assert all(0 < r["eval_s"] < r["round_s"] and r["train_s"] > 0 for r in split["rounds"])
    # the checkpoints every `checkpoint_every` rounds and the last, each in its round's store time; round 0's at start
    assert [r["checkpoints"] for r in split["rounds"]] == per_round
    assert split["checkpoints_in_rounds"] == sum(per_round) and split["checkpoints"] == sum(per_round) + 1
    assert split["written"]["checkpoint.pt"]["writes"] == split["checkpoints"]
    assert split["written"]["result.json"]["writes"] == 1 and split["store_finish_s"] > 0
    assert all(r["store_s"] > 0 for r in split["rounds"])
    assert split["store_s"] >= sum(r["store_s"] for r in split["rounds"]) + split["store_start_s"]
    assert 0 < split["first"]["eval_share"] < 1 and 0 < split["steady"]["eval_share"] < 1
    # evaluation's batch size: each size timed, the run's own named, the run's last accuracy at every size
    batches = split["eval_batches"]
    assert set(batches["seconds"]) == set(bench_split.EVAL_BATCHES) and all(s > 0 for s in batches["seconds"].values())
    assert batches["fastest"] in bench_split.EVAL_BATCHES and batches["run_used"] == 1024
    assert {m["accuracy"] for m in batches["metrics"].values()} == {split["accuracy"]}
    assert [owner.__dict__[name] for owner, name in owners] == before       # every timer taken off again
    with pytest.raises(RuntimeError, match="rounds trained"):     # the run is now finished there: read back, not timed
        bench_split.measure_run(RunConfig(**SMALL, rounds=rounds, checkpoint_every=every), tmp_path)
    assert [owner.__dict__[name] for owner, name in owners] == before


@pytest.mark.parametrize("pairs,message", [({"bogus": "1"}, "unknown option"), ({"rounds": "0"}, "rounds="),
                                           ({"budget": "-5"}, "budget=")])
def test_the_options_are_checked_before_anything_is_measured(monkeypatch, pairs, message):
    monkeypatch.setattr(bench_split, "measure_imports", lambda: pytest.fail("measured despite a bad option"))
    with pytest.raises(ConfigError, match=message):
        bench_split.main({"cases": "run_split", **pairs}, bench.PROTOCOL, "cpu")


def test_bench_dispatches_the_case_with_its_protocol(monkeypatch):
    seen = []
    monkeypatch.setattr(bench, "run_split", lambda pairs, protocol, cpu: seen.append((pairs, protocol)))
    bench.main({"cases": "run_split", "rounds": "2"})
    assert seen == [({"cases": "run_split", "rounds": "2"}, bench.PROTOCOL)]
