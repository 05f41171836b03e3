"""The trainer owns the rounds: runs of one batch key train in lockstep, their clients in one cohort, and
each run of a batch gives its solo run's numbers (cohort tolerance), records and identity; a run that
diverges or an interrupt harms none of its neighbours."""
import json
import re

import pytest
import torch

from fssl_core.engine import federation as engine
from fssl_core.run_config import RunConfig
from fssl_core.perf.gpu_check import COHORT_CASES, COHORT_SERVER, COHORT_SMALL
from fssl_core.store import DIVERGED, OK, RunStore
from fssl_core.engine.trainer import (BATCH_CAP, ROLE_COPIES, batch_key, batch_size, network_size,
                               plan_batches, run_bytes, train, train_batch)
from fssl_core.learning.training import Diverged

from .conftest import requires_mnist

SMALL = {**COHORT_SMALL, "eval_every": 1}
ALGORITHMS_WITH_A_COHORT = sorted({"fedavg", "fedavg_plus", "fedsiam_pi", "fedsiam_mt", "fedsiam_d", "fedsiam_nosiam",
                                   "fedsem", "fedfixmatch", "fedmatch", "fedmix", "fedcon"})


def batch_of_three(algorithm: str) -> list[RunConfig]:
    """Three runs of one batch key that differ in seed, split and labeled ratio (the settings of
    COHORT_CASES, which make the clients of a round unequal)."""
    extra = next((dict(e) for a, _, e in COHORT_CASES if a == algorithm), {})
    extra.pop("_helper_interval", None)
    if algorithm in ("fedmix", "fedcon"):       # labels at the server
        extra = {**COHORT_SERVER, **extra}
        splits = [{}, {"seed": 21, "dirichlet_alpha": 0.5}, {"seed": 22, "server_labeled": 300}]
    else:
        splits = [{}, {"seed": 21, "partition": "noniid1", "rich_clients": 10}, {"seed": 22, "labeled_ratio": 0.15}]
    base = RunConfig(algorithm=algorithm, **{**SMALL, **extra})
    return [base.replace(**split) for split in splits]


def assert_same_run(solo, batched, store_solo, store_batch):
    """The same run id, status, final tensors and round metrics, bit for bit (but the wall time)."""
    assert solo.config.run_id == batched.config.run_id and solo.status == batched.status != DIVERGED
    a, b = store_solo.final_state(solo.config), store_batch.final_state(batched.config)
    for role in a:
        if not isinstance(a[role], dict):
            continue
        for k in a[role]:
            if torch.is_tensor(a[role][k]):
                assert torch.equal(a[role][k], b[role][k]), (role, k, (a[role][k] - b[role][k]).abs().max())
    timeless = [[{k: v for k, v in m.items() if k != "seconds"} for m in r.metrics] for r in (solo, batched)]
    assert timeless[0] == timeless[1]


@requires_mnist
@pytest.mark.parametrize("algorithm", ALGORITHMS_WITH_A_COHORT)
def test_each_run_of_a_batch_equals_its_solo_run(algorithm, tmp_path):
    """Companion-independent, bit for bit: each run alone, beside a partner of another labeled ratio (whose
    clients share its batch shapes and whose re-picked clients take the other clock path), and in a batch of 4."""
    configs = batch_of_three(algorithm)
    four = [configs[0].replace(seed=23), configs[1], configs[0], configs[2]]
    assert len(plan_batches(four, 8)) == 1
    solo_store, pair_store, batch_store = (RunStore(tmp_path / name) for name in ("solo", "pair", "batch"))
    solo = [train(cfg, solo_store, progress=False) for cfg in configs]
    pair = train_batch([configs[2], configs[0]], pair_store, progress=False)
    rounds_seen = []
    batched = train_batch(four, batch_store, progress=False,
                          after_round=lambda cfg, r: rounds_seen.append((cfg.run_id, r)))
    # lockstep: round 1 of every run before any run's round 2
    assert [r for _, r in rounds_seen] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert_same_run(solo[0], pair[1], solo_store, pair_store)
    assert_same_run(solo[2], pair[0], solo_store, pair_store)
    for s, b in zip(solo, [batched[2], batched[1], batched[3]]):
        assert_same_run(s, b, solo_store, batch_store)
        env = json.loads((batch_store.dir(b.config) / "env.json").read_text())
        assert env["batch"] == 4 and "batch" not in json.loads((solo_store.dir(s.config) / "env.json").read_text())
        config_files = [(st.dir(r.config) / "config.json").read_text() for st, r in ((solo_store, s), (batch_store, b))]
        assert config_files[0] == config_files[1]


def test_a_cohort_never_groups_two_runs_clients():
    """run_groups: clients of one shape and one run share a group; another run's clients of that shape do not."""
    from fssl_core.learning.cohort import run_groups
    shapes = [(10, 0, 5), (10, 0, 5), (10, 0, 5), (10, 0, 4)]
    assert run_groups([0, 1, 2, 3], shapes, owners=[0, 0, 1, 1]) == {
        (10, 0, 5, 0): [0, 1], (10, 0, 5, 1): [2], (10, 0, 4, 1): [3]}


def test_the_batch_rule_frees_the_seed_and_the_split_only():
    base = RunConfig(algorithm="fedsiam_d", **COHORT_SMALL)
    same = [base, base.replace(seed=2), base.replace(partition="noniid1", rich_clients=10), base.replace(labeled_ratio=0.15),
            base.replace(seed=3, partition="iid", rich_clients=10, labeled_ratio=0.2)]
    other = [base.replace(lr=0.02), base.replace(algorithm="fedsiam_mt"), base.replace(rounds=3),
             base.replace(batch_size=20), base.replace(model="cnn_mnist_authors")]
    assert len({batch_key(c) for c in same}) == 1
    assert all(batch_key(c) != batch_key(base) for c in other)
    # a re-split data set's images depend on the seed: runs of other seeds are not batched together
    small = base.replace(resplit_train=5000, resplit_test=1000, clients=50, rich_clients=5)
    assert batch_key(small) != batch_key(small.replace(seed=99))
    assert batch_key(small) == batch_key(small.replace(labeled_ratio=0.2))
    # FedMix and FedCon batch on the CPU, not on CUDA (trainer.SOLO_ON_CUDA: their CUDA cohort is in doubt)
    fedmix = RunConfig(algorithm="fedmix", **{**COHORT_SMALL, **COHORT_SERVER})
    assert batch_key(fedmix) == batch_key(fedmix.replace(seed=5))
    on_cuda = fedmix.replace(device="cuda")
    assert batch_key(on_cuda) != batch_key(on_cuda.replace(seed=5))
    assert batch_key(base.replace(device="cuda")) == batch_key(base.replace(device="cuda", seed=5))
    planned = plan_batches(same + other, size=2)
    assert [len(b) for b in planned] == [2, 2, 1, 1, 1, 1, 1, 1]
    assert sorted(c.run_id for b in planned for c in b) == sorted(c.run_id for c in same + other)
    with pytest.raises(ValueError, match="several batch keys"):
        train_batch([base, base.replace(lr=0.02)], RunStore("/nonexistent-not-used"), progress=False)


def test_the_memory_model_of_a_batch():
    cfg = RunConfig(algorithm="fedsiam_d", dataset="mnist")
    parameters, activations = network_size(cfg)
    # what the MNIST CNN's forward keeps for backward, by hand: conv1's input (784), its max-pool's input
    # (10·24·24) and indices (10·12·12), the ReLU's output (10·12·12), conv2's max-pool's input (20·8·8) and
    # indices (20·4·4), its ReLU's output (320, which fc1 reads as a view), fc1's ReLU's output (50)
    assert (parameters, activations) == (21840, 784 + 5760 + 1440 + 1440 + 1280 + 320 + 320 + 50)
    expected = (cfg.clients_per_round * ROLE_COPIES * parameters * 4
                + cfg.clients_per_round * 4 * 2 * cfg.batch_size * activations * 4)
    assert run_bytes(cfg, parameters, activations) == expected
    per_run = run_bytes(cfg, parameters, activations)
    assert batch_size(cfg, parameters, activations, memory_bytes=10 * per_run) == 5      # half the memory
    assert batch_size(cfg, parameters, activations, memory_bytes=per_run) == 1           # never below one run
    assert batch_size(cfg, parameters, activations, memory_bytes=80 * 2**30) == BATCH_CAP
    assert batch_size(cfg, parameters, activations, memory_bytes=80 * 2**30, cap=16) == 16


@requires_mnist
def test_a_run_diverging_in_a_batch_harms_none_of_the_others(tmp_path, monkeypatch):
    configs = batch_of_three("fedavg")
    poisoned = configs[1].seed
    real = engine._train_cohort

    def diverging(feds, rounds, round):      # run `poisoned` diverges in round 2, wherever it trains
        if round == 2 and any(f.cfg.seed == poisoned for f in feds):
            raise Diverged("loss=nan in round 2")
        return real(feds, rounds, round)

    monkeypatch.setattr(engine, "_train_cohort", diverging)
    batched = train_batch(configs, RunStore(tmp_path / "batch"), progress=False)
    monkeypatch.setattr(engine, "_train_cohort", real)
    solo_store = RunStore(tmp_path / "solo")
    assert batched[1].status == DIVERGED and batched[1].summary["diverged"]["round"] == 2
    assert len(batched[1].metrics) == 1
    for i in (0, 2):
        assert_same_run(train(configs[i], solo_store, progress=False), batched[i], solo_store, RunStore(tmp_path / "batch"))


@requires_mnist
def test_an_interrupted_batch_resumes_to_the_uninterrupted_numbers(tmp_path):
    configs = [c.replace(rounds=3) for c in batch_of_three("fedsiam_d")]
    whole = train_batch(configs, RunStore(tmp_path / "whole"), progress=False)

    def stop(cfg, r):
        if r == 2 and cfg.run_id == configs[1].run_id:
            raise KeyboardInterrupt

    store = RunStore(tmp_path / "cut")
    with pytest.raises(KeyboardInterrupt):
        train_batch(configs, store, progress=False, after_round=stop)
    # the interrupt came after run 0's and run 1's round 2 were recorded, before run 2's
    assert [len((store.dir(c) / "metrics.jsonl").read_text().splitlines()) for c in configs] == [2, 2, 1]
    trained = []
    resumed = train_batch(configs, store, progress=False, after_round=lambda cfg, r: trained.append(r))
    assert sorted(trained) == [2, 3, 3, 3]       # run 2 redoes round 2 alone, then all three take round 3
    def rows(result):
        return [{k: v for k, v in m.items() if k != "seconds"} for m in result.metrics]

    # runs 0 and 1 took every round in the same company as uninterrupted: the same numbers, bit for bit
    assert rows(whole[0]) == rows(resumed[0]) and rows(whole[1]) == rows(resumed[1])
    # run 2 took round 2 alone: the cohort tolerance
    assert_same_run(whole[2], resumed[2], RunStore(tmp_path / "whole"), store)


@requires_mnist
def test_the_local_executor_trains_a_batch_key_as_one_batch(tmp_path, monkeypatch):
    from fssl_core.executors import run_all
    from fssl_core.executors.local import LocalExecutor
    configs = batch_of_three("fedavg")
    store = RunStore(tmp_path)
    results = run_all(configs + [configs[0]], store, progress=False, executor=LocalExecutor(workers=1, batch=2))
    assert [r.config.run_id for r in results] == [c.run_id for c in configs + [configs[0]]]
    batches = sorted(json.loads((store.dir(c) / "env.json").read_text()).get("batch", 1) for c in configs)
    assert batches == [1, 2, 2]             # three runs of one key, at most two a batch


def test_fssl_batch_is_a_whole_number(monkeypatch):
    from fssl_core.config import ConfigError
    from fssl_core.executors import default_batch
    cpu = [RunConfig(**COHORT_SMALL)]
    assert default_batch(cpu) == 1
    monkeypatch.setenv("FSSL_BATCH", "16")
    assert default_batch(cpu) == 16
    for bad in ("0", "abc", "2.5", "-3"):
        monkeypatch.setenv("FSSL_BATCH", bad)
        with pytest.raises(ConfigError, match=f"FSSL_BATCH='{re.escape(bad)}': must be a whole number"):
            default_batch(cpu)


def test_the_readme_runs_per_hour_table_is_drawn_from_its_records():
    from fssl_core.perf.bench_batches import README_END, README_START, readme_block, records
    from fssl_core.paths import project_root
    found = records()
    assert any(r["size"] == "full" and r["machine"]["device"] == "cpu" for r in found)
    for page in ("README.md", "docs/speed.md"):
        text = (project_root() / page).read_text()
        block = text[text.index(README_START) + len(README_START):text.index(README_END)].strip()
        assert block == readme_block(found), page
    for rec in found:            # each row's runs per hour is its round's seconds, scaled to 50 rounds
        for row in rec["rows"]:
            assert row["runs_per_hour"] == pytest.approx(row["runs"] * 3600 / (row["round_s"] * 50), rel=1e-3, abs=0.051)
