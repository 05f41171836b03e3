"""The papers' registry: a paper is a folder plus one line of PAPERS, and each folder's README shows
its results as rendered from the committed results."""
import math
import textwrap

import pandas as pd
import pytest

from fssl_core import papers
from fssl_core.report.tables import COLUMNS, summary


def _toy_paper(tmp_path, monkeypatch, init='DISPLAY_NAMES = {"toy_method": "Toy-Method"}\n'):
    """A paper package written from scratch: a values.csv and an __init__ naming its method, registered
    with one line, nothing else edited. Its name is the test's own (a module is imported once)."""
    folder = tmp_path / f"toy_paper_{tmp_path.name}"
    folder.mkdir()
    (folder / "__init__.py").write_text(init)
    (folder / "values.csv").write_text(textwrap.dedent("""\
        paper,table,setting,labeled,dataset,method,metric,value,unit,source
        toy,table1,iid,0.10,mnist,toy_method,accuracy,91.5,%,toy.txt:1
        toy,table1,iid,0.10,mnist,fedavg,accuracy,90.0,%,toy.txt:1
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(papers.PAPERS, "toy", folder.name)
    return folder


def test_a_registered_folder_brings_its_values_and_names_to_the_report(tmp_path, monkeypatch):
    folder = _toy_paper(tmp_path, monkeypatch)
    values = papers.paper_values()
    toy = values[values.paper == "toy"]
    assert toy.value.tolist() == [91.5, 90.0] and set(values.paper) > {"toy", "fedsiam", "fedanchor"}
    assert papers.display_names()["toy_method"] == "Toy-Method"
    assert papers.printed_value(folder, "toy", "table1", "iid", "0.10", "mnist", "toy_method") == 91.5
    # a cell of the toy paper, measured, lands in the summary beside the registered papers
    rows = [{**{c: math.nan for c in COLUMNS}, "paper": "toy", "table": "table1", "setting": "iid", "labeled": "0.10",
             "dataset": "mnist", "method": m, "metric": "accuracy",
             "paper_value": papers.printed_value(folder, "toy", "table1", "iid", "0.10", "mnist", m),
             "reproduced_value": ours, "n_runs": 1, "profile": "paper", "status": "reduced", "seconds": 0.0}
            for m, ours in (("toy_method", 91.0), ("fedavg", 85.0))]
    counted = summary(pd.DataFrame(rows, columns=COLUMNS), papers.far_cell_causes()).set_index("paper").loc["toy"]
    assert (counted["cells"], counted["at paper protocol"], counted["within 1.5 points"]) == (2, 2, 1)
    assert counted["beyond it, pre-registered cause"] == "—"    # the toy declares no FAR_CELL_CAUSES


def test_two_papers_naming_one_method_two_ways_is_refused(tmp_path, monkeypatch):
    _toy_paper(tmp_path, monkeypatch, init='DISPLAY_NAMES = {"fedavg": "FedAvg (toy)"}\n')
    with pytest.raises(ValueError, match=r"toy_paper_\w+.DISPLAY_NAMES\['fedavg'\]='FedAvg \(toy\)': another paper"):
        papers.display_names()


@pytest.mark.parametrize("name", sorted(set(papers.PAPERS.values())))
def test_each_papers_readme_shows_the_results_rendered_from_the_committed_csvs(name):
    import importlib
    package = importlib.import_module(name)
    text = (papers.folder_of(package) / "README.md").read_text()
    block = text[text.index(papers.README_START) + len(papers.README_START):text.index(papers.README_END)]
    assert block == "\n" + papers.readme_results(package) + "\n", \
        f"{name}'s README results block is stale: run `python -c 'from fssl_core.papers import update_readmes; update_readmes()'`"


def test_the_readme_results_are_the_paper_protocol_rows_under_their_display_names():
    from fssl_core.report.page import results_tables_markdown
    row = {c: math.nan for c in COLUMNS}
    row.update(paper="fedsiam", table="table5", setting="iid", labeled="0.10", dataset="mnist", metric="accuracy",
               device="cpu", seconds=0.0)
    frame = pd.DataFrame([
        {**row, "method": "fedsiam_d", "paper_value": 97.6, "reproduced_value": 98.1, "reproduced_std": 0.2,
         "n_runs": 3, "profile": "paper", "status": "ok"},
        {**row, "method": "fedavg", "paper_value": 95.13, "reproduced_value": 97.0, "n_runs": 1, "profile": "quick",
         "status": "reduced"},                                   # reduced: not shown
    ], columns=COLUMNS)
    text = results_tables_markdown(frame, ["fedsiam"], {"fedsiam_d": "FedSiam-D"})
    assert "| setting | labeled | FedSiam-D | seeds |" in text and "| iid | 0.10 | 98.10 ± 0.20 (97.6) | 3 |" in text
    assert "fedavg" not in text
    assert "No cell of this paper" in results_tables_markdown(frame, ["fedanchor"])


def _stream_rows(best_rounds, profile="quick"):
    """Fig. 8's cells at one seed: FedMix-FedLoss and FedMatch's best accuracy, best round and bytes."""
    from fssl_core.papers import fedmix
    values = {"fedmix_fedloss": {"best_accuracy": 70.0, "best_round": best_rounds[0], "total_mb": 60.0},
              "fedmatch": {"best_accuracy": 70.4, "best_round": best_rounds[1], "total_mb": 100.0}}
    return pd.DataFrame([{**{c: math.nan for c in COLUMNS}, "paper": fedmix.PAPER, "table": "fig8",
                          "setting": "stream_dir0.1", "labeled": "1000", "dataset": "fashion_mnist", "method": m,
                          "metric": k, "reproduced_value": v, "n_runs": 1, "profile": profile, "device": "cpu",
                          "seconds": 1.0, "status": "reduced"}
                         for m, metrics in values.items() for k, v in metrics.items()], columns=COLUMNS)


def test_fedmix_rounds_saved_is_cut_off_where_a_best_round_is_the_runs_last():
    from fssl_core.papers import fedmix
    from fssl_core.report.tables import claim_verdicts
    assert fedmix.streaming_rounds("quick") == 50          # quick's 50 rounds: a best at round 50 may lie beyond
    cells = _stream_rows((50, 49))
    claims = fedmix.streaming_claims(cells)
    assert claims.set_index("metric").reproduced_value.to_dict() == {
        "best_accuracy_gap": pytest.approx(-0.4), "rounds_saved_to_best_acc": -1.0, "comm_reduction": 0.4}
    verdicts = claim_verdicts(pd.concat([cells, claims]), papers.claim_comparisons())
    assert verdicts.verdict.tolist() == ["untested (n=1)", "cut off by the run length", "untested (n=1)"]
    # both best rounds inside the run: the claim is only short of seeds
    cells = _stream_rows((30, 45))
    verdicts = claim_verdicts(pd.concat([cells, fedmix.streaming_claims(cells)]), papers.claim_comparisons())
    assert verdicts.verdict.tolist() == ["untested (n=1)"] * 3


def test_fedanchor_claims_compare_fedanchors_cells_with_semifls():
    from fssl_core.papers import fedanchor
    from fssl_core.report.tables import claim_verdicts
    rows = [{**{c: math.nan for c in COLUMNS}, "paper": "fedanchor", "table": "fmnist", "setting": "iid",
             "labeled": "250", "dataset": "fashion_mnist", "method": m, "metric": k, "reproduced_value": v,
             "reproduced_std": 1.0, "n_runs": 3, "profile": "quick", "device": "cpu", "seconds": 1.0, "status": "reduced"}
            for m, k, v in [("fedanchor", "accuracy", 80.0), ("semifl", "accuracy", 75.5),
                            ("fedanchor", "selected", 400.0), ("semifl", "selected", 399.0),
                            ("fedanchor", "pseudo_label_accuracy_all", 90.0), ("semifl", "pseudo_label_accuracy_all", 95.0)]]
    cells = pd.DataFrame(rows, columns=COLUMNS)
    claims = fedanchor.fmnist_claims(cells)
    verdicts = claim_verdicts(pd.concat([cells, claims]), papers.claim_comparisons()).set_index("metric").verdict
    # std 1 and 3 seeds a side: each difference ± 2.267 (se 0.8165, df 4): −5 refuted, +4.5 holds; samples past
    # each method's own threshold are two different tests, so no evidence either way (by construction)
    assert verdicts.to_dict() == {"pseudo_label_accuracy_all_gap": "refuted", "selected_gap": "by construction",
                                  "accuracy_gap": "holds"}


def test_every_published_table_has_a_sentence_introducing_it_in_the_report():
    """results/REPORT.md introduces each table by a sentence (papers.table_intros): no side table is a block of
    numbers a reader must guess at."""
    from fssl_core.paths import project_root
    from fssl_core.report.tables import published_results
    published = published_results(project_root() / "results")
    tables = set(zip(published.paper, published.table))
    assert tables and tables <= set(papers.table_intros()), sorted(tables - set(papers.table_intros()))


def test_the_report_introduces_tables_and_says_where_a_refuted_claim_is_explained():
    import pandas as pd

    from fssl_core.report.tables import COLUMNS
    from fssl_core.report.page import explained, render_markdown
    row = {c: "" for c in COLUMNS} | {"paper": "p", "table": "t", "setting": "s", "labeled": "1", "dataset": "d",
                                      "method": "m", "metric": "accuracy", "paper_value": 50.0, "reproduced_value": 49.0,
                                      "reproduced_std": float("nan"), "n_runs": 1, "profile": "quick", "status": "reduced",
                                      "seconds": 1.0}
    text = render_markdown(pd.DataFrame([row]), {}, "quick", table_intros={("p", "t"): "What t holds."})
    assert "## p — t\n\nWhat t holds.\n\n|" in text
    claims = pd.DataFrame({"paper": ["p", "p"], "metric": ["gap", "gap"], "verdict": ["refuted", "within noise"]})
    assert list(explained(claims, {("p", "gap"): "notebooks/x, \"Why\""}).verdict) == [
        'refuted; explained in notebooks/x, "Why"', "within noise"]


def test_the_report_names_methods_as_the_papers_do():
    from fssl_core.report.page import named
    names = papers.display_names()
    assert named("fedsiam_d vs best baseline", names) == "FedSiam-D vs best baseline"
    assert named("fedsiam_d_mse vs fedsiam_d_kl", names) == "FedSiam-D (MSE) vs FedSiam-D (KL)"   # the longer id wins
    assert named("supervised_server", names) == "SL (server)" and named("server_alone", names) == "server_alone"
    assert named("fedsiam_d", {}) == "fedsiam_d"


def test_every_published_claim_row_is_its_builder_on_the_published_cells():
    """What the report tests a published claim on (papers.claim_comparisons) is read from the same published
    cells its row is computed from: the builders rerun on them give every published claim row back, value for
    value (publish rebuilds them after a narrowed republish, papers.rebuilt_claim_rows)."""
    from fssl_core.paths import project_root
    from fssl_core.report.tables import CLAIM_KEY, is_claim, published_results
    frame = published_results(project_root() / "results")
    assert papers.rebuilt_claim_rows(frame)[1] == []
    sourced = pd.Series([(p, t) in papers.claim_sources() for p, t in zip(frame.paper, frame.table)], index=frame.index)
    published = frame[is_claim(frame) & sourced]
    assert set(published.paper) == {"fedsiam", "fedanchor", "fedmix_fedloss"}
    compared = set()
    for compare in papers.claim_comparisons().values():
        compared |= set(compare(frame))
    assert compared >= {tuple(r) for r in published[CLAIM_KEY].itertuples(index=False)}


def test_fedmix_claims_are_built_per_network_never_across_two():
    # one network's FedMix against the other's FedMatch would be a claim about no run the paper describes
    from fssl_core.papers import fedmix
    bn = _stream_rows((30, 45), profile="paper").assign(setting=fedmix.NETWORKS["resnet9"])
    plain = _stream_rows((30, 45), profile="paper")
    plain.loc[plain.method == "fedmatch", "reproduced_value"] += 5.0          # FedMatch 5 points/rounds/MB up
    claims = fedmix.streaming_claims(pd.concat([bn, plain], ignore_index=True))
    gap = claims[claims.metric == "best_accuracy_gap"].set_index("setting").reproduced_value
    assert gap.to_dict() == {"stream_dir0.1_resnet9_bn": pytest.approx(-0.4), "stream_dir0.1": pytest.approx(-5.4)}


def test_fedmix_fig8_published_paper_rows_name_the_runs_their_network_plans():
    # a published row keeps its key only while the cell it is filed under still plans the runs it was computed from
    from fssl_core.papers import fedmix
    from fssl_core.paths import results_dir
    from fssl_core.profiles import PROFILES
    from fssl_core.report.tables import read_results
    rows = read_results(results_dir("quick") / "fedmix_streaming_fmnist.csv")
    rows = rows[(rows.table == "fig8") & (rows.profile == "paper")]
    assert len(rows)
    planned = {}
    for network, setting in fedmix.NETWORKS.items():
        for precision in ("fp32", "tf32"):
            for cell in fedmix.streaming_cells(PROFILES["paper"], "cuda", methods=list(fedmix.METHODS),
                                               precision=precision, network=network):
                planned.setdefault((setting, cell.method), set()).update(c.run_id for c in cell.configs)
    for row in rows.itertuples():
        assert set(row.run_ids.split()) <= planned[(row.setting, row.method)], (row.setting, row.method, row.run_ids)
