"""The Flower app's expected results (flower-app/README.md) are what its command measured: the CSV's Flower
rows are the committed Flower records of the configs the command names, equal round by round to the engine's
rows beside them, and the README's table and figure are rendered from that CSV."""
from pathlib import Path

from fssl_core.integrations import flower_expected as expected
from fssl_core.store import ENV, RunStore

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "flower-app" / "README.md"
BEGIN, END = "<!-- flower-expected:start -->", "<!-- flower-expected:end -->"


def test_the_csv_holds_the_committed_flower_records_and_the_engine_agrees():
    rows = expected.read()
    store = RunStore(ROOT / "runs")
    assert sorted({r["method"] for r in rows}) == sorted(expected.EXPECTED)
    for method, cfg in expected.EXPECTED.items():
        mine = [r for r in rows if r["method"] == method]
        assert {r["run_id"] for r in mine} == {cfg.run_id}, f"{method}: the CSV is of another config; rerun the command"
        flower = [r["accuracy"] for r in mine if r["side"] == "flower"]
        engine = [r["accuracy"] for r in mine if r["side"] == "engine"]
        assert len(flower) == len(engine) == cfg.rounds
        assert flower == engine, method          # the engine's sequential trainer, to the last digit
        record = store.load(cfg)
        assert record is not None, f"{method}: run {cfg.run_id} is not committed in runs/"
        assert [row["accuracy"] for row in record.metrics] == flower
        assert '"executor": "flower"' in (store.dir(cfg) / ENV).read_text()


def test_the_readme_table_is_the_csv_rendered():
    text = README.read_text()
    block = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()
    assert block == expected.table(expected.read())
    assert expected.FIGURE.exists() and expected.FIGURE.stat().st_mtime >= 0
