"""What a command does with the file --db names, when that file is not a plain writable store.

Read commands never make or migrate a store where there is none: an empty file, a file that is no
SQLite database, or a SQLite database that is not ours is refused in one line and left byte for byte
as it was. Commands that make stores make one where there is none (no file, or an empty one: nothing
in it can be lost) and write to nothing else. A store this user may not write is still read by the
read commands (it is read-only media, an archive, another user's), and refused in one line by the others.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner
from unprivileged_kit import cli, read_only

from hostile_kit import SEED
from kernelindex.cli import app
from kernelindex.sample import sample_paths

READS = [["stats"], ["runs"], ["verify"], ["show", "149b7c1a"], ["queue", "list"], ["search", "042"]]
NOT_A_STORE = "is not a kernelindex store"


def run(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def sample_store(path: Path) -> Path:
    made = run("import", *map(str, sample_paths()), "--db", str(path))
    assert made.exit_code == 0, made.output
    return path


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> str:
    """The sample as a catalog export: what `import` and `import --check` both take."""
    folder = tmp_path_factory.mktemp("catalog")
    exported = run("export", str(folder / "sample.jsonl.zst"), "--db", str(sample_store(folder / "s.db")))
    assert exported.exit_code == 0, exported.output
    return str(folder / "sample.jsonl.zst")


def foreign_sqlite(path: Path) -> Path:
    """A SQLite database of some other program's."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.close()
    return path


def not_sqlite(path: Path) -> Path:
    path.write_bytes(random.Random(SEED).randbytes(3000))
    return path


@pytest.mark.parametrize("args", READS, ids=lambda a: a[0])
@pytest.mark.parametrize(
    "name, make, what",
    [
        ("empty.db", Path.touch, "an empty file"),
        ("empty.json", Path.touch, "an empty file"),
        ("noise.db", not_sqlite, "not a SQLite database"),
        ("theirs.db", foreign_sqlite, "a SQLite database of other tables"),
    ],
)
def test_read_commands_refuse_a_file_that_is_not_a_store_and_leave_it_alone(tmp_path, args, name, make, what):
    path = tmp_path / name
    make(path)
    before = path.read_bytes()
    result = run(*args, "--db", str(path))
    assert result.exit_code == 1, result.output
    assert (
        result.stderr
        == f"error: cannot open the store at sqlite:///{path}: it {NOT_A_STORE} ({what}); check the path\n"
    )
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no -wal, -shm or journal made beside it


@pytest.mark.parametrize("make", [not_sqlite, foreign_sqlite], ids=["noise", "theirs"])
def test_an_import_writes_to_no_file_that_is_not_a_store(tmp_path, make, catalog):
    path = make(tmp_path / "data.db")
    before = path.read_bytes()
    for check in ([], ["--check"]):
        result = run("import", *check, catalog, "--db", str(path))
        assert result.exit_code == 1 and NOT_A_STORE in result.stderr, result.output
    assert path.read_bytes() == before


def test_store_making_commands_take_an_empty_file_as_no_store_yet(tmp_path, catalog):
    """An empty file is what `: > new.db` leaves: nothing in it to lose, so it is where there is no store,
    for every rule of making one (a *.db name, the note on stderr) and for `--check` (which makes none)."""
    checked = tmp_path / "checked.db"
    checked.touch()
    assert run("import", "--check", catalog, "--db", str(checked)).exit_code == 0
    assert checked.read_bytes() == b""
    misnamed = tmp_path / "results.json"
    misnamed.touch()
    refused = run("import", catalog, "--db", str(misnamed))
    assert refused.exit_code == 1 and "refusing to create a new store" in refused.stderr
    assert misnamed.read_bytes() == b""
    made = run("import", catalog, "--db", str(checked))
    assert made.exit_code == 0 and f"note: created a new store at sqlite:///{checked}" in made.stderr
    assert run("stats", "--db", str(checked)).exit_code == 0


def test_a_sqlite_file_with_no_tables_is_made_a_store_only_by_a_command_that_makes_stores(tmp_path):
    path = tmp_path / "blank.db"
    sqlite3.connect(path).execute("PRAGMA user_version = 7").connection.close()
    before = path.read_bytes()
    refused = run("stats", "--db", str(path))
    assert refused.exit_code == 1 and f"{NOT_A_STORE} (a SQLite database with no tables)" in refused.stderr
    assert path.read_bytes() == before
    assert run("import", str(sample_paths()[0]), "--db", str(path)).exit_code == 0
    assert run("stats", "--db", str(path)).exit_code == 0


@pytest.fixture
def read_only_store(tmp_path):
    """The sample store, its file and its folder writable by no one (closed: no -wal or -shm beside it)."""
    folder = tmp_path / "archive"
    folder.mkdir()
    path = sample_store(folder / "s.db")
    with read_only(path, folder):
        yield path


@pytest.mark.parametrize("args", READS, ids=lambda a: a[0])
def test_read_commands_read_a_store_no_one_may_write(read_only_store, args):
    result = cli(*args, "--db", str(read_only_store))
    assert result.returncode == 0, result.stderr
    assert "error" not in result.stderr and "Traceback" not in result.stderr
    assert sorted(p.name for p in read_only_store.parent.iterdir()) == ["s.db"]


def test_a_read_only_store_is_read_closed_or_open_in_another_process(tmp_path):
    """Closed, nothing is beside it and none can be made: read as it is. Open elsewhere, its -wal and
    -shm are there (the other process made them): read through them, not around them."""
    path = sample_store(tmp_path / "s.db")
    with read_only(tmp_path, path):
        closed = cli("stats", "--db", str(path), "--json")
    assert closed.returncode == 0 and '"runs": 2' in closed.stdout, closed.stderr
    with sqlite3.connect(path) as other:
        other.execute("SELECT count(*) FROM runs").fetchone()
        beside = sorted(tmp_path.iterdir())
        assert [p.name for p in beside] == ["s.db", "s.db-shm", "s.db-wal"]
        with read_only(tmp_path, *beside):
            open_elsewhere = cli("stats", "--db", str(path), "--json")
    other.close()
    assert open_elsewhere.returncode == 0 and '"runs": 2' in open_elsewhere.stdout, open_elsewhere.stderr


def test_a_writing_command_on_a_store_no_one_may_write_is_one_line(read_only_store):
    result = cli("import", str(sample_paths()[0]), "--db", str(read_only_store))
    assert result.returncode == 1
    assert result.stderr == (
        f"error: cannot write to the store at {read_only_store}: the file or its folder {read_only_store.parent} "
        "is not writable by this user (SQLite keeps its -wal and -shm files beside the store)\n"
    )
