"""Figure functions: pure, each returns (fig, ax); notebooks save them with `save_figure`."""
from __future__ import annotations

import hashlib

import os
import tempfile
import textwrap
from pathlib import Path
from typing import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from PIL import Image

from ..paths import figures_dir


# Paper-vs-reproduced small multiples ------------------------------------------------------
# One panel per table coordinate (dataset, setting, labeled); within a panel a grey bar (paper)
# beside a blue one (ours) per method. Sizes are inches at save_figure's 120 dpi.
PAPER_GREY, OURS_BLUE = "#a0a0a0", "#1f77b4"
DRAWN = ("ok", "reduced", "at-chance")   # statuses whose reproduced value is a result (at-chance: marked)
MAX_COLUMNS = 5
MAX_ROWS = 6                         # beyond this, pack panels tighter before adding rows
MAX_WIDTH_IN = 20.0                  # 2,400 px: a slide's width at 120 dpi
METHOD_SLOT_IN = 0.42                # one method's pair of bars
ROW_HEIGHT_IN = 2.7
NO_RUN = {"needs-data": "no run", "needs-gpu": "needs GPU", "diverged": "diverged"}
PROFILE_NOTES = {"smoke": "a wiring check, not a result", "quick": "reduced protocol",
                 "paper": "the paper's protocol"}


def labeled_label(labeled: str) -> str:
    """FedSiam's `labeled` is the labeled fraction γ (e.g. "0.10"); FedAnchor's a label count."""
    try:
        value = float(labeled)
    except ValueError:
        return f"labeled={labeled}"
    return f"γ={labeled}" if value < 1 else f"{labeled} labels"


def panel_title(dataset: str, setting: str, labeled: str, max_chars: int = 60) -> str:
    parts = [dataset, setting, labeled_label(labeled)]
    title = " · ".join(parts)
    # a long setting (Table 7's "quantile_curve=rectangle") would run into the next panel
    return title if len(title) <= max_chars else f"{' · '.join(parts[:2])}\n{parts[2]}"


def _panels(rows: pd.DataFrame) -> list[tuple[tuple[str, str, str], pd.DataFrame]]:
    """(dataset, setting, labeled) groups in reading order: datasets and settings as the table
    lists them, γ ascending; a group whose every row needs data is dropped."""
    def rank(column):
        return {v: i for i, v in enumerate(dict.fromkeys(rows[column]))}

    def labeled_key(labeled):
        try:
            return (0, float(labeled), "")
        except ValueError:
            return (1, 0.0, labeled)

    d_rank, s_rank = rank("dataset"), rank("setting")
    groups = [(key, part) for key, part in rows.groupby(["dataset", "setting", "labeled"], sort=False)
              if not (part.status == "needs-data").all()]
    return sorted(groups, key=lambda g: (d_rank[g[0][0]], s_rank[g[0][1]], labeled_key(g[0][2])))


def _bars(part: pd.DataFrame) -> pd.DataFrame:
    """One row per method: the paper's value and ours. Where a cell was run at several profiles,
    ours is the paper-protocol run (`protocol` True); a cell without a result keeps its status, and so does
    a cell whose paper-protocol runs diverged (a reduced run beside them would stand in for a failed one)."""
    out = []
    for method, cell in part.groupby("method", sort=False):
        done = cell[cell.status.isin(DRAWN) & cell.reproduced_value.notna()]
        if ((cell.profile == "paper") & (cell.status == "diverged")).any():
            done = done[done.profile == "paper"]
        done = done.assign(first=(done.profile != "paper")).sort_values("first", kind="stable")
        paper = cell.paper_value.dropna()
        row = {"method": method, "paper_value": paper.iloc[0] if len(paper) else np.nan,
               "ours": np.nan, "std": np.nan, "n_runs": 0, "protocol": False, "profile": None,
               "status": "diverged" if (cell.status == "diverged").any() and not len(done) else cell.status.iloc[0]}
        if len(done):
            best = done.iloc[0]
            row.update(ours=best.reproduced_value, std=best.reproduced_std, n_runs=int(best.n_runs),
                       protocol=best.profile == "paper", status=best.status, profile=best.profile)
        out.append(row)
    return pd.DataFrame(out)


def _layout(keys: list[tuple[str, str, str]]) -> list[list[int]]:
    """Panel indices per grid row. A row per dataset·setting when that makes a grid of a few rows
    (Table 5 on MNIST: γ across, settings down), else a row per dataset, else panels in reading
    order; each wrapped at MAX_COLUMNS, balanced (8 panels: 4 + 4, not 5 + 3)."""
    def rows_by(key_of):
        groups: list[list[int]] = []
        for i, key in enumerate(keys):
            if groups and key_of(keys[groups[-1][0]]) == key_of(key):
                groups[-1].append(i)
            else:
                groups.append([i])
        widest = max(len(g) for g in groups)
        per_row = -(-widest // -(-widest // MAX_COLUMNS))
        return groups, [g[i:i + per_row] for g in groups for i in range(0, len(g), per_row)]

    candidates = [rows_by(key_of) for key_of in (lambda k: k[:2], lambda k: k[0], lambda k: None)]
    for groups, grid in candidates:
        if np.mean([len(g) for g in groups]) >= 2 and len(grid) <= MAX_ROWS:
            return grid
    return min((grid for _, grid in candidates), key=len)


def _value_limits(bars: list[pd.DataFrame]) -> tuple[float, float]:
    """y-limits for these panels: from a little below their smallest value (bar or error bar),
    not from 0, so that gaps of a point or two stay visible."""
    values = []
    for b in bars:
        std = b["std"].fillna(0)
        values += [b.paper_value, b.ours - std, b.ours + std]
    values = pd.concat(values).dropna()
    if values.empty:
        return 0.0, 100.0
    lo, hi = float(values.min()), float(values.max())
    pad = max(0.6, 0.12 * (hi - lo))
    return max(0.0, np.floor(lo - 2 * pad)), hi + 1.5 * pad


def _shared_limits(bars: list[pd.DataFrame]) -> tuple[float, float] | None:
    """The row's common y-limits, or None where sharing would squash a panel's differences (a row
    holding MNIST's IID cells at 92-98 % beside Non-IID cells down to 45 %)."""
    own = [_value_limits([b]) for b in bars]
    shared = _value_limits(bars)
    narrowest = min(top - bottom for bottom, top in own)
    return shared if shared[1] - shared[0] <= 2 * narrowest else None


def _draw_panel(ax, bars: pd.DataFrame, title: str, mark_protocol: bool, show_n: bool,
                display_names: Mapping[str, str]) -> None:
    x = np.arange(len(bars))
    ax.bar(x - 0.2, bars.paper_value, width=0.4, color=PAPER_GREY, label="paper")
    ours = ax.bar(x + 0.2, bars.ours, width=0.4, color=OURS_BLUE, label="ours")
    for patch, protocol in zip(ours.patches, bars.protocol):
        if protocol and mark_protocol:
            patch.set_hatch("////")
            patch.set_edgecolor("white")
    finite = bars["std"].notna() & bars.ours.notna()        # one seed has no std: no error bar
    if finite.any():
        ax.errorbar(x[finite] + 0.2, bars.ours[finite], yerr=bars["std"][finite], fmt="none",
                    ecolor="black", elinewidth=0.9, capsize=2.5)
    bottom, top = ax.get_ylim()
    for xi, b in zip(x, bars.itertuples()):
        if np.isnan(b.ours):
            ax.text(xi + 0.2, bottom + 0.03 * (top - bottom), NO_RUN.get(b.status, "no run"),
                    rotation=90, ha="center", va="bottom", fontsize=6.5, color="#555555")
        elif b.status == "at-chance":
            ax.text(xi + 0.2, b.ours, "at chance", rotation=90, ha="center", va="bottom", fontsize=6.5, color="#b00000")
        elif b.n_runs > 1 and show_n:
            ax.text(xi + 0.2, b.ours + (0 if np.isnan(b.std) else b.std), f"n={b.n_runs}",
                    ha="center", va="bottom", fontsize=6)
    labels = [display_names.get(m, m) for m in bars.method]
    ax.set_xticks(x, labels, rotation=35, ha="right", rotation_mode="anchor", fontsize=7.5)
    half = max(len(bars), 3) / 2          # a lone method keeps bars of the usual width, centred
    ax.set_xlim((len(bars) - 1) / 2 - half, (len(bars) - 1) / 2 + half)
    ax.tick_params(axis="y", labelsize=7.5)
    ax.grid(axis="y", lw=0.4, alpha=0.5)
    ax.set_axisbelow(True)
    ax.set_title(title, fontsize=9)


def _ours_note(drawn: pd.DataFrame) -> str:
    """Which profile(s) produced the drawn numbers, with their seeds per cell."""
    notes = []
    for profile, part in drawn.groupby("profile", sort=False):
        seeds = sorted(set(part.n_runs.astype(int)))
        n = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"
        what = [PROFILE_NOTES[profile]] if profile in PROFILE_NOTES else []
        what.append(f"{n} seed{'s' if seeds[-1] > 1 else ''} per cell")
        notes.append(f"{profile} profile ({', '.join(what)})")
    return "ours: " + "; ".join(notes)


def _missing_note(rows: pd.DataFrame) -> str:
    """How many cells (coordinates × method) have no result, and why."""
    cell = ["dataset", "setting", "labeled", "method"]
    result = rows.status.isin(DRAWN) & rows.reproduced_value.notna()
    has_result = result.groupby([rows[c] for c in cell], sort=False).transform("any")
    total = len(rows.drop_duplicates(cell))
    notes = []
    for status, part in rows[~has_result].drop_duplicates(cell).groupby("status", sort=False):
        what = {"needs-data": "need data", "needs-gpu": "need a GPU"}.get(status, status)
        absent = f" ({', '.join(dict.fromkeys(part.dataset))} not on this machine)" if status == "needs-data" else ""
        notes.append(f"{len(part)} of {total} cells {what}{absent}")
    return "; ".join(notes)


def _nothing_to_draw(title: str, missing: str, fills: str | None = None):
    """Every cell lacks a result (e.g. no dataset of the table is on this machine): say so in one line,
    with the command that fills it where the data exist, rather than draw empty axes."""
    fig, ax = plt.subplots(figsize=(9.0, 1.8), layout="constrained")
    ax.axis("off")
    said = f"No reproduced value: {missing or 'no accuracy rows'}."
    if fills:
        said += f"\nWhere the data exist, this fills it:\n{fills}"
    ax.text(0.5, 0.5, said, ha="center", va="center", fontsize=9)
    fig.suptitle(title, fontsize=10)
    return fig, np.array([ax])


def _legend_and_notes(fig, drawn: pd.DataFrame, header: str, missing: str, truncated: bool) -> None:
    """The legend under the title (one artist, so the layout never lets them overlap) and a
    footer saying which cells are absent and that the y axes do not start at 0."""
    handles = [plt.Rectangle((0, 0), 1, 1, color=PAPER_GREY), plt.Rectangle((0, 0), 1, 1, color=OURS_BLUE)]
    labels = ["paper", "ours" + (" (± std over seeds)" if drawn.reproduced_std.notna().any() else "")]
    if drawn.profile.nunique() > 1:
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor=OURS_BLUE, hatch="////", edgecolor="white"))
        labels.append(f"ours, paper protocol where run ({(drawn.profile == 'paper').sum()} cells)")
    # the header wrapped to the figure's width (a narrow table's two panels would cut a long line off)
    header = "\n".join(textwrap.fill(line, int(fig.get_figwidth() * 12)) for line in header.split("\n"))
    fig.legend(handles, labels, loc="outside upper center", ncols=len(handles), fontsize=8, frameon=False,
               title=header, title_fontsize=10, alignment="center")
    fig.supylabel("test accuracy (%)", fontsize=9)
    footer = [missing + "; panels without any run are left out" if missing else "",
              "y axes truncated: each starts a little below its smallest value, not at 0" if truncated else ""]
    width = int(fig.get_figwidth() * 15)          # characters of 7.5 pt text the figure holds in a line
    fig.supxlabel("\n".join(textwrap.fill(t, width) for t in footer if t), fontsize=7.5, color="#444444")


def paper_vs_reproduced(frame: pd.DataFrame, title: str = "", display_names: Mapping[str, str] | None = None,
                        fills: str | None = None):
    """Small multiples, one panel per (dataset, setting, labeled): per method the paper's test
    accuracy (grey) beside ours (blue, ± std over seeds where there are several), the method named by
    `display_names` (a paper's DISPLAY_NAMES; a method it lacks keeps its identifier). Returns the
    figure and the 1-D array of drawn panels, in reading order. `fills`: the command that measures the
    cells, said on a figure with nothing to draw."""
    rows = frame[frame.metric == "accuracy"].assign(labeled=lambda f: f.labeled.astype(str))
    rows = rows.reset_index(drop=True)
    missing = _missing_note(rows) if len(rows) else ""
    panels = _panels(rows)
    if not panels:
        return _nothing_to_draw(title, missing, fills)

    keys = [key for key, _ in panels]
    bars = [_bars(part) for _, part in panels]
    # the bars as drawn (_bars: a cell's paper-protocol row where it has one, none beside a diverged paper cell), so
    # the header, the hatching and the legend name only what the figure shows, never a quick row no bar draws
    drawn = pd.concat([b[b.ours.notna()] for b in bars], ignore_index=True).rename(
        columns={"std": "reproduced_std", "ours": "reproduced_value"})
    grid = _layout(keys)
    ncols = max(len(r) for r in grid)
    panel_w = min(MAX_WIDTH_IN / ncols, max(3.0, METHOD_SLOT_IN * max(map(len, bars)) + 1.0))
    fig = plt.figure(figsize=(panel_w * ncols, ROW_HEIGHT_IN * len(grid) + 1.3), layout="constrained")
    mark_protocol = drawn.profile.nunique() > 1
    show_n = drawn.n_runs.nunique() > 1           # else the header's "n seeds per cell" says it
    chars = int(panel_w * 13)                     # characters a 9 pt title fits in one panel
    axes = np.empty(len(panels), dtype=object)
    grid_axes = fig.subplots(len(grid), ncols, squeeze=False)
    for r, members in enumerate(grid):
        limits = _shared_limits([bars[i] for i in members])
        for c, ax in enumerate(grid_axes[r]):
            if c >= len(members):
                fig.delaxes(ax)
                continue
            i = members[c]
            ax.set_ylim(*(limits or _value_limits([bars[i]])))
            _draw_panel(ax, bars[i], panel_title(*keys[i], max_chars=chars), mark_protocol, show_n,
                        display_names or {})
            if c and limits:
                ax.tick_params(axis="y", labelleft=False)   # the row shares one y scale
            axes[i] = ax

    header = "\n".join(t for t in (title, _ours_note(drawn) if len(drawn) else "") if t)
    _legend_and_notes(fig, drawn, header, missing, truncated=any(ax.get_ylim()[0] > 0 for ax in axes))
    return fig, axes


# A figure drawn from a results table carries the digest of the rows it drew (PNG text chunk), so a test can
# tell a committed figure from a stale one (tests/test_figure_sources.py)
SOURCE_KEY = "fssl:rows_digest"
SOURCE_COLUMNS = ["paper", "table", "setting", "labeled", "dataset", "method", "metric", "paper_value",
                  "reproduced_value", "reproduced_std", "n_runs", "profile", "device", "status"]   # device: the title says it


def rows_digest(frame: pd.DataFrame) -> str:
    """A digest of what paper_vs_reproduced draws from `frame`: its accuracy rows, in a canonical order."""
    rows = frame[frame.metric == "accuracy"][SOURCE_COLUMNS].astype(str)
    rows = rows.sort_values(SOURCE_COLUMNS).to_csv(index=False)
    return hashlib.sha256(rows.encode()).hexdigest()[:16]


def figure_source(path: Path) -> str | None:
    """The rows digest a figure was saved with (save_figure's `source`), or None."""
    with Image.open(path) as image:
        return image.text.get(SOURCE_KEY) if hasattr(image, "text") else None


def save_figure(fig, name: str, profile: str, source: pd.DataFrame | None = None, published: bool = False) -> Path:
    """<name>.png in the notebook's figures folder (paths.figures_dir: staged for publishing under `reproduce`,
    results/by_hand/ when run by hand), or with `published` in figures/ itself (the table figures `reproduce`
    redraws from the published rows); written atomically (a half-written figure never replaces a good one);
    the temporary file's name is unique, so two processes saving the same figure never collide.
    `source`: the results rows the figure was drawn from; their digest goes into the PNG."""
    path = figures_dir(profile, notebook=not published) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    metadata = {SOURCE_KEY: rows_digest(source)} if source is not None else None
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, dpi=120, format="png", metadata=metadata)
        os.chmod(tmp, 0o644)     # mkstemp makes files private; figures are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


YLABELS = {"accuracy": "test accuracy (%)", "pseudo_label_accuracy": "pseudo-label accuracy, kept samples (%)",
           "pseudo_label_accuracy_all": "pseudo-label accuracy, all samples (%)",
           "pseudo_label_accuracy_all_classifier": "pseudo-label accuracy, classifier head (%)",
           "selected": "samples passing the threshold, per client",
           "selected_softmax95": "samples with softmax > 0.95, per client"}


def seeds_note(curves: pd.DataFrame) -> str:
    """What each point of a curve averages (report.round_curves' `n_runs` per round): "\nmean of 3 seeds", or
    "\nmean of 1-3 seeds" where methods or rounds differ; "" for a frame without the count."""
    if "n_runs" not in curves or curves.empty:
        return ""
    lo, hi = int(curves.n_runs.min()), int(curves.n_runs.max())
    count = f"{lo}" if lo == hi else f"{lo}-{hi}"
    return f"\nmean of {count} seed{'s' if hi > 1 else ''} per point"


def round_curves(curves: pd.DataFrame, key: str = "accuracy", title: str = "", target: float | None = None,
                 display_names: Mapping[str, str] | None = None, styles: Mapping[str, str] | None = None,
                 colors: Mapping[str, str] | None = None, ax=None):
    """A per-round metric, one line per method (columns: method, round, `key`; the mean over
    seeds), with an optional dotted target line as FedSiam's Figure 5. `display_names`: the papers'
    names of the methods in the legend (papers.display_names(); a method it lacks keeps its id). `styles`: a
    method's line style (e.g. '--' for a line that may lie on another's, so both stay visible); `colors`: a
    method's colour (one method, one colour across panels). `ax`: draw into this panel of a larger figure."""
    names, styles, colors = display_names or {}, styles or {}, colors or {}
    fig, ax = plt.subplots(figsize=(5.2, 3.4)) if ax is None else (ax.figure, ax)
    spread = f"{key}_std"
    shaded = False
    for method, part in curves.groupby("method", sort=False):
        line, = ax.plot(part["round"], part[key], label=names.get(method, method), lw=1.4, ls=styles.get(method, "-"),
                        color=colors.get(method))
        if spread in part and part[spread].notna().any():     # ± std over seeds where a point averages several
            ax.fill_between(part["round"], part[key] - part[spread], part[key] + part[spread], color=line.get_color(),
                            alpha=0.15, lw=0)
            shaded = True
    if target is not None:
        ax.axhline(target, ls=":", color="k", lw=1, label=f"target {target:g}%")
    ax.set_xlabel("global round")
    ax.set_ylabel(YLABELS.get(key, key))
    ax.set_title(title + seeds_note(curves) + (" (shaded: ± std)" if shaded else ""), fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    if curves.empty:          # say why the panel is blank rather than leave an empty frame to be read as a result
        ax.text(0.5, 0.5, "no finished run of these cells in the run store", ha="center", va="center",
                transform=ax.transAxes, fontsize=9, color="0.35")
    fig.tight_layout()
    return fig, ax


def accuracy_vs_mu(frame: pd.DataFrame, dataset: str, title: str = "", display_names: Mapping[str, str] | None = None):
    """Figure 6: FedSiam-D's accuracy against μ (rows with setting 'mu=<μ>') and the upload volume
    on a second axis; reference methods (setting 'reference') as horizontal lines."""
    rows = frame[(frame.dataset == dataset)]
    mu_rows = rows[rows.setting.str.startswith("mu=")].assign(mu=lambda f: f.setting.str[3:].astype(float))
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    acc = mu_rows[mu_rows.metric == "accuracy"].sort_values("mu")
    ax.errorbar(acc.mu, acc.reproduced_value, yerr=acc.reproduced_std.fillna(0), marker="o", label="FedSiam-D",
                color="#1f77b4", capsize=3)
    refs = rows[(rows.setting == "reference") & (rows.metric == "accuracy")]
    for (method, value), ls in zip(zip(refs.method, refs.reproduced_value), ["--", "-.", ":", (0, (5, 1))]):
        ax.axhline(value, ls=ls, color="#555555", lw=1, label=(display_names or {}).get(method, method))
    ax.set_xlabel("μ (target reduction of online-net uploads)")
    ax.set_ylabel("test accuracy (%)")
    up = mu_rows[mu_rows.metric == "upload_mb"].sort_values("mu")
    ax2 = ax.twinx()
    ax2.plot(up.mu, up.reproduced_value, marker="s", color="#d62728", lw=1, label="upload (MB)")
    ax2.set_ylabel("upload over the run (MB)", color="#d62728")
    ax.set_title(title, fontsize=10)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig, ax


def latent_scatter(points: np.ndarray, labels: np.ndarray, title: str = "", ax=None):
    """2-D points coloured by label, with each label's centroid as a star (FedAnchor Fig. 5)."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(3.6, 3.4))
    else:
        fig = ax.figure
    palette = sns.color_palette("tab10", n_colors=max(10, int(labels.max()) + 1))
    for c in np.unique(labels):
        mine = points[labels == c]
        ax.scatter(mine[:, 0], mine[:, 1], s=3, color=palette[int(c)], alpha=0.6, label=str(c))
        ax.scatter(*mine.mean(0), marker="*", s=160, color=palette[int(c)], edgecolor="k", linewidth=0.6)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)
    return fig, ax
