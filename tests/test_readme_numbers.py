"""Every number a page states about speed or time is written by a command from a record (a generated block
between <!-- name:start --> and <!-- name:end -->, or a table checked against its record), or is a constant of
the code, checked here against the code: no measured figure is typed into prose."""
import inspect
import re
from pathlib import Path

from fssl_core.integrations import mlflow_fields
from fssl_core.integrations.mlflow_track import MlflowTracker
from fssl_core.perf import bench, gpu_check
from fssl_core.perf.gpu_check_report import GRACE_S

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "fssl_core" / "papers").glob("*/README.md")),
         ROOT / "fssl_core" / "integrations" / "README.md", ROOT / "flower-app" / "README.md"]
MEASURE = re.compile(r"(?<![\w.])\d[\d,.]*\s?(?:-\s?\d[\d,.]*\s?)?(?:s|min|h|%|×|ms|GB|MB|GiB|runs/h|seconds|minutes|hours)(?!\w)")
# a constant of the code a page explains, as the page writes it -> what the code holds
CONSTANTS = {
    "docs/gpu-check.md": {
        "5%": gpu_check.SHARES["environment"] == 0.05, "15%": gpu_check.SHARES["cohort"] == gpu_check.SHARES["resume"] == 0.15,
        "35%": gpu_check.SHARES["bench"] == 0.35, "30%": gpu_check.SHARES["throughput"] == 0.30,
        "360 s": inspect.signature(gpu_check.run_check).parameters["budget"].default == 360.0,
        "108 s": round(360 * gpu_check.SHARES["throughput"]) == 108 and GRACE_S > 0,
    },
    "fssl_core/integrations/README.md": {
        "5 s": mlflow_fields.FIRST_CONTACT["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "5" and MlflowTracker.FLUSH_STALL_S == 5.0,
    },
    "docs/speed.md": {
        "3 seconds": bench.CUDA_STEPS["seconds"] == 3.0, "3 s": bench.CUDA_STEPS["seconds"] == 3.0,
        "180 s": bench.CUDA_BUDGET_S == 180.0,
    },
}


def _prose(text: str) -> list[str]:
    text = re.sub(r"<!-- ([\w-]+):start -->.*?<!-- \1:end -->", "", text, flags=re.S)   # generated from records
    text = re.sub(r"```.*?```", "", text, flags=re.S)                                   # commands
    return [line for line in text.splitlines() if not line.lstrip().startswith("|")]   # tables: test_measurements


def test_no_measured_number_is_typed_into_a_pages_prose():
    typed = []
    for page in PAGES:
        allowed = CONSTANTS.get(str(page.relative_to(ROOT)), {})
        for line in _prose(page.read_text()):
            typed += [f"{page.relative_to(ROOT)}: {m.group(0)!r} in {line.strip()[:80]!r}"
                      for m in MEASURE.finditer(line) if m.group(0) not in allowed]
    assert typed == []


def test_the_constants_a_page_explains_are_the_codes():
    assert all(ok for constants in CONSTANTS.values() for ok in constants.values())
