"""FedAnchor: Table 4 from the real parameter count."""
import pytest

from fssl_core.experiments import fedanchor


def test_table4_matches_every_printed_digit():
    rows = fedanchor.table4_rows("resnet18")
    assert len(rows) == 7
    assert (rows.reproduced_value == rows.paper_value).all(), rows[["dataset", "labeled", "paper_value",
                                                                     "reproduced_value"]]
    # the counts the reading rests on: ResNet-18 without the anchor head, 10 and 100 classes
    assert set(rows.model_parameters) == {11_173_962, 11_220_132}


def test_overhead_hand_computed_and_bad_input_named():
    assert fedanchor.downstream_overhead(1000, 128_000) == pytest.approx(100.0)
    assert fedanchor.downstream_overhead(250, 11_173_962) == pytest.approx(0.28638, abs=1e-5)
    with pytest.raises(ValueError, match="model_parameters=0"):
        fedanchor.downstream_overhead(250, 0)
