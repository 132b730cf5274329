"""Paths and words a command cannot use: one `error:` line naming what and where, never a traceback,
and nothing left behind (no half-written export). And one reading of PROBLEM for every command that
takes one, so a pack name `cases` accepts is accepted by `eval` and `campaign` too."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner
from unprivileged_kit import cli, read_only

from kernelindex.cli import app
from kernelindex.problems import PROBLEMS_DIR, TOKEN_SCATTER_BWD
from kernelindex.sample import sample_paths

SOLUTION = TOKEN_SCATTER_BWD.parents[1] / "kernels" / TOKEN_SCATTER_BWD.name / "solution.json"


def run(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("bad-paths") / "s.db")
    assert run("import", *map(str, sample_paths()), "--db", path).exit_code == 0
    return path


def test_schemas_into_a_file_says_it_is_no_folder(tmp_path):
    file = tmp_path / "kinds.json"
    file.write_text("{}")
    result = run("schemas", str(file))
    assert (
        result.exit_code == 1
        and result.stderr == f"error: {file}: is a file, not a folder; give a folder for the schema files\n"
    )
    assert file.read_text() == "{}"


def test_an_export_into_a_folder_no_one_may_write_names_the_folder(tmp_path, db):
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "x.jsonl.zst"
    with read_only(folder):
        result = cli("export", str(target), "--db", db)
    assert result.returncode == 1
    assert result.stderr == f"error: {target}: cannot write the export in the folder {folder}: Permission denied\n"
    assert list(folder.iterdir()) == []


def test_an_export_that_cannot_be_written_is_one_line_and_leaves_no_partial_file(tmp_path, db):
    """/proc takes no new file (whoever asks); a folder in the export's place is found only at the end,
    when the written file is renamed onto it: the written part is removed."""
    result = run("export", "/proc/x.jsonl.zst", "--db", db)
    assert result.exit_code == 1
    assert (
        result.stderr
        == "error: /proc/x.jsonl.zst: cannot write the export in the folder /proc: No such file or directory\n"
    )
    in_the_way = tmp_path / "x.jsonl.zst"
    in_the_way.mkdir()
    result = run("export", str(in_the_way), "--db", db)
    assert result.exit_code == 1 and result.stderr.startswith(
        f"error: {in_the_way}: cannot write the export in the folder {tmp_path}: "
    )
    assert [p.name for p in tmp_path.iterdir()] == ["x.jsonl.zst"] and not any(in_the_way.iterdir())


def test_queue_list_refuses_a_state_no_request_can_be_in(db):
    result = run("queue", "list", "--state", "bogus", "--db", db)
    words = "queued, leased, done, failed, cancelled"
    assert result.exit_code == 2 and result.stderr == f"error: --state: one of {words}, got 'bogus'\n"
    assert run("queue", "list", "--state", "done", "--db", db).exit_code == 0


@pytest.mark.parametrize(
    "name",
    [
        TOKEN_SCATTER_BWD.name,
        TOKEN_SCATTER_BWD.name.replace("_", "-"),
        json.loads((TOKEN_SCATTER_BWD / "definition.json").read_text())["name"],
    ],
    ids=["folder", "dashes", "definition"],
)
def test_cases_eval_and_campaign_take_the_same_pack_names(tmp_path, name):
    """A case id no pack has ends each command before anything runs, naming the pack's cases it looked in."""
    listed = run("cases", name, "--json")
    assert listed.exit_code == 0 and json.loads(listed.stdout)["folder"] == str(TOKEN_SCATTER_BWD)
    evaluated = run("eval", name, "--solution", str(SOLUTION), "--cases", "zzzz")
    assert evaluated.exit_code == 1, evaluated.output
    assert evaluated.stderr == f"error: no case 'zzzz' in {TOKEN_SCATTER_BWD / 'workload.jsonl'}\n"
    campaign = run("campaign", name, "--solutions", str(SOLUTION), "--cases", "zzzz", "--db", str(tmp_path / "c.db"))
    assert campaign.exit_code == 1 and "--cases zzzz: no case of the given problems starts with it" in campaign.stderr


def test_a_name_that_is_no_problem_is_refused_alike_by_cases_eval_and_campaign(tmp_path):
    packs = ", ".join(sorted(p.name for p in PROBLEMS_DIR.iterdir() if (p / "definition.json").is_file()))
    said = f"error: no_such_pack: is not a problem folder (definition.json + workload.jsonl) or a shipped pack's name ({packs})\n"
    for args in (
        ["cases", "no_such_pack"],
        ["eval", "no_such_pack", "--solution", str(SOLUTION)],
        ["campaign", "no_such_pack", "--solutions", str(SOLUTION), "--db", str(tmp_path / "c.db")],
    ):
        result = run(*args)
        assert result.exit_code == 1 and result.stderr == said, (args, result.stderr)


def test_import_check_of_a_bundle_says_check_takes_catalogs_only(tmp_path):
    bundle = tmp_path / "garbage.json"
    bundle.write_text("{}")
    result = run("import", "--check", str(bundle), "--db", str(tmp_path / "s.db"))
    assert result.exit_code == 1
    assert (
        result.stderr
        == f"error: {bundle}: --check applies to catalog files (.jsonl.zst/.jsonl), not to run bundles (.json)\n"
    )
    both = run(
        "import",
        "--check",
        "--skip-invalid",
        str(PROBLEMS_DIR / TOKEN_SCATTER_BWD.name),
        "--db",
        str(tmp_path / "s.db"),
    )
    assert both.stderr.endswith(
        ": --skip-invalid and --check apply to catalog files (.jsonl.zst/.jsonl), not to a problem folder\n"
    )
