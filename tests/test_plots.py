"""paper_vs_reproduced's small multiples and save_figure's atomic write, on hand-built frames."""
import io
import itertools
import math
import struct
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

from fssl_core.papers import fedsiam  # noqa: E402
from fssl_core.report.plots import paper_vs_reproduced, save_figure  # noqa: E402
from fssl_core.report.tables import COLUMNS  # noqa: E402


def _row(**values):
    base = {c: math.nan for c in COLUMNS}
    base.update(paper="fedsiam", table="table5", setting="iid", labeled="0.10", dataset="mnist",
                method="fedavg", metric="accuracy", paper_value=95.0, reproduced_value=94.0, n_runs=1,
                profile="quick", device="cpu", seconds=1.0, status="reduced")
    base.update(values)
    return base


def _frame(rows):
    return pd.DataFrame(rows, columns=COLUMNS)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _png_size(fig) -> tuple[int, int]:
    """(width, height) in pixels of the PNG that save_figure would write (120 dpi)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=120, format="png")
    return struct.unpack(">II", buffer.getvalue()[16:24])     # the IHDR chunk


def _ours_heights(ax):
    """Heights of the blue bars that were drawn (a NaN height draws nothing)."""
    ours = ax.containers[1]
    return [p.get_height() for p in ours.patches if np.isfinite(p.get_height())]


def test_one_panel_per_dataset_setting_and_gamma_with_every_coordinate_in_its_title():
    rows = [_row(dataset=d, setting=s, method=m, paper_value=90 + i, reproduced_value=91 + i)
            for d, s in itertools.product(["mnist", "fmnist"], ["iid", "noniid1"])
            for i, m in enumerate(["fedavg", "fedsiam_pi", "fedsiam_d"])]
    # metrics other than accuracy are not drawn
    rows.append(_row(metric="upload_mb", paper_value=5.0, reproduced_value=6.0))
    fig, axes = paper_vs_reproduced(_frame(rows), title="T", display_names=fedsiam.DISPLAY_NAMES)
    assert len(axes) == 4
    titles = [ax.get_title() for ax in axes]
    assert titles == ["mnist · iid · γ=0.10", "mnist · noniid1 · γ=0.10",
                      "fmnist · iid · γ=0.10", "fmnist · noniid1 · γ=0.10"]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["FedAvg", "FedSiam-Π", "FedSiam-D"]
    # without display names a method keeps its identifier: plots know no paper
    _, plain = paper_vs_reproduced(_frame(rows), title="T")
    assert [t.get_text() for t in plain[0].get_xticklabels()] == ["fedavg", "fedsiam_pi", "fedsiam_d"]
    assert _ours_heights(axes[0]) == [91, 92, 93]


def test_a_label_count_is_not_called_gamma():
    fig, axes = paper_vs_reproduced(_frame([_row(paper="fedanchor", labeled="250", dataset="cifar10")]))
    assert axes[0].get_title() == "cifar10 · iid · 250 labels"


def test_panels_that_only_need_data_are_dropped_and_counted_in_the_footer():
    rows = [_row(method=m) for m in ["fedavg", "fedsem"]]
    rows += [_row(dataset="cifar10", method=m, paper_value=50.0, reproduced_value=math.nan, n_runs=0,
                  status="needs-data") for m in ["fedavg", "fedsem"]]
    # inside a kept panel, a cell without a run keeps its paper bar and says "no run"
    rows.append(_row(method="fedmatch", paper_value=93.0, reproduced_value=math.nan, n_runs=0,
                     status="needs-data"))
    fig, axes = paper_vs_reproduced(_frame(rows))
    assert [ax.get_title() for ax in axes] == ["mnist · iid · γ=0.10"]
    ax = axes[0]
    assert [p.get_height() for p in ax.containers[0].patches] == [95.0, 95.0, 93.0]
    assert _ours_heights(ax) == [94.0, 94.0]
    assert "no run" in [t.get_text() for t in ax.texts]
    footer = " ".join(fig._supxlabel.get_text().split())       # wrapped to the figure's width
    assert "3 of 5 cells need data (cifar10, mnist not on this machine)" in footer


def test_needs_gpu_and_diverged_rows_draw_no_bar_of_ours():
    rows = [_row(method="fedavg"), _row(method="fedsem", status="needs-gpu", reproduced_value=math.nan),
            _row(method="fedmatch", status="diverged", reproduced_value=12.0)]
    fig, axes = paper_vs_reproduced(_frame(rows))
    assert _ours_heights(axes[0]) == [94.0]
    assert {"needs GPU", "diverged"} <= {t.get_text() for t in axes[0].texts}
    assert "1 of 3 cells need a GPU" in fig._supxlabel.get_text()


def test_a_paper_protocol_cell_that_diverged_is_not_stood_in_for_by_a_reduced_run():
    rows = [_row(method="fedavg", reproduced_value=96.9, profile="paper", status="ok"),
            _row(method="fedfixmatch", reproduced_value=97.0, profile="quick"),
            _row(method="fedfixmatch", reproduced_value=81.9, profile="paper", status="diverged", n_runs=4)]
    fig, axes = paper_vs_reproduced(_frame(rows))
    assert _ours_heights(axes[0]) == [96.9]
    assert "diverged" in {t.get_text() for t in axes[0].texts}
    # the quick row no bar draws is named nowhere: one protocol drawn, no hatch, no "quick" in the header, the
    # legend's solid entry is the only ours
    header = " ".join(fig.legends[0].get_title().get_text().split())
    assert "quick" not in header and [p.get_hatch() for p in axes[0].containers[1].patches if p.get_height() > 0] == [None]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["paper", "ours"]


def test_an_at_chance_row_draws_its_bar_and_says_so():
    rows = [_row(method="fedavg"), _row(method="fedmatch", status="at-chance", reproduced_value=9.8)]
    fig, axes = paper_vs_reproduced(_frame(rows))
    assert _ours_heights(axes[0]) == [94.0, 9.8]
    assert "at chance" in {t.get_text() for t in axes[0].texts}


def test_error_bars_only_where_the_std_over_seeds_is_finite():
    rows = [_row(method="fedavg", reproduced_std=0.5, n_runs=3),
            _row(method="fedsem", reproduced_std=math.nan, n_runs=1)]
    fig, axes = paper_vs_reproduced(_frame(rows))
    bars = [c for c in axes[0].containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 1
    segments = bars[0].lines[2][0].get_segments()
    assert len(segments) == 1
    (x0, y0), (x1, y1) = segments[0]
    assert x0 == pytest.approx(0.2) and (y0, y1) == pytest.approx((93.5, 94.5))
    # seeds differ between cells, so the panel says how many each bar averages
    assert "n=3" in [t.get_text() for t in axes[0].texts]


def test_y_axis_starts_below_the_smallest_value_not_at_zero_and_says_so():
    rows = [_row(method="fedavg", paper_value=96.0, reproduced_value=97.5),
            _row(method="fedsem", paper_value=93.0, reproduced_value=92.0)]
    fig, axes = paper_vs_reproduced(_frame(rows))
    bottom, top = axes[0].get_ylim()
    assert 80 < bottom < 92 and top > 97.5
    assert "truncated" in fig._supxlabel.get_text()


def test_the_paper_protocol_run_is_drawn_and_marked_where_one_exists():
    rows = [_row(method="fedavg", reproduced_value=91.0, profile="quick"),
            _row(method="fedavg", reproduced_value=96.9, profile="paper"),
            _row(method="fedsem", reproduced_value=92.0, profile="quick")]
    fig, axes = paper_vs_reproduced(_frame(rows), title="FedSiam Table 5")
    ours = axes[0].containers[1].patches
    assert [p.get_height() for p in ours] == [96.9, 92.0]
    assert [p.get_hatch() for p in ours] == ["////", None]
    header = fig.legends[0].get_title().get_text()
    assert header.startswith("FedSiam Table 5\nours: ")
    assert {"paper profile", "quick profile"} <= {w for w in ("paper profile", "quick profile")
                                                  if w in " ".join(header.split())}    # wrapped to the figure's width
    assert max(map(len, header.split("\n"))) <= fig.get_figwidth() * 12


def test_the_header_names_only_the_profiles_whose_rows_are_drawn():
    """A quick row hidden behind its cell's paper-protocol row is not drawn, so the header does not name quick."""
    rows = [_row(method="fedavg", reproduced_value=91.0, profile="quick"),
            _row(method="fedavg", reproduced_value=96.9, profile="paper")]
    fig, axes = paper_vs_reproduced(_frame(rows), title="FedSiam Table 5")
    header = " ".join(fig.legends[0].get_title().get_text().split())
    assert "paper profile" in header and "quick" not in header
    assert [p.get_hatch() for p in axes[0].containers[1].patches] == [None]     # one protocol drawn: no hatch


def test_forty_panels_fit_a_slide_width():
    rows = [_row(dataset=d, setting=f"s{s}", method=m)
            for d in ["mnist", "svhn"] for s in range(20)
            for m in ["fedavg", "fedavg_plus", "fedsem", "fedfixmatch", "fedmatch", "fedsiam_pi",
                      "fedsiam_mt", "fedsiam_d"]]
    fig, axes = paper_vs_reproduced(_frame(rows))
    assert len(axes) == 40
    # the PNG's pixels are the figure's inches at save_figure's 120 dpi (no tight bbox); drawing
    # 40 panels to check it would take seconds, the next test saves a real one
    width, height = fig.get_size_inches() * 120
    assert width <= 2400 and height <= 3000


def test_long_variant_names_never_overlap():
    """Table 7: one panel per ablation setting; titles and rotated method names stay apart."""
    settings = ["siamese=no", "siamese=yes", "alpha_max=0.9", "alpha_max=0.9999",
                "quantile_curve=linear", "quantile_curve=rectangle"]
    rows = [_row(setting=s, method=m) for s in settings
            for m in ["fedsiam_d", "fedsiam_nosiam", "fedanchor_client_server_mixup"]]
    fig, axes = paper_vs_reproduced(_frame(rows))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [ax.get_tightbbox(renderer) for ax in axes]        # title, tick labels and axes
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b)
    assert _png_size(fig)[0] <= 2400


def test_a_table_without_any_run_says_so_in_one_small_figure():
    rows = [_row(dataset="cifar10", method=m, reproduced_value=math.nan, n_runs=0, status="needs-data")
            for m in ["fedavg", "fedsem"]]
    fig, axes = paper_vs_reproduced(_frame(rows), title="FedAnchor Table 1")
    assert len(axes) == 1
    assert "2 of 2 cells need data (cifar10" in axes[0].texts[0].get_text()
    assert _png_size(fig)[0] <= 2400


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_save_figure_leaves_no_temporary_file(tmp_path, monkeypatch):
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    fig, _ = plt.subplots()
    path = save_figure(fig, "t5", "quick")
    assert path == tmp_path / "results" / "by_hand" / "figures" / "t5.png" and _listing(path.parent) == ["t5.png"]
    assert path.read_bytes().startswith(b"\x89PNG")


def test_a_notebook_run_by_hand_writes_beside_the_published_files_never_over_them(tmp_path, monkeypatch):
    """Run by hand (no `reproduce`), a notebook's figure and table go under results/by_hand/; under `reproduce` into
    its staging folder (report/publish.py moves them); figures/ itself only takes the figures `reproduce` redraws."""
    from fssl_core.report.tables import COLUMNS, save_notebook_results
    from fssl_core.profiles import PROFILES
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    monkeypatch.delenv("FSSL_OUTPUT_STAGING", raising=False)
    fig, _ = plt.subplots()
    by_hand = tmp_path / "results" / "by_hand"
    assert save_figure(fig, "tau", "quick") == by_hand / "figures" / "tau.png"
    assert save_figure(fig, "tau", "smoke") == by_hand / "results" / "smoke" / "figures" / "tau.png"
    table = save_notebook_results(pd.DataFrame(columns=COLUMNS), "nb", PROFILES["quick"])
    assert table == by_hand / "results" / "nb.csv"
    assert save_figure(fig, "t5", "quick", published=True) == tmp_path / "figures" / "t5.png"
    assert not (tmp_path / "results" / "nb.csv").exists()
    monkeypatch.setenv("FSSL_OUTPUT_STAGING", str(tmp_path / "stage"))
    assert save_figure(fig, "tau", "quick") == tmp_path / "stage" / "figures" / "tau.png"
    assert save_notebook_results(pd.DataFrame(columns=COLUMNS), "nb", PROFILES["quick"]) == tmp_path / "stage" / "results" / "nb.csv"


def test_two_saves_of_one_name_at_once_both_succeed(tmp_path, monkeypatch):
    """The second save starts and finishes while the first is between writing its temporary
    file and renaming it (with one shared temporary name, the first rename would fail)."""
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    first, _ = plt.subplots(figsize=(2, 2))
    second, _ = plt.subplots(figsize=(3, 3))
    draw_first = first.savefig

    def interleaved(target, **kwargs):
        draw_first(target, **kwargs)
        save_figure(second, "t5", "quick")

    monkeypatch.setattr(first, "savefig", interleaved)
    path = save_figure(first, "t5", "quick")
    assert _listing(path.parent) == ["t5.png"]
    assert struct.unpack(">II", path.read_bytes()[16:24]) == (240, 240)   # the first one won, last


def test_a_failed_save_removes_its_temporary_file_and_keeps_the_old_figure(tmp_path, monkeypatch):
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    fig, _ = plt.subplots()
    path = save_figure(fig, "t5", "quick")
    before = path.read_bytes()

    def broken(target, **kwargs):
        half = b"half a png"
        target.write(half) if hasattr(target, "write") else Path(target).write_bytes(half)
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(fig, "savefig", broken)
    with pytest.raises(RuntimeError):
        save_figure(fig, "t5", "quick")
    assert _listing(path.parent) == ["t5.png"] and path.read_bytes() == before


def test_display_names_cover_every_transcribed_method():
    from fssl_core.papers import display_names, paper_values

    methods = set(paper_values().method) - {"best", "local_model"}   # not drawn as bars
    assert methods <= set(display_names())


def test_a_round_curve_title_says_how_many_seeds_each_point_averages():
    from fssl_core.report.plots import round_curves, seeds_note
    curves = pd.DataFrame({"method": ["a", "a", "b", "b"], "round": [1, 2, 1, 2], "accuracy": [50.0, 60, 40, 45],
                           "n_runs": [3, 3, 3, 2]})
    fig, ax = round_curves(curves, title="Fashion-MNIST iid")
    assert ax.get_title() == "Fashion-MNIST iid\nmean of 2-3 seeds per point"
    assert seeds_note(curves[curves.n_runs == 3]) == "\nmean of 3 seeds per point"
    assert seeds_note(curves.assign(n_runs=1)) == "\nmean of 1 seed per point"
    assert seeds_note(curves.drop(columns="n_runs")) == ""
    plt.close(fig)


def test_curves_averaging_several_seeds_show_their_spread():
    """A point that averages several seeds draws its ± std as a band, and the title says the shading is the spread;
    one seed draws no band."""
    from matplotlib.collections import PolyCollection
    from fssl_core.report.plots import round_curves
    curves = pd.DataFrame({"method": ["a"] * 3 + ["b"] * 3, "round": [1, 2, 3] * 2,
                           "accuracy": [50.0, 60.0, 70.0, 40.0, 45.0, 50.0],
                           "accuracy_std": [2.0, 1.5, 1.0] + [math.nan] * 3, "n_runs": [3] * 3 + [1] * 3})
    fig, ax = round_curves(curves, title="t")
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 1 and "shaded: ± std" in ax.get_title()
    plt.close(fig)
    fig, ax = round_curves(curves[curves.method == "b"], title="t")
    assert not [c for c in ax.collections if isinstance(c, PolyCollection)] and "shaded" not in ax.get_title()
    plt.close(fig)


def test_a_panel_with_no_finished_run_says_so_without_a_warning():
    """A panel whose cells have no finished run (a profile's runs not in the store) says so in words, and draws no
    legend: matplotlib warns, into the published notebook, when asked for a legend of nothing."""
    import warnings
    from fssl_core.report.plots import round_curves
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig, ax = round_curves(pd.DataFrame(columns=["method", "round", "accuracy"]), title="t")
    assert ax.get_legend() is None and [t.get_text() for t in ax.texts] == [
        "no finished run of these cells in the run store"]
    plt.close(fig)
    fig, ax = round_curves(pd.DataFrame({"method": ["a"], "round": [1], "accuracy": [50.0]}), title="t")
    assert ax.get_legend() is not None and len(ax.texts) == 0
    plt.close(fig)
