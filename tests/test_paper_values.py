"""Checks of the transcribed paper numbers in fssl_core/papers/<paper>/values*.csv.

Always run: exact header, parseable values, unique keys, id vocabulary, table completeness
(row counts) and hand-verified spot checks. When the paper text files are available
(env FSSL_PAPERS, else <repo>/../shared/papers), also: every `source` line exists and prints the
value, and every number printed in a cited table line is transcribed exactly once.
"""
from __future__ import annotations

import csv
import os
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

VALUES_DIR = Path(__file__).resolve().parents[1] / "fssl_core" / "papers"
HEADER = ["paper", "table", "setting", "labeled", "dataset", "method", "metric", "value", "unit", "source"]
KEY = ("paper", "table", "setting", "labeled", "dataset", "method", "metric")

# csv file (in fssl_core/papers/) -> (paper id, paper text files its `source` may cite)
FILES = {
    "fedsiam/values.csv": ("fedsiam", {"fedsiam.md"}),
    "fedmix/values_fedfreq.csv": ("fedmix_fedfreq", {"fedmix-fedfreq.txt"}),
    "fedmix/values_fedloss.csv": ("fedmix_fedloss", {"fedmix-fedloss-zh.txt"}),
    "fedanchor/values.csv": ("fedanchor", {"fedanchor.txt"}),
}
DATASETS = {"mnist", "fashion_mnist", "cifar10", "cifar100", "svhn"}
UNITS = {"%", "pp", "rounds", "samples", "params", "weight", "fraction"}
METHODS = {
    "fedsiam": {"fedavg", "fedavg_plus", "fedsem", "fedfixmatch", "fedmatch", "fedsiam_pi", "fedsiam_mt",
                "fedsiam_d", "fedsiam_nosiam", "fedsiam_d_mse", "fedsiam_d_kl", "best", "local_model"},
    "fedmix_fedfreq": {"fedmix_fedfreq"},
    "fedmix_fedloss": {"fedmix_fedloss", "supervised_server"},
    "fedanchor": {"supervised", "fedcon", "fedavg_fixmatch", "semifl", "semifl_no_mixup", "fedanchor",
                  "fedanchor_mix", "fedanchor_client_mixup", "fedanchor_no_mixup", "fedanchor_client_server_mixup",
                  "fedanchor_server_mixup", "fedanchor_no_contr_loss"},
}
# (paper, table) -> number of rows: every numeric cell of the table (FedAnchor: mean and std)
TABLE_ROWS = {
    ("fedsiam", "table5"): 8 * (12 + 9 + 9),   # γ=0.15/0.20 have no Non-IID-III cells ("-")
    ("fedsiam", "table6"): 8 * 6,
    ("fedsiam", "table7"): 8 * 3,
    ("fedsiam", "table8"): 4 * 3,
    ("fedanchor", "table1"): 12 * 7 * 2,
    ("fedanchor", "table2"): 12 * 7 * 2,
    ("fedanchor", "table3"): 10 * 2 * 2,
    ("fedanchor", "table4"): 7,
}
# Numbers the paper writes in words; value -> accepted spellings.
WORD_NUMBERS = {"0.5": ("一半", "half")}


def _papers_dir() -> Path:
    env = os.environ.get("FSSL_PAPERS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "papers"


def _read(name: str) -> tuple[list[str], list[dict[str, str]]]:
    with open(VALUES_DIR / name, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = [dict(zip(HEADER, r)) for r in reader]
    return header, rows


def _all_rows() -> list[dict[str, str]]:
    out = []
    for name in FILES:
        out.extend(_read(name)[1])
    return out


def _lookup(rows, **key) -> float:
    hits = [r for r in rows if all(r[k] == v for k, v in key.items())]
    assert len(hits) == 1, (key, hits)
    return float(hits[0]["value"])


# ------------------------------------------------------------------------------ always run
@pytest.mark.parametrize("name", sorted(FILES))
def test_header_and_shape(name):
    header, rows = _read(name)
    assert header == HEADER
    assert rows, name
    with open(VALUES_DIR / name, newline="", encoding="utf-8") as f:
        for i, r in enumerate(csv.reader(f), start=1):
            assert len(r) == len(HEADER), f"{name}:{i} has {len(r)} fields"


@pytest.mark.parametrize("name", sorted(FILES))
def test_values_ids_and_keys(name):
    paper, sources = FILES[name]
    _, rows = _read(name)
    seen = set()
    for r in rows:
        where = f"{name}: {r}"
        float(r["value"])
        assert r["value"] == r["value"].strip() and r["value"][0] in "0123456789", where
        assert r["paper"] == paper, where
        assert re.fullmatch(r"table\d+|fig\d+|text", r["table"]), where
        assert re.fullmatch(r"[a-z0-9_.=]+", r["setting"]), where
        assert re.fullmatch(r"[a-z0-9_]+", r["metric"]), where
        assert r["labeled"] == "" or float(r["labeled"]) > 0, where
        assert r["dataset"] in DATASETS, where
        assert r["method"] in METHODS[paper], where
        assert r["unit"] in UNITS, where
        file, _, line = r["source"].rpartition(":")
        assert file in sources and line.isdigit() and int(line) >= 1, where
        key = tuple(r[k] for k in KEY)
        assert key not in seen, f"duplicate key {key}"
        seen.add(key)


def test_table_row_counts():
    counts = Counter((r["paper"], r["table"]) for r in _all_rows())
    for key, n in TABLE_ROWS.items():
        assert counts[key] == n, (key, counts[key], n)


def test_table_grids_complete():
    """Each table is a full grid: every method has every (setting, labeled, dataset) column."""
    rows = _all_rows()
    fedsiam = [r for r in rows if r["paper"] == "fedsiam" and r["table"] == "table5"]
    by_method = defaultdict(set)
    for r in fedsiam:
        by_method[r["method"]].add((r["setting"], r["labeled"], r["dataset"]))
    assert len(by_method) == 8 and len({frozenset(v) for v in by_method.values()}) == 1
    assert not [r for r in fedsiam if r["setting"] == "noniid3" and r["labeled"] != "0.10"]
    for table in ("table1", "table2"):
        grid = defaultdict(set)
        for r in rows:
            if r["paper"] == "fedanchor" and r["table"] == table:
                grid[(r["setting"], r["method"])].add((r["labeled"], r["dataset"], r["metric"]))
        assert len(grid) == 12 and all(len(v) == 14 for v in grid.values()), table


def test_spot_checks():
    """Cells read by hand from the papers."""
    rows = _all_rows()
    fs = dict(paper="fedsiam", metric="accuracy")
    assert _lookup(rows, table="table5", setting="iid", labeled="0.10", dataset="mnist", method="fedavg", **fs) == 95.13
    assert _lookup(rows, table="table5", setting="iid", labeled="0.10", dataset="mnist", method="fedsiam_d", **fs) == 97.22
    assert _lookup(rows, table="table5", setting="noniid2", labeled="0.10", dataset="cifar10", method="fedsiam_mt", **fs) == 58.77
    assert _lookup(rows, table="table5", setting="noniid3", labeled="0.10", dataset="svhn", method="fedsiam_d", **fs) == 87.80
    assert _lookup(rows, table="table5", setting="noniid2", labeled="0.15", dataset="svhn", method="fedsiam_d", **fs) == 86.39
    assert _lookup(rows, table="table5", setting="noniid1", labeled="0.20", dataset="cifar10", method="fedsiam_mt", **fs) == 52.57
    assert _lookup(rows, table="table5", setting="iid", labeled="0.15", dataset="cifar10", method="fedavg_plus", **fs) == 62.37
    assert _lookup(rows, table="table6", setting="server_noniid", labeled="0.01", dataset="svhn", method="fedsiam_mt", **fs) == 81.51
    assert _lookup(rows, table="table6", setting="server_iid", labeled="0.10", dataset="cifar10", method="fedfixmatch", **fs) == 74.75
    assert _lookup(rows, table="table6", setting="server_iid", labeled="0.01", dataset="mnist", method="fedsiam_pi", **fs) == 91.28
    assert _lookup(rows, table="table7", setting="alpha_max=0.9999", labeled="0.10", dataset="cifar10", method="fedsiam_d", **fs) == 63.13
    assert _lookup(rows, table="table7", setting="siamese=no", labeled="0.10", dataset="svhn", method="fedsiam_nosiam", **fs) == 87.24
    assert _lookup(rows, table="table7", setting="quantile_curve=linear", labeled="0.10", dataset="cifar10", method="fedsiam_d", **fs) == 64.08
    assert _lookup(rows, table="table8", setting="noniid1", labeled="0.10", dataset="cifar10", method="fedsiam_d_kl", **fs) == 48.11
    assert _lookup(rows, table="table8", setting="iid", labeled="0.10", dataset="mnist", method="fedsiam_d_kl", **fs) == 96.16
    assert _lookup(rows, paper="fedsiam", table="text", setting="all", labeled="", dataset="cifar10",
                   method="local_model", metric="num_params") == 5852170

    fa = dict(paper="fedanchor")
    assert _lookup(rows, table="table1", setting="resnet18_dir0.1", labeled="250", dataset="svhn", method="semifl", metric="accuracy", **fa) == 68.97
    assert _lookup(rows, table="table1", setting="resnet18_dir0.1", labeled="250", dataset="svhn", method="semifl", metric="accuracy_std", **fa) == 13.24
    assert _lookup(rows, table="table1", setting="resnet18_iid", labeled="500", dataset="cifar10", method="fedanchor", metric="accuracy", **fa) == 85.94
    assert _lookup(rows, table="table1", setting="resnet18_dir0.1", labeled="5000", dataset="cifar10", method="fedanchor_mix", metric="accuracy", **fa) == 83.59
    assert _lookup(rows, table="table2", setting="wrn28x2_iid", labeled="2500", dataset="cifar100", method="fedanchor", metric="accuracy", **fa) == 44.98
    assert _lookup(rows, table="table2", setting="wrn28x2_dir0.1", labeled="250", dataset="cifar10", method="fedcon", metric="accuracy", **fa) == 41.11
    assert _lookup(rows, table="table2", setting="wrn28x2_iid", labeled="1000", dataset="svhn", method="fedavg_fixmatch", metric="accuracy_std", **fa) == 2.16
    assert _lookup(rows, table="table3", setting="wrn28x2_dir0.1", labeled="500", dataset="cifar10", method="fedanchor_server_mixup", metric="accuracy", **fa) == 66.07
    assert _lookup(rows, table="table3", setting="resnet18_dir0.1", labeled="1000", dataset="svhn", method="fedanchor_no_contr_loss", metric="accuracy", **fa) == 88.13
    assert _lookup(rows, table="table4", setting="downstream", labeled="10000", dataset="cifar100", method="fedanchor", metric="comm_overhead", **fa) == 11.41

    assert _lookup(rows, paper="fedmix_fedfreq", table="fig4", setting="noniid", labeled="1000", dataset="cifar10",
                   method="fedmix_fedfreq", metric="accuracy") == 47.5
    assert _lookup(rows, paper="fedmix_fedloss", table="table1", setting="server_only", labeled="1000", dataset="cifar10",
                   method="supervised_server", metric="accuracy") == 19.3
    assert _lookup(rows, paper="fedmix_fedloss", table="fig7", setting="unspecified", labeled="800", dataset="cifar10",
                   method="fedmix_fedloss", metric="accuracy") == 47


def test_internal_consistency():
    """Cells the papers print twice agree (FedSiam-D's Table 5 IID row reappears in Tables 7 and 8)."""
    rows = _all_rows()
    for ds in ("mnist", "cifar10", "svhn"):
        t5 = _lookup(rows, paper="fedsiam", table="table5", setting="iid", labeled="0.10", dataset=ds,
                     method="fedsiam_d", metric="accuracy")
        assert t5 == _lookup(rows, paper="fedsiam", table="table7", setting="siamese=yes", labeled="0.10", dataset=ds,
                             method="fedsiam_d", metric="accuracy")
        assert t5 == _lookup(rows, paper="fedsiam", table="table7", setting="alpha_max=0.999", labeled="0.10",
                             dataset=ds, method="fedsiam_d", metric="accuracy")
        assert t5 == _lookup(rows, paper="fedsiam", table="table8", setting="iid", labeled="0.10", dataset=ds,
                             method="fedsiam_d_mse", metric="accuracy")


# ------------------------------------------------------------------------------ need the papers
@pytest.fixture(scope="module")
def papers() -> dict[str, list[str]]:
    root = _papers_dir()
    needed = set().union(*(s for _, s in FILES.values()))
    missing = [f for f in sorted(needed) if not (root / f).is_file()]
    if missing:
        pytest.skip(f"paper text files not found under {root} (set FSSL_PAPERS): missing {', '.join(missing)}")
    return {f: (root / f).read_text(encoding="utf-8").splitlines() for f in needed}


def _normalise(line: str) -> list[str]:
    """The line, and variants without extraction artefacts: thousands separators ("5,852,170",
    "1 000") and LaTeX triplication ("606060" for 60, as the arXiv HTML dump prints math)."""
    no_sep = re.sub(r"(?<=\d)[, ](?=\d{3}(?!\d))", "", line)
    untripled = re.sub(r"(\d+(?:\.\d+)?)\1\1", r"\1", line)
    return [line, no_sep, untripled]


def _prints(line: str, value: str) -> bool:
    pattern = re.compile(r"(?<![\d.])" + re.escape(value) + r"(?![\d])")
    if any(pattern.search(v) for v in _normalise(line)):
        return True
    return any(word in line for word in WORD_NUMBERS.get(value, ()))


def test_sources_print_values(papers):
    bad = []
    for r in _all_rows():
        file, _, line = r["source"].rpartition(":")
        text = papers[file]
        n = int(line)
        if n > len(text):
            bad.append(f"{r['source']}: past end of file ({len(text)} lines)")
        elif not _prints(text[n - 1], r["value"]):
            bad.append(f"{r['source']}: does not print {r['value']} ({r['paper']} {r['table']} {r['method']})")
    assert not bad, "\n".join(bad)


def _table_numbers(line: str) -> list[str]:
    """Numbers a table row prints as results: 'x%' cells and 'mean ± std' pairs."""
    out = re.findall(r"(\d+\.\d+)%", line)
    for mean, std in re.findall(r"(\d+\.\d+) ± (\d+\.\d+)", line):
        out += [mean, std]
    return out


def test_table_lines_fully_transcribed(papers):
    """Every result number printed on a cited table line is transcribed, exactly as often as printed."""
    cited = defaultdict(list)
    for r in _all_rows():
        if r["table"].startswith("table"):
            cited[r["source"]].append(r["value"])
    for source, values in cited.items():
        file, _, line = source.rpartition(":")
        printed = _table_numbers(papers[file][int(line) - 1])
        assert Counter(printed) == Counter(values), (source, sorted(printed), sorted(values))


def test_every_papers_values_csv_is_checked_here():
    on_disk = {str(p.relative_to(VALUES_DIR)) for p in VALUES_DIR.glob("*/values*.csv")}
    assert on_disk == set(FILES)
