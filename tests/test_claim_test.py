"""The one claim test: Welch's t on the cells a claim compares, with the rules of claim_test's docstring.
Every case is computed by hand in its comment."""
import math

import pytest

from fssl_core.report.claim_test import Side, claim_test, t_quantile, welch


def s(mean, std, n, name="x"):
    return Side(name, mean, std, n)


@pytest.mark.parametrize("df,t", [(2, 4.303), (4, 2.776), (10, 2.228), (math.inf, 1.960)])
def test_the_t_quantile_is_the_tables(df, t):
    assert t_quantile(df) == pytest.approx(t, abs=5e-4)


def test_welch_with_equal_spreads_has_the_pooled_degrees_of_freedom():
    # 10 ± 1 (3 seeds) against 7 ± 1 (3 seeds): each mean's variance 1/3, se = sqrt(2/3) = 0.8165;
    # df = (2/3)² / ((1/3)²/2 + (1/3)²/2) = (4/9) / (1/9) = 4; t_0.975,4 = 2.776; half-width 2.267
    i = welch(s(10, 1, 3), s(7, 1, 3, "b"))
    assert (i.difference, i.df) == (3.0, pytest.approx(4.0))
    assert (i.low, i.high) == (pytest.approx(3 - 2.7764 * 0.8165, abs=1e-3), pytest.approx(3 + 2.7764 * 0.8165, abs=1e-3))
    assert str(i) == "[0.73, 5.27] vs b (df 4.0)"


def test_welch_with_unequal_spreads_and_seeds():
    # 5 ± 0.5 (4 seeds) against 3 ± 2 (3 seeds): variances of the means 0.25/4 = 0.0625 and 4/3 = 1.3333,
    # se = sqrt(1.3958) = 1.1815; df = 1.3958² / (0.0625²/3 + 1.3333²/2) = 1.9484 / 0.8902 = 2.189,
    # between the tables' 2 (4.303) and 3 (3.182)
    i = welch(s(5, 0.5, 4), s(3, 2, 3))
    assert i.df == pytest.approx(2.189, abs=1e-3)
    half = (i.high - i.low) / 2
    assert half == pytest.approx(t_quantile(i.df) * 1.1815, abs=1e-3) and 3.182 * 1.1815 < half < 4.303 * 1.1815


@pytest.mark.parametrize("ours,theirs,verdict", [
    (s(10, 1, 3), [s(7, 1, 3)], "holds"),             # 3 ± 2.267: [0.73, 5.27], above 0
    (s(10, 1, 3), [s(9, 1, 3)], "within noise"),      # 1 ± 2.267: [−1.27, 3.27]
    (s(7, 1, 3), [s(10, 1, 3)], "refuted"),           # −3 ± 2.267: [−5.27, −0.73], below 0
    # the best of several baselines: ours must clear each. Against 7 and 9: 9 is not cleared
    (s(10, 1, 3), [s(7, 1, 3), s(9, 1, 3)], "within noise"),
    (s(10, 1, 3), [s(7, 1, 3), s(6.5, 1, 3)], "holds"),                    # [0.73, 5.27] and [1.23, 5.77]
    # below one of 3: each interval at 1 − 0.05/3 (Bonferroni), t_0.99167,4 = 3.961, half-width 3.234:
    # against 13, −3 ± 3.23 = [−6.23, 0.23] is not refuted; against 14, [−7.23, −0.77] is
    (s(10, 1, 3), [s(7, 1, 3), s(9, 1, 3), s(13, 1, 3)], "within noise"),
    (s(10, 1, 3), [s(7, 1, 3), s(9, 1, 3), s(14, 1, 3)], "refuted"),
    # deterministic sides (std 0, e.g. bytes): se = 0, the interval is the point
    (s(6, 0, 3), [s(4, 0, 3)], "holds"),
])
def test_an_ordering_claim(ours, theirs, verdict):
    assert claim_test(ours, theirs).word == verdict


def test_an_ordering_claim_against_a_target():
    # "10 rounds sooner": baseline's best round 40 ± 1, ours 28 ± 1 (3 seeds): 12 ± 2.267 = [9.73, 14.27],
    # not wholly above 10
    assert claim_test(s(40, 1, 3), [s(28, 1, 3)], target=10).word == "within noise"
    assert claim_test(s(43, 1, 3), [s(28, 1, 3)], target=10).word == "holds"       # [12.73, 17.27]
    # "half the bytes": ours 60 against 0.5 × the baseline's 100 (std 0): 0.5·100 − 60 = −10 < 0
    assert claim_test(s(100, 0, 3).scaled(0.5), [s(60, 0, 3)]).word == "refuted"


@pytest.mark.parametrize("ours,theirs,verdict", [
    # TOST: the 90% interval. std 0.1 each, 3 seeds: se = sqrt(0.02/3) = 0.0816, df 4, t_0.95,4 = 2.132,
    # half-width 0.174
    (s(10, 0.1, 3), s(10.2, 0.1, 3), "holds"),            # [−0.37, −0.03] within ±1
    (s(12, 0.1, 3), s(10, 0.1, 3), "refuted"),            # [1.83, 2.17] wholly above +1
    (s(8, 0.1, 3), s(10, 0.1, 3), "refuted"),             # [−2.17, −1.83] wholly below −1
    # std 0.5 each: se = sqrt(0.5/3) = 0.408, half-width 0.870: [−0.07, 1.67] crosses +1
    (s(10.8, 0.5, 3), s(10, 0.5, 3), "within noise"),
    # 0.1 ± 0.870 = [−0.77, 0.97] at 90% lies within ±1 (holds), where the 95% interval [−1.03, 1.23] would not
    (s(10.1, 0.5, 3), s(10, 0.5, 3), "holds"),
])
def test_a_parity_claim_holds_where_its_interval_lies_within_the_band(ours, theirs, verdict):
    assert claim_test(ours, [theirs], kind="parity", points=1.0).word == verdict


@pytest.mark.parametrize("ours,theirs,kwargs,verdict", [
    (s(10, math.nan, 1), s(7, math.nan, 1), {}, "untested (n=1)"),       # +3 on one seed is no evidence
    (s(7, math.nan, 1), s(10, math.nan, 1), {}, "untested (n=1)"),       # nor −3
    (s(10, 1, 2), s(7, 1, 5), {}, "untested (n=2)"),                     # the fewest seeds of a side
    (s(10, 1, 3), s(7, 1, 3), {"by_construction": True}, "by construction"),
    (s(49, math.nan, 1), s(50, math.nan, 1), {"cut_off": True}, "cut off by the run length"),
    (s(math.nan, math.nan, 0), s(7, 1, 3), {}, "not measured"),
])
def test_claims_that_are_no_evidence_either_way(ours, theirs, kwargs, verdict):
    result = claim_test(ours, [theirs], **kwargs)
    assert result.word == verdict and not result.tested and result.interval is None


def test_a_claim_test_names_what_it_refuses():
    with pytest.raises(ValueError, match="kind='below': must be 'above' or 'parity'"):
        claim_test(s(1, 1, 3), [s(0, 1, 3)], kind="below")
    with pytest.raises(ValueError, match="theirs=()"):
        claim_test(s(1, 1, 3), [])


def test_an_undecided_claim_says_the_smallest_difference_its_test_detects():
    """ours 10 ± 1 against 8 ± 1, 3 seeds each: se = √(2/3) = 0.8165, ν = 4, the interval 2 ± 2.776·0.8165
    holds 0; the fixed-se formula (t₀.₉₇₅,₄ + t₀.₈₀,₄)·se = (2.776 + 0.941)·0.8165 = 3.035 overstates the power."""
    verdict = claim_test(Side("ours", 10, 1, 3), [Side("theirs", 8, 1, 3)])
    assert verdict.word == "within noise"
    # Welch's own power (its ν and se sampled too, welch_power): 3.51, well above the fixed-se formula's 3.035
    assert verdict.detectable == pytest.approx(3.507, abs=5e-3)
    assert verdict.power_line() == f"undecided at n = 3 (detects ≥ {verdict.detectable:.2f} points)"
    assert verdict.p == pytest.approx(0.0704, abs=5e-4)          # 2 · P(T₄ > 2.449)
    decided = claim_test(Side("ours", 10, 0.2, 3), [Side("theirs", 8, 0.2, 3)])
    assert decided.word == "holds" and decided.p < 0.05 and decided.power_line(3) == ""


def test_the_deciding_interval_and_the_best_by_mean_are_both_given():
    """Against a tight baseline at 9 and a wide one at 7: the wide one decides (its interval reaches below 0),
    the tight one is the best by mean."""
    verdict = claim_test(Side("ours", 10, 0.3, 3), [Side("tight", 9, 0.3, 3), Side("wide", 7, 4.0, 3)])
    assert verdict.interval.against == "wide" and verdict.best_by_mean.against == "tight"
    alone = claim_test(Side("ours", 10, 0.3, 3), [Side("tight", 9, 0.3, 3)])
    assert alone.best_by_mean is None


def test_a_claims_p_agrees_with_its_verdict():
    for ours, theirs, kind in [(10, 8, "above"), (10, 9.5, "above"), (10, 10.2, "parity"), (10, 11.5, "parity")]:
        for sd in (0.1, 0.5, 2.0):
            v = claim_test(Side("o", ours, sd, 3), [Side("t", theirs, sd, 4)], kind=kind, points=1.0)
            assert (v.word == "holds") == (v.p < 0.05), (ours, theirs, kind, sd, v)


def test_holm_steps_down_until_a_p_value_misses_its_threshold():
    from fssl_core.report.claim_test import holm
    # 0.01 ≤ 0.05/3 rejected; 0.03 > 0.05/2 stops, and 0.04 after it stays
    assert holm([0.01, 0.04, 0.03, None]) == [True, False, False, None]
    assert holm([0.001, 0.02, 0.04]) == [True, True, True]         # 0.001 ≤ .0167, 0.02 ≤ .025, 0.04 ≤ .05
    assert holm([]) == []


def test_claims_in_words_counts_verdicts_and_gives_the_detectable_range_per_unit():
    import pandas as pd
    from fssl_core.report.claim_words import claims_in_words
    claims = pd.DataFrame({
        "paper": ["p"] * 4 + ["q"],
        "verdict": ["holds", "within noise", "within noise", "within noise", "refuted"],
        "power": ["", "undecided at n = 3 (detects ≥ 4.10 points)", "undecided at n = 5 (detects ≥ 0.34 points)",
                  "undecided at n = 3 (detects ≥ 120.00 samples per client)", ""],
        "holm": ["within noise", "within noise", "within noise", "within noise", "refuted"]})
    words = claims_in_words(claims)
    assert "p: of 4 claims tested, 1 hold, 0 are refuted and 3 undecided" in words
    assert "0.34 to 4.10 points; 120.00 samples per client" in words
    assert "keeps 0 of the 1 holds" in words
    assert "q: of 1 claims tested, 0 hold, 1 are refuted and 0 undecided." in words


def test_a_power_line_speaks_the_claims_unit():
    from fssl_core.report.claim_test import Comparison, Side
    verdict = Comparison(Side("a", 10.0, 3.0, 3), (Side("b", 9.0, 3.0, 3),), unit="MB").verdict(1.0)
    assert verdict.power_line(3, "MB").endswith(" MB)") and verdict.power_line(3).endswith(" points)")


def test_a_power_line_gives_the_deciding_tests_own_seeds():
    """The deciding interval's sides at 5 and 4 seeds, whatever the claim's fewest side."""
    verdict = claim_test(Side("a", 10.0, 3.0, 5), [Side("b", 9.0, 3.0, 4), Side("c", 1.0, 3.0, 3)])
    assert verdict.interval.against == "b" and verdict.power_line(3).startswith("undecided at n = 5 vs 4 (")


def test_a_parity_that_holds_says_when_it_differs_as_well():
    """[−0.37, −0.03] at 90% lies within ±1: parity holds; the 95% interval, −0.2 ± 2.776·0.0816 = [−0.43, 0.03],
    holds 0, so no difference is claimed. At std 0.05 the 95% interval [−0.31, −0.09] excludes 0: both said."""
    close = claim_test(s(10, 0.1, 3), [s(10.2, 0.1, 3)], kind="parity", points=1.0)
    assert close.word == "holds" and close.differs is None
    apart = claim_test(s(10, 0.05, 3), [s(10.2, 0.05, 3)], kind="parity", points=1.0)
    assert apart.word == "holds" and apart.differs is not None and apart.differs.high < 0
    assert str(apart.differs).startswith("[-0.31, -0.09]")


def paper(mean, std, n, printed, name="x"):
    return Side(name, mean, std, n, printed)


@pytest.mark.parametrize("ours,theirs,direction,margin", [
    # 10 ± 1 vs 7 ± 1 (3 seeds): [0.73, 5.27]. The paper printed 97 vs 96.5 (margin +0.5): the interval
    # lies above it
    (paper(10, 1, 3, 97.0), [paper(7, 1, 3, 96.5)], "holds", "above the paper's margin"),
    # the paper printed a margin of +4: the interval holds it
    (paper(10, 1, 3, 97.0), [paper(7, 1, 3, 93.0)], "holds", "consistent with the paper's margin"),
    # the paper printed a margin of +6: the interval lies below it, though ours is above theirs
    (paper(10, 1, 3, 97.0), [paper(7, 1, 3, 91.0)], "holds", "below the paper's margin"),
    # undecided in direction, [−0.37, 0.29]-like, and decided against a margin of +0.73 (FedSiam IID γ = 0.10)
    (paper(96.00, 0.10, 3, 97.22), [paper(96.04, 0.10, 3, 96.49)], "within noise", "below the paper's margin"),
    # against several: below for one is enough (at 5%/k); above needs every one. 10 ± 1 vs 7 and 9 (margins
    # +0.5 and +1.0): [0.73, 5.27] above +0.5, [−1.27, 3.27] holds +1.0: consistent
    (paper(10, 1, 3, 97.0), [paper(7, 1, 3, 96.5), paper(9, 1, 3, 96.0)], "within noise",
     "consistent with the paper's margin"),
])
def test_the_papers_margin_is_a_verdict_beside_the_direction(ours, theirs, direction, margin):
    verdict = claim_test(ours, theirs)
    assert verdict.word == direction and verdict.margin == margin
    assert verdict.decided == (direction in ("holds", "refuted") or margin.startswith(("below", "above")))


def test_no_margin_where_the_paper_printed_no_cell():
    verdict = claim_test(s(10, 1, 3), [paper(7, 1, 3, 96.5)])
    assert verdict.margin is None and verdict.margin_line() == ""


def test_the_parity_band_holds_every_difference_the_paper_calls_comparable():
    """PARITY_POINTS is the narrowest whole point holding every FedSiam-D − FedSiam-MT the paper printed on
    MNIST (Table 5, where §4.3 calls them comparable)."""
    import pandas as pd
    from fssl_core.papers.fedsiam import __file__ as package
    from fssl_core.report.tables import PARITY_POINTS
    from pathlib import Path
    values = pd.read_csv(Path(package).parent / "values.csv", dtype={"labeled": str})
    acc = values[(values.table == "table5") & (values.metric == "accuracy") & (values.dataset == "mnist")]
    wide = acc.pivot_table(index=["setting", "labeled"], columns="method", values="value")
    gaps = (wide.fedsiam_d - wide.fedsiam_mt).abs()
    assert gaps.max() == pytest.approx(0.87, abs=1e-9)
    assert PARITY_POINTS == math.ceil(gaps.max())


@pytest.mark.parametrize("sds,n", [((1.0, 1.0), (3, 3)), ((0.1, 0.4), (3, 3)), ((0.3, 2.0), (5, 4)),
                                    ((0.2, 0.25), (10, 10))])
def test_the_detectable_difference_has_80_percent_power_by_monte_carlo(sds, n):
    """welch_power's δ at 80% power, checked by simulating Welch's test itself (its ν and se estimated from each
    draw) at those spreads and seeds: the share of rejections at δ lies within 2 points of 80%."""
    import numpy as np
    from fssl_core.report.claim_test import exact_detectable
    delta = exact_detectable(sds, n)
    rng = np.random.default_rng(7)
    a = rng.normal(delta, sds[0], size=(20000, n[0]))
    b = rng.normal(0.0, sds[1], size=(20000, n[1]))
    va, vb = a.var(axis=1, ddof=1) / n[0], b.var(axis=1, ddof=1) / n[1]
    se = np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (n[0] - 1) + vb ** 2 / (n[1] - 1))
    from scipy.stats import t
    rejected = np.abs(a.mean(axis=1) - b.mean(axis=1)) > t.ppf(0.975, df) * se
    assert rejected.mean() == pytest.approx(0.80, abs=0.02)


def test_the_bonferroni_split_keeps_a_claim_against_five_equal_baselines_at_5_percent():
    """Under the null (ours equal to each of 5 baselines, 5 seeds each, sd 1): a claim's wrong verdict (holds or
    refuted) in at most 5% ± 1 of 4,000 simulated tables; without the split, "below any one" fires ~2-3× as often."""
    import numpy as np
    rng = np.random.default_rng(11)
    wrong = 0
    for _ in range(4000):
        sides = [Side(f"s{k}", float(v.mean()), float(v.std(ddof=1)), 5) for k, v in enumerate(rng.normal(0, 1, (6, 5)))]
        wrong += claim_test(sides[0], sides[1:]).word in ("holds", "refuted")
    assert wrong / 4000 <= 0.06


def test_the_plain_words_count_what_the_claims_table_shows():
    """Regenerated from the committed rows, each paper's sentence counts the table's tested claims, holds,
    refutations (a refutation renamed "refuted; explained in …" by the report included) and claims decided by the
    paper's margin alone."""
    import re

    from fssl_core import papers
    from fssl_core.paths import project_root
    from fssl_core.report.page import explained
    from fssl_core.report.claim_words import claims_in_words, verdict_words
    from fssl_core.report.tables import claim_verdicts, published_results
    frame = published_results(project_root() / "results")
    claims = explained(claim_verdicts(frame, papers.claim_comparisons()), papers.claim_explanations())
    words = claims_in_words(claims)
    for paper, part in claims.groupby("paper"):
        word = verdict_words(part.verdict)
        tested = word.isin(["holds", "refuted", "within noise"])
        if not tested.any():
            continue
        sentence = re.search(rf"{paper}: of (\d+) claims tested(?: \([^)]*\))?, (\d+) hold, (\d+) are refuted", words)
        assert sentence, (paper, words)
        assert [int(g) for g in sentence.groups()] == [int(tested.sum()), int((word == "holds").sum()),
                                                       int((word == "refuted").sum())]
        by_margin = tested & (word == "within noise") & part.decided.astype(bool)
        if by_margin.any():
            assert f"{int(by_margin.sum())} more are decided by the paper's margin alone" in words
