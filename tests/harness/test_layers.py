"""The harness and ingest do not import each other (the CLI and services pass data between them)."""

from __future__ import annotations

import ast
from pathlib import Path

import kernelindex

PACKAGE = Path(kernelindex.__file__).parent


def _imports(folder: str) -> dict[str, set[str]]:
    found = {}
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[str(path.relative_to(PACKAGE))] = names
    return found


def test_harness_and_ingest_do_not_import_each_other():
    crossing = {
        f: sorted(n for n in names if n.startswith("kernelindex.ingest")) for f, names in _imports("harness").items()
    }
    crossing |= {
        f: sorted(n for n in names if n.startswith("kernelindex.harness")) for f, names in _imports("ingest").items()
    }
    assert {f: n for f, n in crossing.items() if n} == {}


def test_the_harness_does_not_store_anything():
    stores = {
        f: sorted(n for n in names if n.startswith("kernelindex.store")) for f, names in _imports("harness").items()
    }
    assert {f: n for f, n in stores.items() if n} == {}
