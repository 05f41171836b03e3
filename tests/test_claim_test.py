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
    (s(10, 1, 3), [s(7, 1, 3), s(9, 1, 3), s(13, 1, 3)], "refuted"),      # below 13: [−5.27, −0.73]
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
    # std 0.1 each, 3 seeds: se = sqrt(0.02/3) = 0.0816, df 4, half-width 2.776 · 0.0816 = 0.227
    (s(10, 0.1, 3), s(10.2, 0.1, 3), "holds"),            # [−0.43, 0.03] within ±1
    (s(12, 0.1, 3), s(10, 0.1, 3), "refuted"),            # [1.77, 2.23] wholly above +1
    (s(8, 0.1, 3), s(10, 0.1, 3), "refuted"),             # [−2.23, −1.77] wholly below −1
    # std 0.5 each: se = sqrt(0.5/3) = 0.408, half-width 1.133: [−0.33, 1.93] crosses +1
    (s(10.8, 0.5, 3), s(10, 0.5, 3), "within noise"),
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
    holds 0; at 80% power the test detects (t₀.₉₇₅,₄ + t₀.₈₀,₄)·se = (2.776 + 0.941)·0.8165 = 3.035."""
    verdict = claim_test(Side("ours", 10, 1, 3), [Side("theirs", 8, 1, 3)])
    assert verdict.word == "within noise"
    assert verdict.detectable == pytest.approx(3.035, abs=2e-3)
    assert verdict.power_line(3) == "undecided at n = 3 (detects ≥ 3.04 points)"
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
    from fssl_core.report.tables import claims_in_words
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
