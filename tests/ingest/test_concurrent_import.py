"""Two imports of one file at once into one fresh store: both succeed and the store holds it once."""

from __future__ import annotations

import json
import subprocess
import sys

from catalog_kit import catalog_lines, write_catalog
from kernelindex.ingest.catalog import import_catalog
from kernelindex.ingest.export import export_lines
from kernelindex.store import open_store
from store_fixtures import empty_db_url  # noqa: F401  (fixture)

CLI = "import sys; from kernelindex.cli import main; sys.argv[0] = 'kernelindex'; main()"


def bigger_catalog() -> list[dict]:
    """The small catalog and many more sources and operations, so the two imports overlap in time."""
    lines = catalog_lines()
    extra = []
    for i in range(400):
        row = dict(lines[0]["row"], id=f"01900000-0000-7000-9000-{i:012d}", slug=f"extra-source-{i}")
        extra.append({"table": "sources", "row": row})
    return [lines[0], *extra, *lines[1:]]


def test_two_imports_at_once_both_succeed_and_store_it_once(empty_db_url, tmp_path):  # noqa: F811
    lines = bigger_catalog()
    path = write_catalog(tmp_path / "c.jsonl.zst", lines)
    command = [sys.executable, "-c", CLI, "import", str(path), "--db", empty_db_url, "--json"]
    both = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outcomes = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in both]
    for p in both:
        p.stdout.close()
        p.stderr.close()
    assert [code for code, _, _ in outcomes] == [0, 0], outcomes
    reports = [json.loads(out)[0] for _, out, _ in outcomes]
    added = [sum(r["added"].values()) for r in reports]
    assert sorted(added)[0] == 0 and sorted(added)[1] > 0  # one stored it, the other found it there
    reference = open_store(f"sqlite:///{tmp_path / 'reference.db'}")
    import_catalog(reference, path)
    store = open_store(empty_db_url)
    with store.begin() as conn, reference.begin() as ref:
        assert list(export_lines(conn)) == list(export_lines(ref))
    store.close()
    reference.close()
