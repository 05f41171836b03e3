"""The group-sequential rule (report/sequential.py) and FedSiam's plan under it (papers/fedsiam/stopping.py):
boundaries that spend what their function allots, a type-I error at or under 5% at the claims' own spreads,
and the runs the rule saves against a fixed n = 10."""
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from fssl_core.papers.fedsiam import looks, stopping
from fssl_core.report.claim_test import Side, claim_test
from fssl_core.report.sequential import boundaries, nominal_levels, simulate, spent

RESULTS = Path(__file__).resolve().parent.parent / "results" / "fedsiam_table6.csv"


def test_the_first_boundary_is_the_spending_functions_own():
    """With no look before it, look 1 spends α(t₁) alone: O'Brien-Fleming type at t = 1/3, 2 − 2Φ(1.96·√3) =
    2(1 − Φ(3.395)), so c₁ = 3.395; Pocock type, 0.05·ln(1 + (e − 1)/3) = 0.0215, so c₁ = 2.300."""
    assert boundaries([1 / 3, 2 / 3, 1])[0] == pytest.approx(1.959964 * math.sqrt(3), abs=1e-4)
    assert boundaries([1 / 3, 2 / 3, 1], spending="pocock")[0] == pytest.approx(
        norm.isf(0.05 * math.log(1 + (math.e - 1) / 3) / 2), abs=1e-4)


@pytest.mark.parametrize("spending", ["obrien_fleming", "pocock"])
def test_each_look_spends_what_its_function_allots_by_monte_carlo(spending):
    """Brownian motion seen at the fractions 0.5, 0.7, 1.0 (FedSiam's looks at 5, 7, 10 of 10 seeds): the share
    of 400,000 paths first crossing at look k is α(t_k) − α(t_{k−1}) within 4 Monte Carlo standard errors, and
    the total 5%."""
    fractions = [0.5, 0.7, 1.0]
    bounds = boundaries(fractions, spending=spending)
    rng = np.random.default_rng(3)
    increments = rng.normal(0, 1, (400_000, 3)) * np.sqrt(np.diff([0, *fractions]))
    z = np.cumsum(increments, axis=1) / np.sqrt(fractions)
    crossed = np.abs(z) >= np.asarray(bounds)
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    for k, t in enumerate(fractions):
        expected = spent(t, 0.05, spending) - (spent(fractions[k - 1], 0.05, spending) if k else 0.0)
        share = float(np.mean(first == k))
        assert share == pytest.approx(expected, abs=4 * math.sqrt(expected / 400_000) + 1e-5), (k, share, expected)
    assert float(np.mean(first >= 0)) == pytest.approx(0.05, abs=0.0015)


def test_the_plan_is_fixed_and_names_its_levels():
    assert stopping.LOOKS == (5, 7, 10) and stopping.N_MAX == 10 and stopping.SPENDING == "obrien_fleming"
    levels = stopping.levels()
    assert levels == pytest.approx(nominal_levels([5, 7, 10]))
    assert levels[0] < levels[1] < levels[2] < 0.05           # little early, most at the last look
    assert [c.key for c in stopping.CLAIMS] == ["table6_claims server_noniid γ=0.01 mnist",
                                                "table6_claims server_iid γ=0.10 mnist",
                                                "table6_claims server_noniid γ=0.10 mnist"]


def _measured(claim):
    """The claim's cells as published at the paper's protocol (3 seeds, before the rule): mean, std, paper value."""
    rows = pd.read_csv(RESULTS, dtype={"labeled": str})
    rows = rows[(rows.table == "table6") & (rows.profile == "paper") & (rows.metric == "accuracy")
                & (rows.setting == claim.setting) & (rows.labeled == claim.labeled) & (rows.dataset == claim.dataset)]
    return {m: rows[rows.method == m].iloc[0] for m in claim.methods}


def _decide(paper, what):
    """The rule's decision on simulated seeds, as Table 6's claim is built (claims._table6): the better siamese
    method by mean against FedFixMatch and FedMatch; `what`: which of the claim's tests is counted."""
    def decide(sides, level):
        ffm, fm, pi, mt = (Side(m, float(v.mean()), float(v.std(ddof=1)), len(v), paper[m])
                           for m, v in zip(("fedfixmatch", "fedmatch", "fedsiam_pi", "fedsiam_mt"), sides))
        verdict = claim_test(max(pi, mt, key=lambda s: s.mean), [ffm, fm], alpha=level)
        return verdict.word in ("holds", "refuted") if what == "direction" else \
            verdict.margin in ("below the paper's margin", "above the paper's margin")
    return decide


@pytest.mark.parametrize("index", range(3))
def test_each_claims_type_one_error_under_the_rule_stays_at_5_percent(index):
    """Under the null at the measured spreads (2,000 simulated campaigns a test, Monte Carlo se ≈ 0.5 point):
    direction, every cell at one mean; margin, the siamese cells at the paper's margin above each FixMatch-based
    one (both siamese methods alike, so the better-by-mean pick is the null's worst case). Each test counted as if
    it alone stopped the claim (stopping for the other test only removes chances to err), at or under 5% plus
    two Monte Carlo standard errors."""
    claim = stopping.CLAIMS[index]
    cells = _measured(claim)
    paper = {m: float(r.paper_value) for m, r in cells.items()}
    sds = [float(cells[m].reproduced_std) for m in claim.methods]
    null_direction = [0.0] * 4
    # the siamese side above FedFixMatch by the paper's margins: FedFixMatch at 0, FedMatch at the paper's
    # FedFixMatch − FedMatch, both siamese cells at the paper's best siamese − FedFixMatch
    best = max(paper["fedsiam_pi"], paper["fedsiam_mt"])
    null_margin = [0.0, paper["fedmatch"] - paper["fedfixmatch"], best - paper["fedfixmatch"], best - paper["fedfixmatch"]]
    for what, means in (("direction", null_direction), ("margin", null_margin)):
        found = simulate(_decide({**paper, "fedsiam_pi": best, "fedsiam_mt": best}, what), means, sds,
                         stopping.LOOKS, stopping.levels(), draws=2000, seed=index)
        assert found.error <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / found.draws), (claim.key, what, found)


def test_the_rule_prints_the_runs_it_expects_to_save_against_a_fixed_n_of_10(capsys):
    """At the measured means and spreads (the observed effect taken as true), the rule's expected seeds a side and
    runs (4 cells a claim) against a fixed n = 10; the rule never spends more, and saves where a claim is clear."""
    total_rule, total_fixed = 0.0, 0
    for index, claim in enumerate(stopping.CLAIMS):
        cells = _measured(claim)
        paper = {m: float(r.paper_value) for m, r in cells.items()}
        means = [float(cells[m].reproduced_value) for m in claim.methods]
        sds = [float(cells[m].reproduced_std) for m in claim.methods]
        decided_either = lambda sides, level, p=paper: _decide(p, "direction")(sides, level) or \
            _decide(p, "margin")(sides, level)
        found = simulate(decided_either, means, sds, stopping.LOOKS, stopping.levels(), draws=600, seed=10 + index)
        runs_rule = 4 * (found.mean_seeds - 3)            # beyond the 3 seeds each cell had
        runs_fixed = 4 * (stopping.N_MAX - 3)
        total_rule, total_fixed = total_rule + runs_rule, total_fixed + runs_fixed
        assert 5 <= found.mean_seeds <= stopping.N_MAX
        print(f"{claim.key}: expected {found.mean_seeds:.2f} seeds a side, {runs_rule:.1f} runs against "
              f"{runs_fixed} at a fixed n = 10")
    print(f"the rule: {total_rule:.1f} expected runs against {total_fixed} ({1 - total_rule / total_fixed:.0%} saved)")
    assert total_rule <= total_fixed
    assert "saved" in capsys.readouterr().out


class _Run:
    """A finished run as measured_row reads it: its config, status, accuracy and seconds."""
    def __init__(self, cfg, accuracy):
        self.config, self.accuracy, self.status, self.summary = cfg, accuracy, "ok", {"seconds": 0.0}


class _Store:
    """A run store of finished runs' accuracies by run id (what `standing` reads), filled by `value(cfg)`."""
    def __init__(self, value, configs):
        self.value, self.runs = value, {cfg.run_id: _Run(cfg, value(cfg)) for cfg in configs}

    def load(self, cfg):
        return self.runs.get(cfg.run_id)


def _configs(claim, n):
    return [cfg for cell in stopping.cells(claim, n) for cfg in cell.configs]


def _accuracy(spread, siamese=98.0, fixmatch=98.0):
    """Accuracy by method and seed: a fixed pattern of ±spread around each side's mean, its own for each method."""
    def value(cfg):
        base = siamese if cfg.algorithm.startswith("fedsiam") else fixmatch
        return base + spread * ((cfg.seed * 7919 + len(cfg.algorithm) * 104729) % 11 - 5) / 5
    return value


def test_a_claim_at_its_first_three_seeds_needs_only_look_ones_runs():
    claim = stopping.CLAIMS[1]
    look = looks.standing(claim, _Store(_accuracy(0.2), _configs(claim, 3)))
    assert not look.made and not look.stopped
    assert sorted({(c.algorithm, c.seed) for c in look.missing}) == sorted(
        (m, s) for m in ("fedfixmatch", "fedmatch", "fedsiam_pi", "fedsiam_mt") for s in (1237, 1238))


def test_a_claim_stops_at_the_look_that_decides_it():
    """Siamese 3 points above both FixMatch-based methods, ±0.1: decided at look 1 (n = 5), nothing more to train."""
    claim = stopping.CLAIMS[1]
    look = looks.standing(claim, _Store(_accuracy(0.1, siamese=99.0, fixmatch=96.0), _configs(claim, 10)))
    assert look.stopped and len(look.made) == 1 and look.made[0][0] == 5 and look.missing == ()
    assert look.last[2].word == "holds" and "decided" in look.line() and "look 1 of 3 at n = 5" in look.line()


def test_an_undecided_look_asks_for_the_next_looks_runs_only():
    """Equal means, ±1: neither the direction nor the paper's margin (+0.21) is decided at look 1."""
    claim = stopping.CLAIMS[1]
    look = looks.standing(claim, _Store(_accuracy(1.0), _configs(claim, 5)))
    assert not look.stopped and len(look.made) == 1 and not look.last[2].decided
    assert {c.seed for c in look.missing} == {1239, 1240} and len(look.missing) == 8
    assert "continues: look 2 at n = 7 needs 8 runs" in look.line()


def test_until_decided_trains_look_by_look_and_stops(monkeypatch):
    """The command's loop on a fake store, every method at one mean (±1): each call trains exactly the next looks'
    missing runs, and the loop ends when every claim has stopped: Labels-at-Server non-IID γ = 0.01 at look 1, below
    the paper's margin (+2.58), the two γ = 0.10 claims (margins +0.21, +0.17) undecided at n_max; --dry-run
    trains nothing."""
    from fssl_core import executors
    from fssl_core.job.until_decided import until_decided
    value = _accuracy(1.0)
    store = _Store(value, [cfg for claim in stopping.CLAIMS for cfg in _configs(claim, 3)])
    trained = []

    def fake_run_all(configs, store=None):
        trained.append(sorted({c.seed for c in configs}))
        store.runs.update({c.run_id: _Run(c, value(c)) for c in configs})
    monkeypatch.setattr(executors, "run_all", fake_run_all)
    assert all(not look.stopped for look in until_decided(dry_run=True, store=store)) and trained == []
    final = until_decided(store=store)
    assert trained == [[1237, 1238], [1239, 1240], [1241, 1242, 1243]]
    assert all(look.stopped for look in final) and [look.last[0] for look in final] == [5, 10, 10]
    assert final[0].last[2].margin == "below the paper's margin" and not final[1].last[2].decided
