"""Every shell block of the README (and of every README and docs page beside it) pastes into bash and into zsh (macOS's default shell) as written: a block
holds commands only, since an interactive zsh reads `#` as a word, not a comment (INTERACTIVE_COMMENTS is off),
so `make reproduce   # each paper's ...` leaves a `quote>` prompt and `partition ... # counts` an argument '#'.
Each block is parsed by bash (`bash -n`) and split into words by zsh as its interactive line editor would
(`${(z)line}` with no_interactive_comments); no word may start with '#'."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "fssl_core").rglob("README.md")),
         *sorted((ROOT / "measurements").rglob("README.md")), *sorted((ROOT / "studies").rglob("README.md")),
         *sorted((ROOT / "flower-app").rglob("README.md"))]
BLOCKS = [block for page in PAGES for block in re.findall(r"```(?:bash|sh|shell|console)\n(.*?)```", page.read_text(), re.S)]


def test_the_readme_has_shell_blocks():
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("block", BLOCKS, ids=[b.splitlines()[0][:40] for b in BLOCKS])
def test_a_block_parses_in_bash(block):
    done = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (.ci/run installs it where apt can)")
@pytest.mark.parametrize("block", BLOCKS, ids=[b.splitlines()[0][:40] for b in BLOCKS])
def test_a_block_pasted_into_an_interactive_zsh_holds_no_comment_word(block):
    split = ('setopt no_interactive_comments; for line in "${(@f)BLOCK}"; do print -rl -- "${(z)line[@]}"; done')
    done = subprocess.run(["zsh", "-f", "-c", split], env={"BLOCK": block, "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    words = done.stdout.split("\n")
    assert not [w for w in words if w.startswith("#")], f"a comment in a copyable block: {block}"


def test_the_zsh_check_finds_a_trailing_comment():
    block = "python -m fssl_core partition dataset=mnist   # counts per client and class\n"
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed")
    with pytest.raises(AssertionError, match="a comment in a copyable block"):
        test_a_block_pasted_into_an_interactive_zsh_holds_no_comment_word(block)
