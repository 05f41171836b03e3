"""A table's figure shows the table beside it: each committed table figure carries the digest of the published
rows it was drawn from (PNG text chunk, plots.save_figure), and it equals the digest of the committed CSV's rows
(fedsiam_table5.png once showed a reduced protocol's values under a stale title)."""
import shutil
from pathlib import Path

import pytest

from fssl_core.papers import redraw_table_figure, table_figure_rows, table_figures
from fssl_core.report.plots import figure_source, rows_digest
from fssl_core.report.tables import read_results

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(table_figures()))
def test_every_committed_table_figure_was_drawn_from_the_committed_rows(name):
    csv, png = ROOT / "results" / f"{name}.csv", ROOT / "figures" / f"{name}.png"
    assert csv.exists() and png.exists(), f"{name}: a table figure needs its CSV and its PNG committed"
    drawn = figure_source(png)
    assert drawn is not None, f"{png.name}: no source digest; redraw it (papers.redraw_table_figure)"
    assert drawn == rows_digest(table_figure_rows(name, read_results(csv))), (
        f"{png.name} was drawn from other rows than {csv.name} holds: stale; redraw it")


def test_a_republished_row_redraws_its_figure(tmp_path, monkeypatch):
    """redraw_table_figure (what reproduce runs after publishing a notebook) follows the published CSV: a changed
    reproduced value changes the digest the new figure carries, and side tables do not enter it."""
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    (tmp_path / "results").mkdir()
    name = "fedsiam_table7"
    shutil.copy(ROOT / "results" / f"{name}.csv", tmp_path / "results" / f"{name}.csv")
    first = figure_source(redraw_table_figure(name, "quick"))
    frame = read_results(tmp_path / "results" / f"{name}.csv")
    main = frame.index[(frame.table == "table7") & (frame.metric == "accuracy") & frame.reproduced_value.notna()][0]
    side = frame.index[frame.table != "table7"][0]
    frame.loc[side, "reproduced_value"] = 1.0                      # a side table's row: not drawn
    frame.to_csv(tmp_path / "results" / f"{name}.csv", index=False)
    assert figure_source(redraw_table_figure(name, "quick")) == first
    frame.loc[main, "reproduced_value"] += 0.5
    frame.to_csv(tmp_path / "results" / f"{name}.csv", index=False)
    second = figure_source(redraw_table_figure(name, "quick"))
    assert second != first and second == rows_digest(table_figure_rows(name, read_results(tmp_path / "results" / f"{name}.csv")))
    assert (tmp_path / "figures" / f"{name}.png").exists()


def test_the_device_the_title_names_is_in_the_digest():
    """A table figure's title names the devices of its rows, so a row measured on another device must make
    the committed figure stale."""
    frame = read_results(ROOT / "results" / "fedsiam_table5.csv")
    rows = table_figure_rows("fedsiam_table5", frame)
    moved = rows.copy()
    moved.loc[moved.index[0], "device"] = "cuda"
    assert rows_digest(moved) != rows_digest(rows)
