"""The README's commands work as a newcomer types them: it says how `kernelindex` gets on PATH (the
virtual environment scripts/dev.sh makes), and every `kernelindex COMMAND` it shows is a command."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import typer.main

from kernelindex.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _commands_shown() -> set[str]:
    """The first word after `kernelindex` on every command line of the README's bash blocks."""
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    lines = [line.strip() for block in blocks for line in block.splitlines()]
    return {m.group(1) for line in lines for m in re.finditer(r"(?:^|[;&|]\s*)kernelindex ([a-z][a-z-]*)", line)}


def test_readme_says_how_kernelindex_gets_on_path():
    using = README.split("## Using it", 1)[1].split("```", 1)[0]  # the prose before its first command
    assert "source .venv/bin/activate" in using and ".venv/bin/kernelindex" in using, using
    dev = (ROOT / "scripts" / "dev.sh").read_text()
    assert re.search(r"^VENV=\$\{KERNELINDEX_VENV:-\.venv\}$", dev, re.M)  # the folder the README names
    assert re.search(r'"\$PY" -m pip install -q -e "\.\[test\]"', dev)  # installs the package (its script) there
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kernelindex"] == "kernelindex.cli:main"


def test_every_command_the_readme_shows_exists():
    shown = _commands_shown()
    known = set(typer.main.get_command(app).commands)
    assert {"import", "search", "cases", "runs", "show", "rank", "eval"} <= shown  # the parse found them
    assert shown <= known, shown - known
