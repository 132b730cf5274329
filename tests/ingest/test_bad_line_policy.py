"""The bad-line policy: all or nothing by default, ``--skip-invalid`` with a report, ``--check`` dry runs."""

from __future__ import annotations

import json

import pytest
from ingest_kit import snapshot
from typer.testing import CliRunner

from catalog_kit import catalog_lines, write_catalog
from kernelindex.cli import app
from kernelindex.ingest.catalog import BadLines, import_catalog
from kernelindex.ingest.problems import ImportFailed


def broken_catalog(tmp_path):
    """The small catalog with its second implementation's digest wrong and a line of bad JSON."""
    lines = catalog_lines()
    impls = [i for i, line in enumerate(lines) if line["table"] == "implementations"]
    lines[impls[1]]["row"]["implementationDigest"] = "sha256:" + "0" * 64
    path = write_catalog(tmp_path / "broken.jsonl", lines)
    text = path.read_text().splitlines(keepends=True)
    text.insert(2, '{"table": "sources", "row": \n')
    path.write_text("".join(text))
    return path, impls[1] + 2  # its line number once the bad JSON line is in front of it


def test_default_refuses_the_whole_file(store, tmp_path):
    path, _ = broken_catalog(tmp_path)
    before = snapshot(store)
    with pytest.raises(ImportFailed) as refused:
        import_catalog(store, path)
    assert {p.line for p in refused.value.problems} >= {3}
    assert snapshot(store) == before


def test_skip_invalid_imports_the_rest_and_reports_each_refused_line(store, tmp_path):
    path, impl_line = broken_catalog(tmp_path)
    refused = []
    policy = BadLines(skip_invalid=True, on_refused=lambda p, t: refused.append((p, t)))
    report = import_catalog(store, path, bad_lines=policy)
    lines = {p.line: (p, text) for p, text in refused}
    assert 3 in lines and "malformed JSON" in lines[3][0].reason
    assert lines[impl_line][0].field == "implementationDigest" and "digest mismatch" in lines[impl_line][0].reason
    assert json.loads(lines[impl_line][1])["table"] == "implementations"  # the refused line, as it was read
    # the run measured with that implementation stays (its link waits); everything else is stored
    assert report.skipped == 2 and report.added["implementations"] == 1 and report.added["runs"] == 2
    again = import_catalog(store, path, bad_lines=BadLines(skip_invalid=True))
    assert sum(again.added.values()) == 0 and again.skipped == 2


def test_check_validates_everything_and_stores_nothing(store, tmp_path):
    before = snapshot(store)
    good = write_catalog(tmp_path / "good.jsonl.zst")
    report = import_catalog(store, good, bad_lines=BadLines(check=True))
    assert report.checked_only and report.added["runs"] == 2
    assert snapshot(store) == before
    path, impl_line = broken_catalog(tmp_path)
    with pytest.raises(ImportFailed) as refused:
        import_catalog(store, path, bad_lines=BadLines(check=True))
    assert {p.line for p in refused.value.problems} == {3, impl_line}
    assert snapshot(store) == before


def test_cli_skip_invalid_writes_the_report_and_says_how_many(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, impl_line = broken_catalog(tmp_path)
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    refused = runner.invoke(app, ["import", str(path), "--db", db])
    assert refused.exit_code == 1 and f"broken.jsonl:{impl_line}: implementationDigest" in refused.stderr
    checked = runner.invoke(app, ["import", str(path), "--db", db, "--check"])
    assert checked.exit_code == 1 and ":3:" in checked.stderr
    done = runner.invoke(app, ["import", str(path), "--db", db, "--skip-invalid"])
    assert done.exit_code == 0, done.stderr
    assert "2 refused lines skipped" in done.stdout
    report = [json.loads(line) for line in (tmp_path / "broken.jsonl.refused.jsonl").read_text().splitlines()]
    assert [(r["line"], r["field"]) for r in report] == [(3, None), (impl_line, "implementationDigest")]
    good = write_catalog(tmp_path / "good.jsonl.zst")
    checked = runner.invoke(app, ["import", str(good), "--db", db, "--check", "--json"])
    assert checked.exit_code == 0 and json.loads(checked.stdout)[0]["checkedOnly"] is True


def test_a_report_that_would_overwrite_an_input_is_refused_before_anything_is_read(tmp_path, monkeypatch):
    """--refused naming the file being imported (or, by default, a name that lands on another input)
    would empty it as the first refused line was written: refused up front, the input left whole."""
    path, _ = broken_catalog(tmp_path)
    other = write_catalog(tmp_path / "other.jsonl", catalog_lines())
    db = str(tmp_path / "r.db")
    monkeypatch.chdir(tmp_path)
    for victim in (path, other, tmp_path / "." / path.name):
        kept = path.read_bytes(), other.read_bytes()
        result = CliRunner().invoke(
            app, ["import", str(path), str(other), "--db", db, "--skip-invalid", "--refused", str(victim)]
        )
        assert result.exit_code == 1 and "a file being imported: it would be emptied" in result.stderr, result.stderr
        assert (path.read_bytes(), other.read_bytes()) == kept
    # the default report name beside a file called like it
    clash = tmp_path / f"{path.name}.refused.jsonl"
    clash.write_text(path.read_text())
    result = CliRunner().invoke(app, ["import", str(clash), str(path), "--db", db, "--skip-invalid"])
    assert result.exit_code == 1 and "it would be emptied" in result.stderr, result.stderr
    (tmp_path / "folder").mkdir()
    result = CliRunner().invoke(app, ["import", str(path), "--db", db, "--skip-invalid", "--refused", "folder"])
    assert result.exit_code == 1 and "is a folder" in result.stderr
    assert json.loads(CliRunner().invoke(app, ["stats", "--db", db, "--json"]).stdout)["tables"]["runs"] == 0
