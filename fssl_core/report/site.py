"""The executed notebooks as a small static site: one HTML page per notebook under results/notebooks/ (the
copies `reproduce` executes, flat or a folder a profile), converted by nbconvert, laid out as the notebooks are,
and an index.html that links each page under its notebook's title (the first markdown heading).
`python -m fssl_core site` builds it.

The figures travel inside the pages: nbconvert writes a notebook's PNG outputs as data: URIs, and
embed_images does the same for an image a markdown cell links, so a plain static file server (or a file://
open) shows them. nbconvert's page loads MathJax and require.js from its CDN where a network is there; no
table or figure needs them.

The site is built in a temporary folder beside the destination, then renamed into its place: a reader finds
the old site or the new one (for the instant between the two renames, none), never half of one, and a build
that fails leaves the old site as it was. Only a folder this command built (its index.html carries
GENERATOR) or an empty one is ever replaced.
"""
from __future__ import annotations

import html
import re
import shutil
import tempfile
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

from ..config import ConfigError
from ..paths import project_root

# written into index.html: how a later build knows the folder it replaces is a site and not someone's files
GENERATOR = '<meta name="generator" content="fssl_core site">'
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def default_notebooks() -> Path:
    """Where `reproduce` writes the executed notebooks of the committed profiles (quick, paper)."""
    return project_root() / "results" / "notebooks"


def default_site() -> Path:
    return project_root() / "build" / "site"


def notebook_title(nb: nbformat.NotebookNode, fallback: str) -> str:
    """The text of the notebook's first markdown heading, else `fallback` (its file name)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                found = HEADING.match(line.strip())
                if found:
                    return found.group(1)
    return fallback


def page_html(nb: nbformat.NotebookNode, title: str) -> str:
    """One notebook as a standalone HTML page, its images embedded, titled `title`."""
    body, _ = HTMLExporter(embed_images=True).from_notebook_node(nb, resources={"metadata": {"name": title}})
    return body


def index_html(titles: dict[str, str]) -> str:
    """The site's front page: page path (relative, "/"-separated) -> title, one link each, in the order given;
    beside each title its notebook's path, which tells apart one notebook executed at two profiles."""
    items = "\n".join(f'<li><a href="{html.escape(page)}">{html.escape(title)}</a> '
                      f'<code>{html.escape(page.removesuffix(".html"))}</code></li>' for page, title in titles.items())
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n{GENERATOR}\n'
            f'<title>fssl: executed notebooks</title>\n'
            f'<style>body {{font-family: system-ui, sans-serif; max-width: 60em; margin: 2em auto; padding: 0 1em}}'
            f' li {{margin: 0.3em 0}}</style>\n</head>\n<body>\n<h1>fssl: executed notebooks</h1>\n'
            f'<p>Each notebook as <code>python -m fssl_core reproduce</code> executed it, outputs in place.</p>\n'
            f'<ul>\n{items}\n</ul>\n</body>\n</html>\n')


def _replaceable(out: Path) -> bool:
    """Absent, an empty folder, or a site this command built."""
    if not out.exists():
        return True
    if not out.is_dir():
        return False
    index = out / "index.html"
    return not any(out.iterdir()) or (index.is_file() and GENERATOR in index.read_text(encoding="utf-8",
                                                                                          errors="replace"))


def build_site(notebooks: Path | None = None, out: Path | None = None) -> tuple[Path, dict[str, str]]:
    """Every notebook under `notebooks` as `out`/<its path>.html, plus `out`/index.html; returns the index's path
    and the pages it links (path -> title)."""
    notebooks = default_notebooks() if notebooks is None else Path(notebooks)
    out = default_site() if out is None else Path(out)
    sources = sorted(p for p in notebooks.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if not sources:
        raise ConfigError(f"site: {notebooks}: holds no executed notebook (no *.ipynb in it or its folders); "
                          f"`python -m fssl_core reproduce` writes them there")
    if not _replaceable(out):
        raise ConfigError(f"site: --out {out}: exists and is not a site this command built (no index.html of its "
                          f"own); give an empty or new folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-new-", dir=out.parent))
    try:
        titles = {}
        for source in sources:
            nb = read_notebook(source)
            page = source.relative_to(notebooks).with_suffix(".html").as_posix()
            titles[page] = notebook_title(nb, source.stem)
            (staging / page).parent.mkdir(parents=True, exist_ok=True)
            (staging / page).write_text(page_html(nb, titles[page]), encoding="utf-8")
        (staging / "index.html").write_text(index_html(titles), encoding="utf-8")
        staging.chmod(0o755)              # mkdtemp's 0700 would hide the site from a server run as another user
        swap_in(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)      # a failed build's pages; nothing once moved into place
    return out / "index.html", titles


def read_notebook(source: Path) -> nbformat.NotebookNode:
    try:
        return nbformat.read(source, as_version=4)
    except (ValueError, nbformat.ValidationError) as err:     # not JSON, or not a notebook's schema
        first = (str(err).splitlines() or [type(err).__name__])[0]
        raise ConfigError(f"site: {source}: not a readable notebook ({first})") from err


def swap_in(staging: Path, out: Path) -> None:
    """`staging` becomes `out`. An existing `out` is moved aside first and deleted once the new one is in
    place, or put back where the move fails."""
    if not out.exists():
        staging.replace(out)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{out.name}-old-", dir=out.parent))
    try:
        out.replace(aside / out.name)
        try:
            staging.replace(out)
        except BaseException:
            (aside / out.name).replace(out)
            raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)
