"""The report: notebook CSVs merged into REPORT.md and the README's results section."""
from pathlib import Path
import math

import pandas as pd
import pytest

from fssl_core.papers import claim_comparisons, far_cell_causes
from fssl_core.profiles import PROFILES
from fssl_core.report.tables import COLUMNS, read_results, save_notebook_results
from fssl_core.report.page import merge_results


def _row(**values):
    base = {c: math.nan for c in COLUMNS}
    base.update(paper="fedsiam", table="table5", setting="iid", labeled="0.10", metric="accuracy",
                profile="quick", device="cpu", n_runs=0, seconds=0.0)
    base.update(values)
    return base


def _as_published(monkeypatch, root):
    """The notebooks' tables written where `reproduce` publishes them (a notebook run by hand writes under
    results/by_hand/ instead, paths.notebook_output_root): here the staging folder is the project itself."""
    monkeypatch.setenv("FSSL_OUTPUT_STAGING", str(root))


def test_merge_writes_deltas_needs_data_rows_and_the_readme_section(tmp_path, monkeypatch):
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    _as_published(monkeypatch, tmp_path)
    (tmp_path / "README.md").write_text("intro\n<!-- results:start -->\nOLD BLOCK\n<!-- results:end -->\nafter\n")
    frame = pd.DataFrame([
        _row(dataset="mnist", method="fedavg", paper_value=95.13, reproduced_value=96.94, n_runs=1,
             seconds=70.5, status="reduced"),
        _row(dataset="cifar10", method="fedavg", paper_value=49.14, status="needs-data"),
    ], columns=COLUMNS)
    path = save_notebook_results(frame, "fedsiam_table5", PROFILES["quick"])
    back = read_results(path)
    assert back.loc[0, "labeled"] == "0.10" and math.isnan(back.loc[1, "reproduced_value"])

    report = merge_results("quick", {"fedsiam_table5": 71.0}, far_cell_causes=far_cell_causes(),
                           claim_comparisons=claim_comparisons()).read_text()
    assert "| iid | 0.10 | mnist | fedavg | accuracy | 95.13 | 96.94 |  | 1.81 | 1 | quick | cpu | reduced |" in report
    assert "cifar10 | fedavg" not in report                      # needs-data rows: one line per table
    assert ("1 row(s) need data not on the measuring machine: cifar10 (1). Where the data are ($FSSL_DATA, or "
            "downloaded by torchvision when online), `python -m fssl_core reproduce --only fedsiam_table5 --profile "
            "quick` fills them.") in report
    assert "| fedsiam_table5 | 71 |" in report
    readme = (tmp_path / "README.md").read_text()
    assert readme.startswith("intro\n<!-- results:start -->\n") and readme.endswith("<!-- results:end -->\nafter\n")
    # the README holds the summary: 2 printed cells, 1 measured (reduced), 1.81 points off, 1 waiting for data
    assert "OLD BLOCK" not in readme and "| fedsiam | 2 | 0 | 1 | 0 | 0 of 1 | 0 | 1 | 0 | — |" in readme
    assert report.index("## Summary") < report.index("## fedsiam — table5")


def test_summary_counts_each_cell_at_its_best_protocol_and_claims_get_verdicts():
    from fssl_core.report.tables import claim_verdicts, summary
    frame = pd.DataFrame([
        _row(method="a", paper_value=95.0, reproduced_value=90.0, n_runs=1, profile="quick", status="reduced"),
        _row(method="a", paper_value=95.0, reproduced_value=94.0, n_runs=3, profile="paper", status="ok"),
        _row(method="b", paper_value=95.0, reproduced_value=96.6, n_runs=1, profile="quick", status="reduced"),
        _row(method="c", metric="comm_overhead", paper_value=0.29, reproduced_value=0.29, n_runs=0, status="ok"),
        _row(method="d", paper_value=95.0, n_runs=0, status="needs-data"),
        _row(table="t_claims", method="a vs b", metric="gap", reproduced_value=2.0, n_runs=1),
        _row(table="t_claims", method="a vs b", metric="saving", paper_value=0.5, reproduced_value=0.4, n_runs=1),
    ], columns=COLUMNS)
    (row,) = summary(frame, far_cell_causes()).to_dict("records")
    assert row == {"paper": "fedsiam", "cells": 4, "at paper protocol": 1, "reduced only": 1, "within 1.5 points": 1,
                   "beyond it, pre-registered cause": "0 of 1", "beyond it, exploratory only": "0", "needs data": 1,
                   "computed": 1,
                   "claims holding": "0 of 0 tested (0 decided), 2 untested"}   # a: 94.0 at paper (1.0 off); b: 1.6 off
    assert row["cells"] == sum(row[k] for k in ("at paper protocol", "reduced only", "needs data", "computed"))
    # one seed a side: neither 2.0 > 0 nor 0.4 short of the paper's 0.5 is evidence
    assert claim_verdicts(frame).verdict.tolist() == ["untested (n=1)", "untested (n=1)"]


def test_summary_counts_the_far_cells_with_a_pre_registered_cause_and_the_exploratory_ones_apart():
    from fssl_core.report.tables import summary
    frame = pd.DataFrame([
        # far, and the authors' whole computation test-selected (table5_authors_network) lands +0.9 from the paper
        _row(method="fedavg", paper_value=95.0, reproduced_value=97.5, n_runs=1, profile="paper"),
        _row(table="table5_authors_network", method="fedavg", metric="accuracy_test_selected", reproduced_value=95.9,
             n_runs=3, profile="paper", run_ids="a1 a2 a3"),
        # far, and the same reading, run 3 times, stays far (+2.5): a miss of the prospective check
        _row(setting="noniid1", method="fedavg", paper_value=95.0, reproduced_value=97.5, n_runs=1, profile="paper"),
        _row(table="table5_authors_network", setting="noniid1", method="fedavg", metric="accuracy_test_selected",
             reproduced_value=97.5, n_runs=3, profile="paper", run_ids="b1 b2 b3"),
        # far, and that reading lands near from one run only: not counted
        _row(method="fedfixmatch", paper_value=95.0, reproduced_value=97.5, n_runs=1, profile="paper"),
        _row(table="table5_authors_network", method="fedfixmatch", metric="accuracy_test_selected",
             reproduced_value=95.9, n_runs=1, profile="paper"),
        # far, and only their optimiser (part of their computation) lands near: exploratory, not a cause
        _row(method="fedavg_plus", paper_value=95.0, reproduced_value=97.5, n_runs=1, profile="paper"),
        _row(table="table5_authors_optimiser", method="fedavg_plus", paper_value=95.0, reproduced_value=95.9,
             n_runs=1, profile="paper"),
        # far at its last round, within 1.5 points test-selected: exploratory, not a cause
        _row(method="fedsem", paper_value=95.0, reproduced_value=92.0, n_runs=1, profile="paper"),
        _row(method="fedsem", metric="accuracy_test_selected", reproduced_value=93.8, n_runs=1, profile="paper"),
        # far, the quick row is superseded by the paper row, which is within: not a far cell
        _row(method="fedsiam_d", paper_value=97.0, reproduced_value=93.0, n_runs=1, profile="quick"),
        _row(method="fedsiam_d", paper_value=97.0, reproduced_value=98.0, n_runs=1, profile="paper"),
        # far, nothing measured beside it (a claims row at its coordinates measures no cause)
        _row(method="fedmatch", paper_value=90.0, reproduced_value=97.0, n_runs=1, profile="paper"),
        _row(table="table5_claims", method="fedmatch", paper_value=90.0, reproduced_value=90.0, n_runs=1),
        # a paper whose notebooks measure no causes
        _row(paper="fedanchor", table="table1", method="semifl", paper_value=80.0, reproduced_value=70.0, n_runs=1),
    ], columns=COLUMNS)
    counted = summary(frame, far_cell_causes()).set_index("paper")
    # the three runs a1-a3 were never committed here: a cause, but not shown to be prospective
    assert counted["beyond it, pre-registered cause"].to_dict() == {"fedanchor": "—",
                                                                    "fedsiam": "1 of 6 (0 prospective, 1 post hoc; on 1 distinct reading value; "
                                                                               "the same reading missed 1 (0 prospective))"}
    assert counted["beyond it, exploratory only"].to_dict() == {"fedanchor": "—", "fedsiam": "2"}
    # the report knows no paper's causes but those it is given
    assert set(summary(frame).set_index("paper")["beyond it, pre-registered cause"]) == {"—"}


def test_far_cells_one_computation_serves_count_once_as_a_computation():
    """FedAvg's Non-IID-I and Non-IID-II cells are one run identity: two far cells, one computation."""
    frame = pd.DataFrame([
        _row(setting=setting, method="fedavg", paper_value=80.0, reproduced_value=70.0, n_runs=3, profile="paper",
             run_ids="r2 r1 r3" if setting == "noniid2" else "r1 r2 r3") for setting in ("noniid1", "noniid2")
    ] + [_row(setting="noniid1", method="fedsem", paper_value=80.0, reproduced_value=70.0, n_runs=3, profile="paper",
              run_ids="s1 s2 s3")], columns=COLUMNS)
    from fssl_core.report.tables import summary
    counted = summary(frame, {"fedsiam": lambda rows: pd.DataFrame(
        {**{k: rows[k] for k in ("table", "setting", "labeled", "dataset", "method", "metric")},
         "cause_measured": False})}).set_index("paper")
    assert counted.loc["fedsiam", "beyond it, pre-registered cause"] == "0 of 3 (2 computations)"


def test_the_published_far_cells_read_their_causes_from_the_side_tables_their_notebook_named():
    from fssl_core.papers import fedsiam
    side = lambda table, value, metric="accuracy": _row(table=table, method="fedavg", metric=metric, paper_value=95.0,
                                                         reproduced_value=value, n_runs=3, profile="paper")
    cell = _row(method="fedavg", paper_value=95.0, reproduced_value=99.0, n_runs=1, profile="paper")
    frame = pd.DataFrame([cell, side("table5_authors_network", 97.0), side("table5_authors_network", 96.4,
                                                                          "accuracy_test_selected"),
                          side("table5_authors_code", 99.0), side("table5_authors_code", 95.5, "accuracy_test_selected"),
                          side("table5_server_step", 95.0)], columns=COLUMNS)
    measured = fedsiam.measured_beside(frame, "table5")
    assert list(measured) == ["at_authors_network", "at_authors_network_test_selected", "at_authors_code"]
    (row,) = fedsiam.explain_published(frame).to_dict("records")
    assert (row["exploratory: at_authors_network"], row["pre-registered reading"], row["authors' code"]) == (97.0, 96.4, 95.5)
    assert row["measured_cause"] == (f"{fedsiam.PRE_REGISTERED}: at_authors_network_test_selected 96.40 "
                                     "(+1.40 from the paper) over 3 runs") and row["cause_measured"]
    assert row["provenance"] == "their code computes the printed value: 95.50 over 3 runs (+0.50)"
    # the authors' code alone landing on the paper never counts: their network test-selected at 96.6 is +1.6
    frame.loc[2, "reproduced_value"] = 96.6
    (row,) = fedsiam.explain_published(frame).to_dict("records")
    assert not row["cause_measured"] and row["provenance"].startswith("their code computes the printed value")
    assert row["measured_cause"] == "none measured; at_authors_network_test_selected 96.60 (+1.60 from the paper)"
    assert not row["exploratory_near"]             # their code is not an exploratory reading either


def _toy_comparisons(frame):
    """The cells a toy claim row "a vs b" compares: method a's cell against method b's (same metric
    "accuracy", same coordinates and profile); a metric named upload_* is implied by a reading."""
    from fssl_core.report.claim_test import Comparison, Side
    from fssl_core.report.tables import CLAIM_KEY

    def side(cells, method):
        row = cells[cells.method == method].iloc[0]
        return Side(method, row.reproduced_value, row.reproduced_std, int(row.n_runs))
    out = {}
    for row in frame[frame.table.str.endswith("_claims")].to_dict("records"):
        cells = frame[~frame.table.str.endswith("_claims") & (frame.setting == row["setting"])]
        ours, *theirs = row["method"].split(" vs ")
        comparison = Comparison(side(cells, ours), tuple(side(cells, m) for m in theirs[0].split(",")),
                                by_construction="a reading" if row["metric"].startswith("upload") else None)
        out[tuple(row[k] for k in CLAIM_KEY)] = comparison
    return out


@pytest.mark.parametrize("metric,ours,theirs,verdict", [
    # Welch by hand, 3 seeds a side, std 1 each: se = sqrt(1/3 + 1/3) = 0.8165, df = (2/3)² / (2 · (1/3)²/2) = 4,
    # t_0.975,4 = 2.776, so the interval is d ± 2.267
    ("gap", (10.0, 1.0, 3), (7.0, 1.0, 3), "holds"),              # 3 ± 2.267: [0.73, 5.27]
    ("gap", (10.0, 1.0, 3), (9.0, 1.0, 3), "within noise"),       # 1 ± 2.267
    ("gap", (7.0, 1.0, 3), (10.0, 1.0, 3), "refuted"),            # −3 ± 2.267: [−5.27, −0.73]
    ("gap", (10.0, 1.0, 2), (7.0, 1.0, 3), "untested (n=2)"),     # 2 seeds on one side
    ("gap", (10.0, math.nan, 1), (7.0, math.nan, 1), "untested (n=1)"),   # +3 on one seed: no evidence
    # parity, std 0.1 each: se = 0.0816, df 4, half-width 0.227
    ("d_mt_parity", (10.0, 0.1, 3), (10.2, 0.1, 3), "holds"),     # [−0.43, 0.03] within ±1
    ("d_mt_parity", (12.0, 0.1, 3), (10.0, 0.1, 3), "refuted"),   # [1.77, 2.23] wholly above +1
    ("d_mt_parity", (10.8, 0.5, 3), (10.0, 0.5, 3), "within noise"),   # se 0.408, half 1.133: [−0.33, 1.93]
    ("best_accuracy_gap", (10.8, 0.5, 3), (10.0, 0.5, 3), "within noise"),   # FedMix's parity metric
    ("upload_gap", (20.0, 0.1, 3), (10.0, 0.1, 3), "by construction"),
])
def test_a_claims_verdict_is_welchs_test_on_the_cells_it_compares(metric, ours, theirs, verdict):
    from fssl_core.report.tables import claim_verdicts

    def cell(method, stats):
        mean, std, n = stats
        return _row(dataset="mnist", method=method, reproduced_value=mean, reproduced_std=std, n_runs=n,
                    profile="paper")
    frame = pd.DataFrame([cell("a", ours), cell("b", theirs),
                          _row(table="t_claims", dataset="mnist", method="a vs b", metric=metric, paper_value=0.0,
                               profile="paper", reproduced_value=ours[0] - theirs[0], n_runs=min(ours[2], theirs[2]))], columns=COLUMNS)
    assert claim_verdicts(frame, {"fedsiam": _toy_comparisons}).verdict.tolist() == [verdict]
    # without the cells named, a claim row alone is untested, whatever its seeds
    alone = claim_verdicts(frame[frame.table == "t_claims"]).verdict.tolist()
    assert alone == ([f"untested (n={min(ours[2], theirs[2])})"] if min(ours[2], theirs[2]) < 3
                     else ["untested (cells not named)"])


def test_a_claim_against_several_baselines_must_beat_each_and_the_summary_counts_only_the_tested():
    from fssl_core.report.tables import claim_verdicts, summary

    def cell(method, mean, std=1.0, n=3, setting="iid"):
        return _row(dataset="mnist", method=method, setting=setting, reproduced_value=mean, reproduced_std=std, n_runs=n,
                    profile="paper")

    def claim(method, value, setting="iid", metric="gap", n=3):
        return _row(table="t_claims", dataset="mnist", method=method, metric=metric, setting=setting, paper_value=0.0,
                    reproduced_value=value, n_runs=n, profile="paper")
    frame = pd.DataFrame([
        # iid: ours 10 against 7 (3 ± 2.267, above) and 9 (1 ± 2.267, within noise): within noise; the best
        # baseline's margin, 1.0, is what the claim row publishes
        cell("a", 10.0), cell("b", 7.0), cell("c", 9.0), claim("a vs b,c", 1.0),
        # noniid: ours 10 against 7 and 13 (below one of 2: the 97.5% interval, −3 ± 3.495·0.8165 = [−5.85, −0.15]):
        # refuted by the one it falls below
        cell("a", 10.0, setting="noniid"), cell("b", 7.0, setting="noniid"), cell("c", 13.0, setting="noniid"),
        claim("a vs b,c", -3.0, setting="noniid"),
        # server: ours 10 against 7 and 6.5: above both
        cell("a", 10.0, setting="server"), cell("b", 7.0, setting="server"), cell("c", 6.5, setting="server"),
        claim("a vs b,c", 3.0, setting="server"),
        # one seed: untested; an upload ranking: by construction
        cell("a", 10.0, math.nan, 1, "one"), cell("b", 7.0, math.nan, 1, "one"), claim("a vs b", 3.0, "one", n=1),
        claim("a vs b", 0.0, "server", metric="upload_gap"),
    ], columns=COLUMNS)
    verdicts = claim_verdicts(frame, {"fedsiam": _toy_comparisons})
    assert verdicts.verdict.tolist() == ["within noise", "refuted", "holds", "untested (n=1)", "by construction"]
    assert verdicts.interval.iloc[0] == "[-1.27, 3.27] vs c (df 4.0)"      # the baseline it does not clear
    assert verdicts.interval.iloc[1] == "97.5% [-5.85, -0.15] vs c (df 4.0)"
    (row,) = summary(frame, claim_comparisons={"fedsiam": _toy_comparisons}).to_dict("records")
    assert row["claims holding"] == "1 of 3 tested (2 decided), 1 untested, 1 by construction"


def test_the_committed_claim_verdicts_are_a_function_of_the_committed_rows():
    """Every published claim row finds the cells it compares among the published rows (no notebook reruns),
    and its published difference is the difference of those cells' means."""
    from fssl_core.paths import project_root
    from fssl_core.report.tables import CLAIM_KEY, claim_verdicts, is_claim, published_results
    frame = published_results(project_root() / "results")
    compared = {}
    for paper, compare in claim_comparisons().items():
        compared.update(compare(frame[frame.paper == paper]))
    claims = frame[is_claim(frame)]
    assert len(claims) and all(tuple(r[k] for k in CLAIM_KEY) in compared for r in claims.to_dict("records"))
    verdicts = claim_verdicts(frame, claim_comparisons())
    assert "untested (cells not named)" not in set(verdicts.verdict)
    # a verdict from fewer than 3 seeds a side is never counted as holding or refuted
    few = verdicts[verdicts.n_runs < 3]
    assert not few.verdict.isin(["holds", "refuted", "within noise"]).any()


def test_smoke_and_headline_reports_show_no_smoke_number_and_leave_the_readme(tmp_path, monkeypatch):
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    _as_published(monkeypatch, tmp_path)
    (tmp_path / "README.md").write_text("<!-- results:start -->\nOLD BLOCK\n<!-- results:end -->\n")
    for profile in ("smoke", "headline"):
        save_notebook_results(pd.DataFrame([_row(method="fedavg", paper_value=95.0, reproduced_value=12.34, n_runs=1,
                                                 profile=profile)], columns=COLUMNS), "nb", PROFILES[profile])
        merge_results(profile, far_cell_causes=far_cell_causes(), claim_comparisons=claim_comparisons())
    smoke = (tmp_path / "results" / "smoke" / "REPORT.md").read_text()
    assert "12.34" not in smoke and "measure nothing" in smoke
    assert "12.34" in (tmp_path / "results" / "headline" / "REPORT.md").read_text()
    assert "OLD BLOCK" in (tmp_path / "README.md").read_text()


def test_smoke_results_never_touch_the_readme(tmp_path, monkeypatch):
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    (tmp_path / "README.md").write_text("<!-- results:start -->\nOLD BLOCK\n<!-- results:end -->\n")
    save_notebook_results(pd.DataFrame([_row(dataset="mnist", method="fedavg", status="reduced")], columns=COLUMNS),
                          "nb", PROFILES["smoke"])
    merge_results("smoke", far_cell_causes=far_cell_causes(), claim_comparisons=claim_comparisons())
    assert "OLD BLOCK" in (tmp_path / "README.md").read_text()
    assert (tmp_path / "results" / "smoke" / "REPORT.md").exists()


def test_large_deltas_keeps_only_cells_beyond_the_threshold():
    from fssl_core.report.tables import large_deltas
    frame = pd.DataFrame([_row(dataset="mnist", method="a", paper_value=95.0, reproduced_value=97.5),
                          _row(dataset="mnist", method="b", paper_value=95.0, reproduced_value=93.5),
                          _row(dataset="mnist", method="c", paper_value=95.0, reproduced_value=92.0),
                          _row(dataset="svhn", method="a", paper_value=80.0, status="needs-data")], columns=COLUMNS)
    assert large_deltas(frame).method.tolist() == ["a", "c"]


def test_a_partial_reproduction_keeps_the_other_notebooks_run_times(tmp_path, monkeypatch):
    from fssl_core.job.reproduce import record_seconds
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    assert record_seconds("quick", {"a": 10.04, "b": 20.0}) == {"a": 10.0, "b": 20.0}
    assert record_seconds("quick", {"b": 5.0}) == {"a": 10.0, "b": 5.0}      # `--only b` keeps a's
    # within 25% or 5 s of the time kept, the kept one stays (a rebuild leaves the file as committed); beyond, replaced
    assert record_seconds("quick", {"a": 12.4, "b": 9.9}) == {"a": 10.0, "b": 5.0}
    assert record_seconds("quick", {"a": 40.0, "b": 10.1}) == {"a": 40.0, "b": 10.1}
    assert record_seconds("quick", {"a": 49.9, "b": 3.0}) == {"a": 40.0, "b": 3.0}


def test_accuracy_last5_is_the_mean_of_the_last_five_evaluated_rounds():
    from fssl_core.run_config import RunConfig
    from fssl_core.report.tables import METRICS
    from fssl_core.store import RunResult
    metrics = [{"round": r, "accuracy": a} for r, a in enumerate([10.0, 90.0, 92.0, 96.0, 89.0, 95.0, 93.0], 1)]
    metrics.insert(3, {"round": 99})                      # a round without evaluation counts not
    run = RunResult(RunConfig(), metrics, {"status": "ok", "accuracy": 93.0})
    assert METRICS["accuracy_last5"](run) == pytest.approx((92 + 96 + 89 + 95 + 93) / 5)
    assert METRICS["accuracy_last5"](RunResult(RunConfig(), metrics, {"status": "diverged"})) is None


def test_accuracy_test_selected_is_the_accuracy_of_the_lowest_test_loss_the_later_round_on_a_tie():
    """The FedSiam authors' selection (main_*.py: `if loss_valid <= best_loss_valid`, on the test set)."""
    from fssl_core.run_config import RunConfig
    from fssl_core.report.tables import METRICS
    from fssl_core.store import RunResult
    rows = [(1, 80.0, 0.9), (2, 97.0, 0.20), (3, 96.0, 0.20), (4, 98.0, 0.25)]
    metrics = [{"round": r, "accuracy": a, "test_loss": loss} for r, a, loss in rows] + [{"round": 5}]
    run = RunResult(RunConfig(), metrics, {"status": "ok", "accuracy": 98.0})
    assert METRICS["accuracy_test_selected"](run) == 96.0         # rounds 2 and 3 tie at 0.20: round 3
    old = RunResult(RunConfig(), [{"round": 1, "accuracy": 90.0}], {"status": "ok", "accuracy": 90.0})
    assert METRICS["accuracy_test_selected"](old) is None         # stored before the test loss was logged


def _record_many(prefix: str, n: int) -> None:
    from fssl_core.job.reproduce import record_seconds
    for i in range(n):
        record_seconds("quick", {f"{prefix}{i}": float(i)})


def test_concurrent_jobs_keep_each_others_notebook_times(tmp_path, monkeypatch):
    """record_seconds is a read-modify-write: under its lock no job's times are lost."""
    import json
    import multiprocessing
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    ctx = multiprocessing.get_context("spawn")
    jobs = [ctx.Process(target=_record_many, args=(p, 400)) for p in ("a", "b", "c")]   # without the lock ~half are lost
    for j in jobs:
        j.start()
    for j in jobs:
        j.join(300)     # generous: a loaded machine takes over a minute
    known = json.loads((tmp_path / "results" / "notebook_seconds.json").read_text())
    assert len(known) == 1200 and all(j.exitcode == 0 for j in jobs)


def test_a_cell_measured_twice_by_one_notebook_is_saved_once(tmp_path, monkeypatch):
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    first = _row(method="fedavg", paper_value=95.0, reproduced_value=97.0, n_runs=1, profile="paper")
    again = _row(method="fedavg", paper_value=95.0, reproduced_value=97.0, n_runs=1, profile="paper")
    quick = _row(method="fedavg", paper_value=95.0, reproduced_value=91.0, n_runs=1, profile="quick")
    path = save_notebook_results(pd.DataFrame([first, again, quick], columns=COLUMNS), "nb", PROFILES["paper"])
    saved = read_results(path)
    assert sorted(saved.profile) == ["paper", "quick"]


def test_the_reports_title_names_the_profiles_of_its_rows_not_only_the_last_jobs(tmp_path, monkeypatch):
    # quick and paper publish into one folder: a quick job after a paper one still reports paper rows
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    _as_published(monkeypatch, tmp_path)
    (tmp_path / "README.md").write_text("<!-- results:start -->\n<!-- results:end -->\n")
    paper = pd.DataFrame([_row(dataset="mnist", method="fedavg", paper_value=95.13, reproduced_value=97.15, n_runs=3,
                               profile="paper", status="ok")], columns=COLUMNS)
    quick = pd.DataFrame([_row(dataset="fashion_mnist", method="fedmix", paper="fedmix_fedloss", table="fig8",
                               reproduced_value=60.0, n_runs=1, status="reduced")], columns=COLUMNS)
    save_notebook_results(paper, "fedsiam_table5", PROFILES["paper"])
    save_notebook_results(quick, "fedmix_streaming_fmnist", PROFILES["quick"])
    report = merge_results("quick", {}, far_cell_causes=far_cell_causes(),
                           claim_comparisons=claim_comparisons()).read_text()
    assert report.startswith("# Reproduced vs paper (profiles paper, quick)\n")
    assert ("Generated by `python -m fssl_core reproduce --profile paper` and `python -m fssl_core reproduce --profile "
            "quick` (each row's `profile`") in report      # the rows' profiles, whichever job published last


def test_a_published_row_names_its_runs_and_the_check_finds_those_without_proven_records(tmp_path):
    from fssl_core.run_config import RunConfig
    from fssl_core.report.publish import unproven_published_runs
    from fssl_core.store import RunStore

    from .fake_runs import fake_finished_run, row
    store = RunStore(tmp_path / "runs")
    kept, lost = RunConfig(dataset="mnist", algorithm="fedavg", rounds=2, seed=1), RunConfig(
        dataset="mnist", algorithm="fedavg", rounds=2, seed=2)
    fake_finished_run(store, kept, [row(1, 90.0), row(2, 91.0)])
    results = tmp_path / "results"
    results.mkdir()
    frame = pd.DataFrame([_row(dataset="mnist", method="fedavg", reproduced_value=91.0, n_runs=2,
                               run_ids=f"{kept.run_id} {lost.run_id}"),
                          _row(dataset="mnist", method="fedavg_plus", metric="upload_mb")], columns=COLUMNS)
    frame.to_csv(results / "fedsiam_table5.csv", index=False)
    assert unproven_published_runs(results, store) == {"fedsiam_table5.csv": [lost.run_id]}
    fake_finished_run(store, lost, [row(1, 90.0), row(2, 92.0)])
    assert unproven_published_runs(results, store) == {}
    (store.dir(lost) / "metrics.jsonl").write_text('{"round": 1}\n')      # edited records prove nothing
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert unproven_published_runs(results, store) == {"fedsiam_table5.csv": [lost.run_id]}


def test_every_run_the_committed_results_name_is_committed_and_proves_itself():
    # results/*.csv name the runs each published number was computed from; their records are committed
    # (git add $(python -m fssl_core records)), so a fresh clone can check every such number
    from pathlib import Path

    from fssl_core.report.publish import unproven_published_runs
    from fssl_core.store import RunStore
    root = Path(__file__).resolve().parents[1]
    missing = unproven_published_runs(root / "results", RunStore(root / "runs"))
    assert not missing, (f"results name runs with no proven record in runs/: {missing}; commit the records "
                         "(git add $(python -m fssl_core records)) or republish from runs that have them")


def test_every_committed_number_computed_from_runs_names_them():
    """No published value computed from runs without its run ids (report.csv, every notebook's CSV, the smoke
    slice): a reader can go from any number to the records it came from."""
    from pathlib import Path

    from fssl_core.report.publish import unlinked_published_rows
    root = Path(__file__).resolve().parents[1]
    for folder in (root / "results", root / "results" / "smoke"):
        assert unlinked_published_rows(folder) == {}, folder


def test_the_check_finds_a_row_naming_no_runs_and_a_missing_log(tmp_path):
    from fssl_core.report.publish import unlinked_published_rows, unproven_published_runs
    from fssl_core.store import RunStore
    results = tmp_path / "results"
    (results / "authors_code").mkdir(parents=True)
    (results / "authors_code" / "kept.log").write_text("Round 195, Acc 90.0\n")
    frame = pd.DataFrame([_row(dataset="mnist", method="fedavg", reproduced_value=91.0, n_runs=2, run_ids=""),
                          _row(dataset="mnist", method="fedsem", reproduced_value=91.0, n_runs=1,
                               run_ids="authors_code/kept.log authors_code/lost.log"),
                          _row(dataset="mnist", method="fedmatch", reproduced_value=0.29, n_runs=0, run_ids="")],
                         columns=COLUMNS)
    frame.to_csv(results / "fedsiam_table5.csv", index=False)
    assert unlinked_published_rows(results) == {"fedsiam_table5.csv": 1}
    assert unproven_published_runs(results, RunStore(tmp_path / "runs")) == {
        "fedsiam_table5.csv": ["authors_code/lost.log"]}


def test_the_readme_opens_with_one_sentence_per_paper_at_a_glance():
    import pandas as pd
    from fssl_core.report.page import at_a_glance
    table = pd.DataFrame([
        {"paper": "toy", "cells": 10, "at paper protocol": 3, "reduced only": 1, "within 1.5 points": 2,
         "needs data": 6, "computed": 0, "claims holding": "1 of 4 tested (3 decided), 2 by construction"},
        {"paper": "bare", "cells": 2, "at paper protocol": 0, "reduced only": 0, "within 1.5 points": 0,
         "needs data": 2, "computed": 0, "claims holding": "—"}])
    assert at_a_glance(table, {"toy": "Toy"}).splitlines() == [
        "- **Toy**: 10 printed cells; 4 measured (3 at the paper's protocol and 1 at a reduced one only), 2 of them "
        "within 1.5 points of the paper; 6 need data this machine lacks (CIFAR-10/100, SVHN); of 4 claims tested, 1 "
        "hold and 3 are decided either way; besides, 2 by construction.",
        "- **bare**: 2 printed cells; none measured; 2 need data this machine lacks (CIFAR-10/100, SVHN); no claim "
        "tested."]
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert readme.index("<!-- at-a-glance:start -->") < readme.index("## The two commands")
