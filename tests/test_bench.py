"""The benchmark's bookkeeping: interleaved rounds, the printed table and the README block."""
import io
import sys

import pytest
import torch

from fssl_core.perf import bench

from .conftest import requires_mnist


def test_rounds_are_interleaved_and_the_warm_up_round_is_not_counted(monkeypatch):
    clock = iter(range(0, 10_000, 1))
    calls = []
    cost = {"loop": 5, "cohort": 1}

    def trainer(name):
        def run(r):
            calls.append((name, r))
            for _ in range(cost[name] * (10 if r == 1 else 1)):     # round 1 is slow: warm-up
                next(clock)
        return run

    monkeypatch.setattr(bench.time, "perf_counter", lambda: next(clock))
    seconds = bench.interleaved_seconds({"loop": trainer("loop"), "cohort": trainer("cohort")}, 3, bench.torch.device("cpu"))
    assert calls == [("loop", 1), ("cohort", 1), ("loop", 2), ("cohort", 2), ("loop", 3), ("cohort", 3),
                     ("loop", 4), ("cohort", 4)]
    # each timed round reads the clock once more than the trainer ticks it
    assert seconds == {"loop": 6, "cohort": 2}


def test_the_table_and_the_readme_block(tmp_path, monkeypatch):
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- bench:start -->\nold\n<!-- bench:end -->\n<!-- results:start -->\nkeep\n<!-- results:end -->\n")
    rows = [{"case": "mnist_fedavg", "device_name": "cpu", "threads": 1, "loop_s": 2.0, "seq_s": 1.2, "cohort_s": 0.6,
             "cohort_vs_seq": 2.0, "cohort_vs_loop": 3.33, "round_gflop": 7.79, "cohort_tflops": 0.013},
            {"case": "cifar_fedsiam_d", "device_name": "NVIDIA H100 80GB HBM3", "threads": 1, "seq_s": 3.0,
             "cohort_s": 0.5, "cohort_vs_seq": 6.0, "round_gflop": 500.0, "cohort_tflops": 1.0, "peak_tflops": 67.0,
             "cohort_vs_flop_floor": 67.0}]
    table = bench.markdown(rows)
    assert "| mnist_fedavg | cpu (1 threads) | 2.0 | 1.2 | 0.6 | 2.0× | 3.33× | 7.79 | 0.013 | n/a | n/a | n/a | n/a | n/a | n/a |" in table
    assert ("| cifar_fedsiam_d | NVIDIA H100 80GB HBM3 (1 threads) | n/a | 3.0 | 0.5 | 6.0× | n/a | 500.0 | 1.0 | "
            "67.0× (peak 67.0) | n/a | n/a | n/a | n/a | n/a |") in table
    rows[0].update(matmul_gflops=89.0, cohort_of_matmul_pct=14.6, network_of_matmul_pct=36.0,
                   loop_ratio_ceiling=4.18, loop_ratio_at_peak=7.3, reference="mnist_fedsiam_d", cohort_vs_reference=1.54)
    assert bench.markdown_row(rows[0]).endswith("| 0.013 | n/a | 89.0 | 14.6 | 36.0 | 4.18× (7.3×) | 1.54× (mnist_fedsiam_d) |")
    assert table.splitlines()[0].count("|") == table.splitlines()[1].count("|") == 16
    from fssl_core.report.tables import replace_readme_block
    found = bench.record(rows[:1], "cpu", "cases=mnist_fedavg rounds=1", 0.25, 1.5)
    assert replace_readme_block(bench.README_START, bench.README_END, bench.readme_block(found))
    text = readme.read_text()
    assert "old" not in text and "keep" in text and "| mnist_fedavg |" in text
    assert "load average 0.25 before and 1.50 after" in text and "`python -m fssl_core bench device=cpu cases=" in text
    assert bench.device_peak_tflops("NVIDIA H100 80GB HBM3") == 67.0 and bench.device_peak_tflops("cpu") is None


def test_bad_options_are_refused_by_name():
    with pytest.raises(ValueError, match="unknown option"):
        bench.main({"device": "cpu", "round": "3"})
    with pytest.raises(ValueError, match="readme='maybe'"):
        bench.main({"readme": "maybe"})


def _fake_row(case, device, rounds):
    return {"case": case, "device": device, "device_name": "cpu", "threads": 1, "loop_s": 2.0, "seq_s": 1.0,
            "cohort_s": 0.5, "cohort_vs_seq": 2.0, "cohort_vs_loop": 4.0, "round_gflop": 7.79, "cohort_tflops": 0.016}


class _FlushedOut(io.StringIO):
    """stdout that remembers what had been flushed: what a terminal or a pipe would have shown."""
    flushed = ""

    def flush(self):
        self.flushed = self.getvalue()


def test_each_case_is_printed_as_soon_as_it_is_measured(monkeypatch):
    out = _FlushedOut()
    shown_when_started = {}

    def measure(case, device, rounds):
        shown_when_started[case] = out.flushed
        return _fake_row(case, device, rounds)

    monkeypatch.setattr(bench, "measure_case", measure)
    monkeypatch.setattr(bench.torch, "set_num_threads", lambda n: None)     # the test process keeps its threads
    monkeypatch.setattr(sys, "stdout", out)
    bench.main({"cases": "mnist_fedavg,mnist_fedsiam_d", "table": "yes"})
    first_row = bench.markdown_row(_fake_row("mnist_fedavg", "cpu", 3))
    before_first, before_second = shown_when_started["mnist_fedavg"], shown_when_started["mnist_fedsiam_d"]
    assert before_first.startswith("bench: mnist_fedavg, mnist_fedsiam_d on cpu, 1 thread; per case a warm-up round")
    assert before_first.endswith(bench.MARKDOWN_HEAD + "\n") and first_row not in before_first
    assert before_second.endswith(bench.MARKDOWN_HEAD + "\n" + first_row + "\n")
    # and the whole table once more at the end
    assert out.getvalue().endswith(bench.markdown([_fake_row(c, "cpu", 3) for c in ("mnist_fedavg", "mnist_fedsiam_d")])
                                   + "\n")


@pytest.mark.parametrize("pairs, cases, rounds", [
    ({}, bench.QUICK_CASES, bench.QUICK_ROUNDS),
    ({"rounds": "2"}, bench.QUICK_CASES, 2),
    ({"cases": "all"}, tuple(bench.CASES), 3),
    ({"cases": "cifar_fedavg,mnist_fedavg"}, ("cifar_fedavg", "mnist_fedavg"), 3),
])
def test_the_default_is_the_quick_set_and_all_is_every_case(monkeypatch, capsys, pairs, cases, rounds):
    calls = []
    monkeypatch.setattr(bench, "measure_case", lambda case, device, r: calls.append((case, r)) or _fake_row(case, device, r))
    monkeypatch.setattr(bench.torch, "set_num_threads", lambda n: None)
    bench.main(pairs)
    assert calls == [(case, rounds) for case in cases]
    assert bench.QUICK_CASES == ("mnist_fedavg", "mnist_fedsiam_d") and bench.QUICK_ROUNDS == 1


def test_the_quick_default_is_estimated_within_three_minutes():
    seconds, unknown = bench.estimate_seconds(bench.QUICK_CASES, bench.QUICK_ROUNDS, "cpu")
    assert not unknown and seconds <= 180
    assert bench.estimate_seconds(("mnist_fedavg",), 3, "cuda") == (0, ["mnist_fedavg"])


def test_an_unknown_case_is_refused_before_any_case_runs(monkeypatch):
    monkeypatch.setattr(bench, "measure_case", lambda *a: pytest.fail("a case ran"))
    with pytest.raises(ValueError, match="cases=mnist_fedsiam: must be all or among mnist_fedavg"):
        bench.main({"cases": "mnist_fedavg,mnist_fedsiam"})
    with pytest.raises(ValueError, match="rounds='0'"):
        bench.main({"rounds": "0"})


def test_the_matmul_peak_is_2n3_over_the_median_product_and_a_case_is_a_percentage_of_it(monkeypatch):
    ticks = iter([0,  10, 11,  20, 22,  30, 31,  40, 43])    # the warm-up (its start only), then products of 1, 2, 1, 3 s
    monkeypatch.setattr(bench.time, "perf_counter", lambda: next(ticks))
    assert bench.matmul_peak_gflops("cpu", n=10, repeats=4) == pytest.approx(2 * 10 ** 3 / 1.5 / 1e9)
    # 7.79 GFLOP in 0.6 s is 12.98 GFLOP/s: 14.6% of an 89 GFLOP/s core
    assert bench.of_peak(7.79e9, 0.6, 89.0) == (12.98, 14.6)


def _loop_config():
    from fssl_core.run_config import RunConfig
    return RunConfig(algorithm="fedavg", dataset="mnist", partition="iid", labeled_ratio=0.1, labeled_repeats=3,
                     clients=100, clients_per_round=2, local_epochs=2, batch_size=10, rounds=5, eval_every=5)


def _counted_sgd_steps(monkeypatch) -> list:
    """A list that grows by one at each torch.optim.SGD step (the papers' loop's optimiser)."""
    import torch
    steps, step = [], torch.optim.SGD.step
    monkeypatch.setattr(torch.optim.SGD, "step", lambda self, *a, **k: steps.append(1) or step(self, *a, **k))
    return steps


@requires_mnist
def test_the_papers_loop_takes_as_many_sgd_steps_a_round_as_the_engine(monkeypatch):
    # the loop is the denominator of the loop ratio: it must do the engine's work, labeled repeats included
    cfg, steps = _loop_config(), _counted_sgd_steps(monkeypatch)
    bench.loop_rounds(cfg)(1)
    fed = bench.Federation.build(cfg)
    algo_plan = [fed.algorithm.plan(fed.client_view(c, 1), 1) for c in fed.sample_clients(1)]
    expected = sum(plan.steps(fed.client_view(c, 1)) for plan, c in zip(algo_plan, fed.sample_clients(1)))
    assert len(steps) == expected == 2 * 2 * 3 * 6        # 2 clients × 2 epochs × 3 repeats × 60 labels / 10


@requires_mnist
def test_the_network_alone_is_the_cohorts_forward_and_backward_with_its_flops_counted_by_hand():
    # MNIST CNN, 10 clients x 10 images: forward conv1 2.88 + conv2 6.4 + fc1 0.32 + fc2 0.01 MFLOP a
    # client; backward twice that less conv1's input gradient (the images need none): 25.95 MFLOP a client
    from fssl_core.run_config import RunConfig
    cfg = RunConfig(algorithm="fedavg", dataset="mnist", partition="iid", labeled_ratio=0.1, clients=100,
                    clients_per_round=10, batch_size=10, rounds=1)
    flops, seconds = bench.network_alone(bench.Federation.build(cfg), steps=2)
    forward = 2.88e6 + 6.4e6 + 0.32e6 + 0.01e6
    backward = 2.88e6 + 2 * 6.4e6 + 2 * 0.32e6 + 2 * 0.01e6      # conv1: its weights' gradient only
    assert flops == pytest.approx(10 * (forward + backward)) == 259.5e6 and seconds > 0


def test_the_network_alone_trains_parameters_and_leaves_batchnorm_statistics_without_gradients():
    # the CIFAR CNN has BatchNorm: its running statistics are buffers, which batch_norm refuses to take with
    # requires_grad (the CIFAR bench cases raised on an H100, and on a CPU alike); its FLOPs are per client
    # the same as a plain forward and backward of one client's batch
    from torch.utils.flop_counter import FlopCounterMode

    from fssl_core.run_config import RunConfig
    cfg = RunConfig(algorithm="fedavg", dataset="synthetic_cifar10", partition="iid", labeled_ratio=0.1,
                    clients=20, clients_per_round=3, batch_size=4, rounds=1)
    fed = bench.Federation.build(cfg)
    assert any(isinstance(m, torch.nn.BatchNorm2d) for m in fed.ctx.model.modules())
    flops, seconds = bench.network_alone(fed, steps=1)
    images = fed.data.normalize(fed.data.train_x[:4].to(fed.ctx.device))
    with FlopCounterMode(display=False) as counter:
        fed.ctx.model(images).square().sum().backward()
    assert flops == 3 * counter.get_total_flops() > 0 and seconds > 0


def test_the_loop_ratio_ceiling_is_the_loop_over_a_round_at_the_network_alone_rate():
    # 25 GFLOP at 50 GFLOP/s take 0.5 s: a 2 s loop round is then 4x
    assert bench.loop_ratio_ceiling(loop_s=2.0, gflops=50.0, flops=25e9) == 4.0
    # at a 100 GFLOP/s matmul peak the same round could take no less than 0.25 s: no trainer beats 8x
    assert bench.loop_ratio_ceiling(loop_s=2.0, gflops=100.0, flops=25e9) == 8.0


# --- bounded time: a round's first steps, scaled; a budget over the cases --------------------------------
def test_a_trainer_timed_over_its_first_steps_is_scaled_to_its_round(monkeypatch):
    clock = iter(range(0, 10_000, 1))
    monkeypatch.setattr(bench.time, "perf_counter", lambda: next(clock))

    def prefix(r):            # one tick: a quarter of the round
        next(clock)
        return 1, 4
    prefixes = {}
    seconds = bench.interleaved_seconds({"cohort": prefix}, 2, bench.torch.device("cpu"), prefixes=prefixes)
    assert seconds == {"cohort": 2 * 4} and prefixes == {"cohort": (1, 4)}      # 2 ticks a timed round, × 4


@requires_mnist
@pytest.mark.parametrize("trainer", ["sequential", "cohort"])
def test_an_engine_round_cut_after_n_steps_runs_n_steps_of_the_round(trainer):
    from fssl_core.run_config import RunConfig
    cfg = RunConfig(algorithm="fedavg", dataset="mnist", partition="iid", labeled_ratio=0.1, clients=100,
                    clients_per_round=2, local_epochs=2, batch_size=10, rounds=5, eval_every=5, trainer=trainer)
    run = bench.engine_rounds(cfg, steps=3)
    steps = 2 * 6 if trainer == "cohort" else 2 * 2 * 6       # 2 epochs × 60 labels / 10, one client or two
    assert run(1) == (3, steps) and run(2) == (3, steps)
    assert bench.engine_rounds(cfg, steps=1000)(1) == (steps, steps)    # a round shorter than the steps runs whole
    assert bench.engine_rounds(cfg, steps=1000, seconds=0.0)(1) == (1, steps)    # out of time: one step, no fewer
    assert bench.engine_rounds(cfg)(1) is None


@requires_mnist
def test_the_papers_loop_cut_after_n_steps_takes_n_sgd_steps(monkeypatch):
    cfg, steps = _loop_config(), _counted_sgd_steps(monkeypatch)
    assert bench.loop_rounds(cfg, steps=40)(1) == (40, 2 * 2 * 3 * 6) and len(steps) == 40   # into the second client


def test_a_budget_leaves_out_the_cases_it_cannot_afford_and_cuda_is_bounded_by_default(monkeypatch, capsys):
    now = [0.0]
    monkeypatch.setattr(bench.time, "perf_counter", lambda: now[0])
    calls = []

    def measure(case, device, rounds, **bounds):            # each case takes 40 s
        calls.append((case, bounds))
        now[0] += 40
        return _fake_row(case, device, rounds)
    monkeypatch.setattr(bench, "measure_case", measure)
    monkeypatch.setattr(bench.torch, "set_num_threads", lambda n: None)
    # 100 s: the second case starts with 60 s left, the third would need 40 of the 20 left
    rows = bench.bench("cpu", 1, ("mnist_fedavg", "mnist_fedsiam_d", "cifar_fedavg"), steps={"loop": 5}, budget_s=100)
    assert [r["case"] for r in rows] == ["mnist_fedavg", "mnist_fedsiam_d"]
    assert calls[0][1] == {"steps": {"loop": 5}, "deadline": 100}
    calls.clear()
    now[0] = 0.0
    assert len(bench.bench("cuda", 1, tuple(bench.CASES))) == 4       # 180 s: four cases at 40 s, then 20 s left
    assert calls[0][1] == {"steps": bench.CUDA_STEPS, "deadline": bench.CUDA_BUDGET_S}
    now[0] = 0.0
    bench.main({"device": "cuda", "cases": "all"})
    out = capsys.readouterr().out
    assert "at most 180 s in all" in out and "not measured: mnist_fedmatch, mnist_authors_fedsiam_d" in out


def test_a_figure_timed_over_its_first_steps_says_so_in_its_row():
    row = {**_fake_row("mnist_fedsiam_d", "cuda", 3), "loop_steps": "200 of 3900", "cohort_steps": "50 of 390",
           "flops_steps": "20 of 3900"}
    text = bench.markdown_row(row)
    assert "| 2.0 (200 of 3900 steps, scaled) | 1.0 | 0.5 (50 of 390 steps, scaled) |" in text
    assert "| 7.79 (20 of 3900 steps, scaled) |" in text


def test_by_default_each_case_is_one_short_line_and_the_table_is_behind_a_flag(monkeypatch, capsys):
    monkeypatch.setattr(bench, "measure_case", lambda case, device, r: _fake_row(case, device, r))
    monkeypatch.setattr(bench.torch, "set_num_threads", lambda n: None)
    bench.main({"cases": "mnist_fedavg"})
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == ("mnist_fedavg on cpu (1 thread(s)): s/round loop 2.0, sequential 1.0, cohort 0.5 "
                        "(cohort 2.0× the sequential, 4.0× the loop)")
    assert len(lines) == 3 and lines[2].startswith("1 case(s) in ") and "table=yes" in lines[2]
    assert max(len(line) for line in lines[1:]) < 140 and bench.MARKDOWN_HEAD not in "\n".join(lines)
    with pytest.raises(ValueError, match="table='maybe': must be yes or no"):
        bench.main({"table": "maybe"})


def test_the_speed_pages_cpu_block_is_its_records_rendering():
    """docs/speed.md's measured CPU table is `bench readme=yes`'s record rendered: no figure typed in."""
    import json
    from fssl_core.paths import project_root
    page = (project_root() / "docs" / "speed.md").read_text()
    block = page[page.index(bench.README_START) + len(bench.README_START):page.index(bench.README_END)].strip()
    found = json.loads((project_root() / bench.CPU_RECORD).read_text())
    assert block == bench.readme_block(found).strip()


def test_host_draws_refuses_a_bad_option_by_name():
    with pytest.raises(ValueError, match="unknown option"):
        bench.main({"cases": "host_draws", "round": "3"})
    with pytest.raises(ValueError, match="algorithm='fedmix'"):
        bench.main({"cases": "host_draws", "algorithm": "fedmix"})
    with pytest.raises(ValueError, match="clients='0'"):
        bench.main({"cases": "host_draws", "clients": "0"})


@requires_mnist
def test_host_draws_times_both_ways_and_writes_benchs_record(tmp_path, monkeypatch, capsys):
    import json
    monkeypatch.setattr(bench.torch, "set_num_threads", lambda n: None)     # the test process keeps its threads
    out = tmp_path / "host_draws.json"
    bench.main({"cases": "host_draws", "clients": "2", "repeats": "1", "out": str(out)})
    assert "host µs per client-step (600 client-steps): per step" in capsys.readouterr().out
    found = json.loads(out.read_text())
    assert found["command"] == "python -m fssl_core bench device=cpu cases=host_draws clients=2 repeats=1"
    row = found["rows"][0]
    assert row["client_steps"] == 600 and row["per_step_us"] > 0 and row["per_round_us"] > 0
    assert row["fewer"] == round(row["per_step_us"] / row["per_round_us"], 2)
