"""An executed notebook as published: the same cells and outputs, less what changes with every execution.

papermill and the kernel stamp each execution with wall-clock times and durations, the machine's absolute paths,
random cell ids and, where a notebook shows widgets, random widget model ids. A rebuild from the same records
would then rewrite every committed notebook though nothing it shows changed; `stable` keeps the file a function
of what the notebook computed: times and durations dropped, paths relative to the project (papermill's, and
those its outputs print), a cell's consecutive stream outputs one a stream (stderr, then stdout), cell ids numbered,
widget ids renumbered in the order the outputs reach them (then the state's remaining ones by their content)."""
from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

VOLATILE = ("start_time", "end_time", "duration")
_WIDGET_ID = re.compile(r"[0-9a-f]{32}")


def stable(path: Path, source: str, output: str, roots: tuple[Path, ...] = ()) -> None:
    """Rewrite the executed notebook at `path` in place; `source` and `output`: its input and published paths,
    relative to the project (papermill records the absolute ones); `roots`: folders whose absolute paths in the
    outputs (a warning names the file it comes from) are written relative to them."""
    notebook = json.loads(path.read_text())
    meta = notebook.get("metadata", {}).get("papermill", {})
    for key in VOLATILE:
        meta.pop(key, None)
    if meta:
        meta.update(input_path=source, output_path=output)
    for i, cell in enumerate(notebook.get("cells", []), 1):
        cell["id"] = f"cell-{i}"
        if "outputs" in cell:
            cell["outputs"] = _streams_in_order(cell["outputs"])
        cell.get("metadata", {}).pop("execution", None)
        for key in VOLATILE:
            cell.get("metadata", {}).get("papermill", {}).pop(key, None)
    text = json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False)
    for root in sorted({str(r).rstrip("/") + "/" for r in roots}, key=len, reverse=True):    # the deepest first
        text = text.replace(json.dumps(root)[1:-1], "")
    names = _widget_names(notebook)
    if names:
        text = _WIDGET_ID.sub(lambda m: names.get(m.group(0), m.group(0)), text)
        text = json.dumps(json.loads(text), indent=1, sort_keys=True, ensure_ascii=False)   # state keys re-sorted
    path.write_text(text + "\n")


def _streams_in_order(outputs: list[dict]) -> list[dict]:
    """Each run of consecutive stream outputs as one output a stream, stderr before stdout: the kernel flushes the two
    streams on its own timing, so their interleaving (and how a stream's text is split) changes between executions."""
    ordered: list[dict] = []
    for is_stream, run in itertools.groupby(outputs, key=lambda output: output.get("output_type") == "stream"):
        ordered += _merged(list(run)) if is_stream else list(run)
    return ordered


def _merged(streams: list[dict]) -> list[dict]:
    """Stream outputs merged into one a stream name, in the names' order (stderr, stdout)."""
    text: dict[str, str] = {}
    for output in streams:
        piece = output.get("text", "")
        text[output["name"]] = text.get(output["name"], "") + ("".join(piece) if isinstance(piece, list) else piece)
    return [{"name": name, "output_type": "stream", "text": text[name].splitlines(keepends=True)}
            for name in sorted(text)]


def _widget_names(notebook: dict) -> dict[str, str]:
    """Each widget model id -> a 32-hex-digit number (ids keep their form), numbered as the cells' outputs reach
    them (depth first through the state's references), then the unreached ones by their state with ids masked."""
    state = notebook.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    models = state.get("state", {})
    order: list[str] = []

    def reach(text: str) -> None:
        for found in _WIDGET_ID.findall(text):
            if found in models and found not in order:
                order.append(found)
                reach(json.dumps(models[found], sort_keys=True))
    reach(json.dumps(notebook.get("cells", []), sort_keys=True))
    rest = sorted((m for m in models if m not in order),
                  key=lambda m: _WIDGET_ID.sub("", json.dumps(models[m], sort_keys=True)))
    return {model: f"{i:032x}" for i, model in enumerate([*order, *rest], 1)}
