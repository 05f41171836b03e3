"""The static site of the executed notebooks (fssl_core/report/site.py, `python -m fssl_core site`): a hand-made
notebook becomes a page holding its image and its claims table, linked from the index; bad input is one line and
exit 2; a site is replaced whole or not at all. Then the notebooks committed under results/notebooks/, built by
the command and served over HTTP, are opened in headless Chromium: every page loads, its figures display, its
claims table is there, and every link of the index resolves."""
import functools
import http.server
import re
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from fssl_core import cli
from fssl_core.report import site

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "results" / "notebooks"
# a 1×1 PNG, the smallest a browser decodes
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
CLAIMS = ("<table><thead><tr><th></th><th>claim</th><th>verdict</th></tr></thead>"
          "<tbody><tr><th>0</th><td>FedSiam-D beats FedAvg</td><td>holds</td></tr></tbody></table>")
VERDICT_HEADER = re.compile(r"<th[^>]*>\s*verdict\s*</th>")


def _notebook(folder: Path, name: str = "tiny", title: str = "A tiny notebook") -> Path:
    """A notebook as papermill leaves it: a markdown title, a figure (display_data) and a claims table (HTML)."""
    folder.mkdir(parents=True, exist_ok=True)
    figure = new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure size 1x1>"})
    table = new_output("execute_result", data={"text/html": CLAIMS, "text/plain": "claims"}, execution_count=2)
    nb = new_notebook(cells=[new_markdown_cell(f"# {title}\n\nWhat it shows."),
                             new_code_cell("plot()", outputs=[figure], execution_count=1),
                             new_code_cell("claims", outputs=[table], execution_count=2)])
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_a_notebook_becomes_a_page_with_its_image_and_claims_table_linked_from_the_index(tmp_path):
    """A folder a profile, as `reproduce` lays them out; the site mirrors it."""
    _notebook(tmp_path / "notebooks" / "paper")
    index, pages = site.build_site(tmp_path / "notebooks", tmp_path / "site")
    assert (index, pages) == (tmp_path / "site" / "index.html", {"paper/tiny.html": "A tiny notebook"})
    assert _files(tmp_path / "site") == ["index.html", "paper/tiny.html"]
    assert '<a href="paper/tiny.html">A tiny notebook</a> <code>paper/tiny</code>' in index.read_text()
    page = (tmp_path / "site" / "paper" / "tiny.html").read_text()
    assert "<title>A tiny notebook</title>" in page
    assert f'src="data:image/png;base64,{PNG}"' in page       # embedded: no file beside the page to lose
    assert CLAIMS in page


def test_the_title_is_the_first_markdown_heading_else_the_file_name():
    nb = new_notebook(cells=[new_code_cell("# a comment, not a heading"), new_markdown_cell("text\n\n## Table 5 ##")])
    assert site.notebook_title(nb, "fallback") == "Table 5"
    assert site.notebook_title(new_notebook(cells=[new_markdown_cell("no heading")]), "fallback") == "fallback"


def test_every_notebook_has_its_executed_copy_committed_with_its_outputs():
    """An executed copy of each notebooks/<name>.ipynb under results/notebooks/ (flat or a folder a profile), and
    none of a notebook that is gone; every code cell executed, so each renders where the repository is browsed."""
    sources = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    executed = sorted(COMMITTED.rglob("*.ipynb"))
    assert {p.name for p in executed} == sources
    for path in executed:
        nb = nbformat.read(path, as_version=4)
        unexecuted = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and cell.source.strip()
                      and cell.execution_count is None]
        assert unexecuted == [], f"{path.relative_to(ROOT)}: code cells {unexecuted} not executed"


def test_the_command_reads_results_notebooks_and_writes_build_site_of_the_project(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FSSL_PROJECT", str(tmp_path))
    _notebook(tmp_path / "results" / "notebooks" / "quick")
    assert cli.main(["site"]) == 0
    assert capsys.readouterr().out == f"[site] 1 notebook page(s) and their index -> {tmp_path}/build/site/index.html\n"
    assert _files(tmp_path / "build" / "site") == ["index.html", "quick/tiny.html"]


def test_no_executed_notebook_is_one_line_and_exit_2(tmp_path, capsys):
    assert cli.main(["site", "--notebooks", str(tmp_path / "none"), "--out", str(tmp_path / "site")]) == 2
    assert capsys.readouterr().err == (f"error: site: {tmp_path / 'none'}: holds no executed notebook (no *.ipynb "
                                       "in it or its folders); `python -m fssl_core reproduce` writes them there\n")
    assert not (tmp_path / "site").exists()


def test_a_damaged_notebook_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "cut.ipynb").write_text('{"cells": [')
    assert cli.main(["site", "--notebooks", str(tmp_path / "notebooks"), "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: site: {tmp_path / 'notebooks' / 'cut.ipynb'}: not a readable notebook (")
    assert err.count("\n") == 1 and not (tmp_path / "site").exists()


def test_a_folder_this_command_did_not_build_is_refused_and_left_as_it_was(tmp_path, capsys):
    _notebook(tmp_path / "notebooks")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    assert cli.main(["site", "--notebooks", str(tmp_path / "notebooks"), "--out", str(theirs)]) == 2
    assert capsys.readouterr().err == (f"error: site: --out {theirs}: exists and is not a site this command built "
                                       "(no index.html of its own); give an empty or new folder\n")
    assert [p.name for p in theirs.iterdir()] == ["notes.txt"]


def test_a_rebuild_replaces_the_site_whole_and_a_failed_one_leaves_it_as_it_was(tmp_path, monkeypatch):
    notebooks, out = tmp_path / "notebooks", tmp_path / "site"
    _notebook(notebooks, "a", "First")
    site.build_site(notebooks, out)
    (notebooks / "a.ipynb").unlink()
    _notebook(notebooks, "b", "Second")
    _notebook(notebooks, "c", "Third")
    site.build_site(notebooks, out)
    assert _files(out) == ["b.html", "c.html", "index.html"]      # a.html gone with the site it was in
    before = {p.name: p.read_text() for p in out.iterdir()}

    converted = []

    def fails_on_the_second(nb, title):
        if converted:
            raise RuntimeError("conversion failed")
        converted.append(title)
        return "<html>new</html>"

    monkeypatch.setattr(site, "page_html", fails_on_the_second)
    with pytest.raises(RuntimeError, match="conversion failed"):
        site.build_site(notebooks, out)
    assert {p.name: p.read_text() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notebooks", "site"]     # no staging folder left


CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
# The machine's network is closed: Chromium's own background connections (updates, sync, field trials) would be
# refused, so they are switched off; QUIC too. A fresh --user-data-dir per test keeps no state between runs.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1280,1024")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):      # one line per request would bury pytest's output
        pass


@pytest.fixture
def served(tmp_path):
    """The site `python -m fssl_core site` builds from the committed notebooks, served on a free localhost port:
    the root URL and the site's folder."""
    out = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "fssl_core", "site", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=out))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/", out
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver       # here: the unit tests above run without the browser's driver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    # the driver's path given: Selenium Manager, which would look for a driver online, never runs
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


def _expected(path: Path) -> tuple[str, int, bool]:
    """What a notebook's page must show: its title, how many figures, whether a claims table (a verdict column)."""
    nb = nbformat.read(path, as_version=4)
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    figures = sum("image/png" in o.get("data", {}) for o in outputs)
    claims = any(VERDICT_HEADER.search(o.get("data", {}).get("text/html", "")) for o in outputs)
    return site.notebook_title(nb, path.stem), figures, claims


def _status(url: str) -> int:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status


IMAGES = "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.getBoundingClientRect().width])"
VERDICT_TABLES = ("return Array.from(document.querySelectorAll('table')).filter(t => Array.from(t.querySelectorAll("
                  "'thead th, tr:first-child th')).some(th => th.textContent.trim() === 'verdict')).length")
LINKS = "return Array.from(document.querySelectorAll('a[href]')).map(a => [a.getAttribute('href'), a.href, a.text])"


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (.ci/run installs Debian's chromium and "
                                                  "chromium-driver where apt can)")
def test_every_page_of_the_committed_notebooks_loads_in_chromium_with_its_figures_and_claims(served, browser):
    root, out = served
    notebooks = sorted(COMMITTED.rglob("*.ipynb"))
    expected = {p.relative_to(COMMITTED).with_suffix(".html").as_posix(): _expected(p) for p in notebooks}
    assert expected, f"no executed notebook in {COMMITTED}"
    for page, (title, figures, claims) in expected.items():
        assert _status(root + page) == 200, page
        browser.get(root + page)
        assert browser.title == title, page
        images = browser.execute_script(IMAGES)
        assert len(images) >= figures, f"{page}: {len(images)} images for {figures} figures"
        assert all(complete and natural > 0 and shown > 0 for complete, natural, shown in images), (page, images)
        if claims:
            assert browser.execute_script(VERDICT_TABLES) >= 1, f"{page}: no table with a verdict column"
    assert any(claims for _, _, claims in expected.values()), "no committed notebook has a claims table to check"

    assert _status(root + "index.html") == 200
    browser.get(root + "index.html")
    links = browser.execute_script(LINKS)
    assert {href: text for href, _, text in links} == {page: title for page, (title, _, _) in expected.items()}
    assert all(_status(url) == 200 for _, url, _ in links)
    assert _files(out) == sorted([*expected, "index.html"])
