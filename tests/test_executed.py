"""An executed notebook as published (job/executed.py): two executions of the same cells with the same outputs give
the same file, whatever their times, machine paths, cell ids and widget ids; what the notebook shows is kept."""
import json
import uuid
from pathlib import Path

from fssl_core.job.executed import stable


def _execution(root: str, seed: int) -> dict:
    """A notebook as papermill leaves it: its stamps and ids those of one execution (`root`, `seed`)."""
    slider, layout = uuid.UUID(int=seed * 7 + 1).hex, uuid.UUID(int=seed * 7 + 2).hex
    return {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"papermill": {"start_time": f"2026-11-29T1{seed}:00:00", "end_time": f"2026-11-29T1{seed}:01:00",
                                   "duration": 60.0 + seed, "input_path": f"{root}/notebooks/a.ipynb",
                                   "output_path": f"{root}/results/.staging-{seed}/a.ipynb", "parameters": {"p": 1}},
                     "widgets": {"application/vnd.jupyter.widget-state+json": {"state": {
                         slider: {"model_name": "IntSliderModel", "state": {"layout": f"IPY_MODEL_{layout}", "value": 3}},
                         layout: {"model_name": "LayoutModel", "state": {}}}, "version_major": 2}}},
        "cells": [
            {"cell_type": "code", "id": uuid.UUID(int=seed).hex[:8], "execution_count": 1, "source": "x = 1",
             "metadata": {"execution": {"iopub.execute_input": f"2026-11-29T1{seed}:00:01Z"},
                          "papermill": {"duration": 0.1 * seed, "start_time": "t", "end_time": "t", "status": "completed"},
                          "tags": ["parameters"]}, "outputs": []},
            {"cell_type": "code", "id": uuid.UUID(int=seed + 99).hex[:8], "execution_count": 2, "source": "w",
             "metadata": {}, "outputs": [{"output_type": "display_data", "metadata": {}, "data": {
                 "application/vnd.jupyter.widget-view+json": {"model_id": slider, "version_major": 2},
                 "text/plain": "IntSlider(value=3)"}}]},
            {"cell_type": "code", "id": uuid.UUID(int=seed + 199).hex[:8], "execution_count": 3, "source": "plot()",
             "metadata": {}, "outputs": [{"output_type": "stream", "name": "stderr", "text": [
                 f"{root}/fssl_core/report/plots.py:359: UserWarning: No artists\n", "  ax.legend()\n"]}]},
            # the kernel flushes stdout and stderr on its own timing: one execution interleaves them, the other not
            {"cell_type": "code", "id": uuid.UUID(int=seed + 299).hex[:8], "execution_count": 4, "source": "check()",
             "metadata": {}, "outputs": [
                 *([{"output_type": "stream", "name": "stdout", "text": ["a\n"]},
                    {"output_type": "stream", "name": "stderr", "text": "needs-data\n"},
                    {"output_type": "stream", "name": "stdout", "text": ["b\n"]}] if seed == 1 else
                   [{"output_type": "stream", "name": "stderr", "text": ["needs-data\n"]},
                    {"output_type": "stream", "name": "stdout", "text": ["a\n", "b\n"]}]),
                 {"output_type": "execute_result", "execution_count": 4, "metadata": {}, "data": {"text/plain": "1"}}]},
        ]}


def test_two_executions_of_the_same_outputs_publish_the_same_file(tmp_path):
    files = []
    for seed, root in ((1, "/work/main"), (2, "/home/someone/fssl")):
        path = tmp_path / f"{seed}.ipynb"
        path.write_text(json.dumps(_execution(root, seed)))
        stable(path, source="notebooks/a.ipynb", output="results/notebooks/paper/a.ipynb", roots=(Path(root),))
        files.append(path.read_text())
    assert files[0] == files[1]
    notebook = json.loads(files[0])
    assert notebook["metadata"]["papermill"] == {"input_path": "notebooks/a.ipynb", "parameters": {"p": 1},
                                                 "output_path": "results/notebooks/paper/a.ipynb"}
    assert [c["id"] for c in notebook["cells"]] == ["cell-1", "cell-2", "cell-3", "cell-4"]
    assert notebook["cells"][3]["outputs"] == [
        {"name": "stderr", "output_type": "stream", "text": ["needs-data\n"]},
        {"name": "stdout", "output_type": "stream", "text": ["a\n", "b\n"]},
        {"output_type": "execute_result", "execution_count": 4, "metadata": {}, "data": {"text/plain": "1"}}]
    assert notebook["cells"][2]["outputs"][0]["text"][0] == "fssl_core/report/plots.py:359: UserWarning: No artists\n"
    assert notebook["cells"][0]["metadata"] == {"papermill": {"status": "completed"}, "tags": ["parameters"]}
    state = notebook["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    shown = notebook["cells"][1]["outputs"][0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert state[shown]["state"] == {"layout": f"IPY_MODEL_{'0' * 31}2", "value": 3} and f"{'0' * 31}2" in state
    assert shown == f"{'0' * 31}1"       # the output's widget first, then what it references
