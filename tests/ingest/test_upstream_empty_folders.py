"""`import --from SOURCE FOLDER` on a folder with nothing of that source's to import: one `error:` line
naming the folder and what it lacks (as --from kernelbench always said), never a traceback, and
nothing stored, not even the source's row; --check says the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app

# source -> what the folder should have held, as the error names it
LACKS = {
    "sol-api": "holds no *.json files",
    "gpumode": "holds no *.json files",
    "flashinfer": "holds no *.jsonl files",
    "kernelbench": "holds no baseline_time_torch*.json files",
}


def import_into(db: Path, *args: str):
    result = CliRunner().invoke(app, ["import", "--db", str(db), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def errors(result) -> list[str]:
    """The `error:` lines (a new store is also noted on stderr)."""
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def stored_tables(db: Path) -> dict[str, int]:
    result = CliRunner().invoke(app, ["stats", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["tables"]


@pytest.mark.parametrize("check", [False, True], ids=["import", "check"])
@pytest.mark.parametrize("source", LACKS)
def test_an_empty_folder_is_refused_naming_what_it_lacks(tmp_path, source, check):
    folder = tmp_path / "empty"
    folder.mkdir()
    db = tmp_path / "s.db"
    result = import_into(db, "--from", source, str(folder), *(["--check"] if check else []))
    assert result.exit_code == 1, result.output
    assert errors(result) == [f"error: {folder}: {LACKS[source]}"], result.stderr
    if db.exists():  # `import` makes the store first; nothing goes in it
        assert not any(stored_tables(db).values())


def test_a_flashinfer_folder_without_traces_stores_nothing(tmp_path):
    """Definitions alone make no records (a definition is stored with the runs or cases its traces
    give); the folder used to be imported as "0 lines, 1 rows added": a source row and nothing else."""
    folder = tmp_path / "set"
    (folder / "definitions").mkdir(parents=True)
    definition = {"name": "add", "axes": {"n": {"type": "var"}}, "inputs": {}, "outputs": {}, "reference": "x"}
    (folder / "definitions" / "add.json").write_text(json.dumps(definition))
    db = tmp_path / "s.db"
    for check in ([], ["--check"]):
        result = import_into(db, "--from", "flashinfer", str(folder), *check)
        assert result.exit_code == 1 and errors(result) == [f"error: {folder}: holds no *.jsonl files"], result.output
    assert stored_tables(db)["sources"] == 0


@pytest.mark.parametrize("check", [False, True], ids=["import", "check"])
@pytest.mark.parametrize("contents", ["empty", "with the csv inside"])
def test_liger_given_a_folder_names_the_csv_file_it_reads(tmp_path, contents, check):
    folder = tmp_path / "data"
    folder.mkdir()
    if contents != "empty":  # even where the file is right there: the format is that one file
        (folder / "all_benchmark_data.csv").write_text("kernel_name,kernel_provider\n")
    result = import_into(tmp_path / "s.db", "--from", "liger", str(folder), *(["--check"] if check else []))
    assert result.exit_code == 1, result.output
    (error,) = errors(result)
    assert error.startswith(f"error: {folder}: --from liger reads one CSV") and "all_benchmark_data.csv" in error
