"""The command line a newcomer meets: search, cases, human units, unwrapped identifiers, rank by what
runs/show print, eval --cases with several ids, and --db values that must not become empty stores."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.problems import LOAD_BALANCE_BWD
from kernelindex.sample import sample_paths
from kernelindex.store.database import open_store
from kernelindex.web.app import create_app
from live_kit import serving_store

SOLUTION = Path(__file__).resolve().parents[1] / "src/kernelindex/kernels/moe_load_balance_bwd/solution.json"


def cli(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    return result


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    """The built-in sample: seed bundles and both packs (no upstream workload: seed runs are pending)."""
    path = str(tmp_path_factory.mktemp("cli-search") / "s.db")
    made = cli("import", *map(str, sample_paths()), "--db", path)
    assert made.exit_code == 0, made.output
    return path


@pytest.fixture(scope="module")
def real_db(tmp_path_factory, catalog_path) -> str:
    """The sample and the real export (skipped when ../shared lacks it)."""
    path = str(tmp_path_factory.mktemp("cli-search-real") / "real.db")
    made = cli("import", *map(str, sample_paths()), str(catalog_path), "--db", path)
    assert made.exit_code == 0, made.output
    return path


@pytest.fixture(scope="module")
def real_server(real_db):
    """A live server over the real store (what `--server` reads)."""
    with serving_store(real_db) as url:
        yield url


@pytest.mark.parametrize(
    "url, words",
    [
        ("mysql://x", "mysql is not supported"),
        ("oracle+cx_oracle://u:p@h/db", "oracle is not supported"),
        ("not a url", "no store at not a url"),
    ],
)
def test_bad_db_values_are_one_clean_line(url, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("stats", "--db", url)
    assert result.exit_code == 1 and words in result.output and result.output.count("\n") == 1, result.output
    assert list(tmp_path.iterdir()) == []  # nothing was created


def test_a_misspelled_store_path_is_refused_not_created(db, tmp_path):
    typo = db.replace("s.db", "ss.db")
    for args in (["runs"], ["show", "149b7c1a"], ["rank", "x"], ["search", "042"], ["verify"]):
        result = cli(*args, "--db", typo)
        assert result.exit_code == 1 and f"no store at {typo}" in result.output, (args, result.output)
    assert not Path(typo).exists()


def test_only_store_making_commands_create_and_only_db_files(tmp_path):
    sample = str(sample_paths()[0])
    refused = cli("import", sample, "--db", str(tmp_path / "not a url"))
    assert refused.exit_code == 1 and "refusing to create" in refused.output
    assert cli("import", sample, "--db", str(tmp_path / "missing" / "x.db")).exit_code == 1
    assert list(tmp_path.iterdir()) == []
    made = cli("import", sample, "--db", str(tmp_path / "new.db"))
    assert made.exit_code == 0 and (tmp_path / "new.db").is_file()


def test_making_a_store_is_said_and_a_check_makes_none(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where --check's scratch store goes
    sample, made = str(sample_paths()[0]), tmp_path / "new.db"
    first = CliRunner().invoke(app, ["import", sample, "--db", str(made)])
    assert first.exit_code == 0 and f"note: created a new store at sqlite:///{made}" in first.stderr, first.stderr
    again = CliRunner().invoke(app, ["import", sample, "--db", str(made)])
    assert again.exit_code == 0 and "created" not in again.stderr
    assert cli("export", str(tmp_path / "out.jsonl.zst"), "--db", str(made)).exit_code == 0
    checked = CliRunner().invoke(
        app, ["import", "--check", str(tmp_path / "out.jsonl.zst"), "--db", str(tmp_path / "x.db")]
    )
    assert checked.exit_code == 0 and "all valid" in checked.stdout and "nothing stored" in checked.stdout
    assert "0 rows would be added" not in checked.stdout and "created" not in checked.stderr
    assert not list(tmp_path.glob("x.db*")) and list(scratch.iterdir()) == []  # no x.db, and the scratch is gone


def test_runs_in_human_units_with_unwrapped_digests_and_mixed_stacks(db):
    out = cli("runs", "--db", db).output
    assert "317.9 µs" in out and "7.70 µs" in out and "317881" not in out
    assert re.search(r"sha256:[0-9a-f]{12}\b", out)
    assert "mix 2 software stacks" in out and "evaluation_stack v1.0" in out and "evaluation_stack v1.1" in out
    rows = json.loads(cli("runs", "--db", db, "--json").output)  # the API's run items
    assert {r["primary"]["value"] for r in rows} == {317881.0, 7699.0}  # raw, as stored
    assert {r["primary"]["display"] for r in rows} == {"317.9 µs", "7.70 µs"}
    assert {r["stack"] for r in rows} == {"evaluation_stack v1.0", "evaluation_stack v1.1"}
    one_stack = cli("runs", "--db", db, "--limit", "1").output
    assert "1 of 2 runs" in one_stack and "mix" not in one_stack and "stack" not in one_stack


def test_show_has_rank_sol_speedup_and_a_whole_digest(db):
    out = cli("show", "149b7c1a", "--db", db).output
    digest = re.search(r"^run\s+(sha256:[0-9a-f]+)$", out, re.M)
    assert digest and len(digest.group(1)) == 71  # on one line, never folded
    assert re.search(r"^id\s+[0-9a-f-]{36}$", out, re.M), out
    # its workload is upstream's, not in the sample: no comparison group
    assert re.search(r"^rank\s+not ranked: its workload record is not in this index yet", out, re.M), out
    assert re.search(r"^SOL score\s+0\.9189$", out, re.M) and re.search(r"^speedup\s+8\.02×$", out, re.M)
    assert re.search(r"^primary\s+317\.9 µs", out, re.M) and "317881" not in out
    assert re.search(r"^stack\s+evaluation_stack v1\.0$", out, re.M), out
    assert "Speedup over the reference" not in out and "Cases faster than the baseline  16/16" in out
    detail = json.loads(cli("show", "149b7c1a", "--db", db, "--json").output)
    assert detail["primary"]["value"] == 317881 and detail["rank"]["rank"] is None
    assert detail["sol"] == 0.918888 and detail["speedup"] == detail["sourceNative"]["metrics"]["avg_speedup"]


def test_show_and_rank_on_the_real_export(real_db):
    out = cli("show", "149b7c1a", "--db", real_db).output
    assert re.search(r"^rank\s+2 of 2 in its comparison group$", out, re.M), out
    ranked = cli("rank", "149b7c1a", "--db", real_db).output  # a run digest prefix: its group
    assert "317.9 µs" in ranked and "sha256:149b7c1a1939" in ranked and "0.9189" in ranked and "8.02×" in ranked
    text = cli("search", "moe_token_scatter_bwd", "N=300", "--db", real_db).output
    assert "[suite]" in text and "261.2 µs" in text and "[below num_tokens]" in text
    verified = cli("search", "042", "H200", "verified", "--db", real_db, "--json").output
    answer = json.loads(verified)
    assert answer["operations"] or answer["relaxed"]


def test_rank_takes_what_runs_and_show_print(real_db):
    db = real_db
    rows = json.loads(cli("runs", "--db", db, "--json", "--source", "sol-execbench", "--limit", "3").stdout)
    for row in rows:
        assert row["workloadId"] and row["operation"]  # the real export holds their workloads
        ident = json.loads(cli("show", row["id"], "--db", db, "--json").output)["identity"]
        key = ident["comparisonKey"]
        printed = (row["digest"][:19], row["digest"][7:15], row["workloadId"], row["operation"])
        for target in (*printed, ident["workload"]["digest"][:19], key, key[:19], key[7:15]):
            result = cli("rank", target, "--db", db)
            assert result.exit_code == 0 and row["digest"][:19] in result.output, (target, result.output)
    missing = cli("rank", "0000000000", "--db", db)
    assert missing.exit_code == 1 and "no comparison key, workload, operation or run named" in missing.output


def test_search_json_is_the_api_document(db):
    for q in ("042", "moe_token_scatter_bwd N=300", "149b7c1a", "ac4k"):
        printed = json.loads(cli("search", *q.split(), "--db", db, "--json").output)
        store = open_store(db)
        try:
            with TestClient(create_app(store=store)) as client:
                served = client.get("/api/v1/search", params={"q": q}).json()
        finally:
            store.close()
        assert printed == served, q
    text = cli("search", "moe_token_scatter_bwd", "N=300", "--db", db).output
    assert "no measured case has num_tokens=300" in text and "num_tokens=296" in text and "num_tokens=336" in text
    too_long = cli("search", "x" * 600, "--db", db)
    assert too_long.exit_code == 1 and "at most 500" in too_long.output


def test_cases_lists_ids_axes_and_sizes():
    out = cli("cases", "moe_load_balance_bwd").output
    ids = re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", out)
    assert len(ids) == 16 and "batch_seq_len" in out and "MiB" in out
    listed = json.loads(cli("cases", str(LOAD_BALANCE_BWD), "--json").output)
    sizes = [c["axes"]["batch_seq_len"] for c in listed["cases"]]
    assert sizes == sorted(sizes) and listed["cases"][0]["inputShapes"]["grad_expert_mask"] == [2048, 256]
    assert cli("cases", "no-such-problem").exit_code == 1


def test_eval_cases_takes_several_ids_after_one_flag():
    both = cli("eval", str(LOAD_BALANCE_BWD), "--solution", str(SOLUTION), "--cases", "60b6e5ee", "zzzz9999")
    assert both.exit_code == 1 and "no case 'zzzz9999'" in both.output  # the second id reached --cases
    repeated = cli(
        "eval", str(LOAD_BALANCE_BWD), "--solution", str(SOLUTION), "--cases", "60b6e5ee", "--cases", "xxxx7777"
    )
    assert repeated.exit_code == 1 and "no case 'xxxx7777'" in repeated.output
    comma = cli("eval", str(LOAD_BALANCE_BWD), "--solution", str(SOLUTION), "--cases", "60b6e5ee,yyyy8888")
    assert comma.exit_code == 1 and "no case 'yyyy8888'" in comma.output
    stray = cli("eval", str(LOAD_BALANCE_BWD), "extra", "--solution", str(SOLUTION))
    assert stray.exit_code == 2 and "case ids go after --cases" in stray.output


def test_runs_show_and_rank_print_the_same_from_a_store_and_a_server(real_db, real_server, monkeypatch):
    monkeypatch.setenv("KERNELINDEX_PUBLIC_URL", real_server)  # local permalinks name the same site
    monkeypatch.delenv("KERNELINDEX_SERVER", raising=False)
    row = json.loads(cli("runs", "--db", real_db, "--json", "--source", "sol-execbench", "--limit", "1").stdout)[0]
    printed = {}
    for args in (
        ("runs", "--limit", "40"),
        ("show", "149b7c1a"),
        ("rank", "149b7c1a"),
        ("rank", row["digest"][:19]),
        ("rank", row["workloadId"]),
    ):
        local, remote = cli(*args, "--db", real_db), cli(*args, "--server", real_server)
        assert local.exit_code == remote.exit_code == 0, args
        if args[0] == "runs":  # a shortened listing: the store and the server count what matches alike
            assert "40 of " in local.stdout and "showing 40 of " in local.stderr
        assert local.output == remote.output, args
        printed[args[0]] = printed.get(args[0], "") + local.output
    assert "software stacks" in printed["runs"] and "317.9 µs" in printed["show"] and "8.02×" in printed["rank"]
    assert re.search(r"^rank\s+2 of 2 in its comparison group$", printed["show"], re.M)
    assert re.search(r"^SOL score\s+0\.9189$", printed["show"], re.M) and row["digest"][:19] in printed["rank"]
    for args in (("show", "149b7c1a", "--json"), ("runs", "--limit", "5", "--json")):
        local, remote = cli(*args, "--db", real_db), cli(*args, "--server", real_server)
        assert json.loads(local.stdout) == json.loads(remote.stdout), args


def test_the_readme_and_the_search_box_name_a_gpu_with_kernel_runs(real_db):
    """Their examples are what a newcomer types first: each GPU they name has kernel runs in the export."""
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    box = (root / "src/kernelindex/web/templates/base.html").read_text()
    named = {
        *re.findall(r"kernelindex runs [^\n]*--hardware (\w+)", readme),
        *re.findall(r'iter_runs\(hardware="(\w+)"\)', readme),
        *re.findall(r"kernelindex search 042 (\w+)", readme),
        *re.findall(r'placeholder="042 (\w+) ', box),
    }
    assert len(named) >= 1 and all(re.fullmatch(r"[A-Z]\d+", g) for g in named), named
    for gpu in named:
        listed = cli("runs", "--db", real_db, "--hardware", gpu, "--limit", "1", "--json")
        assert json.loads(listed.stdout), f"{gpu}: no kernel runs in the export"


def test_shortened_rank_tables_say_what_they_leave_out(real_db):
    ranked = cli("rank", "149b7c1a", "--db", real_db, "--limit", "1")
    assert ranked.exit_code == 0 and "showing the best 1 of 2 ranked runs" in ranked.stdout, ranked.output
    found = cli("search", "042", "B200", "--db", real_db, "--rows", "1")
    assert found.exit_code == 0 and re.search(r"… \d+ more ranked: --rows N", found.stdout), found.output


def test_filler_words_pick_no_operation(real_db):
    answer = json.loads(cli("search", "best", "kernel", "for", "042", "on", "B200", "--db", real_db, "--json").stdout)
    named = [op["operation"]["slug"] for op in answer["operations"]] + [o["slug"] for o in answer["otherOperations"]]
    assert named and all(slug.startswith("042-") for slug in named), named  # not 051_..._single_kernel_...
    assert any("filler" in note and "kernel" in note for note in answer["notes"]), answer["notes"]


def test_the_readme_author_example_finds_the_seed_on_a_store_of_the_seeds_alone(tmp_path):
    db = str(tmp_path / "seeds.db")
    assert cli("import", *map(str, sample_paths()), "--db", db).exit_code == 0
    found = cli("search", "ac4k", "--db", db, "--json")
    assert found.exit_code == 0, found.output
    matches = json.loads(found.stdout)["matches"]
    seed = json.loads(cli("runs", "--db", db, "--json").stdout)
    ac4k = next(r for r in seed if r["title"].startswith("ac4k"))
    impl = json.loads(cli("show", ac4k["id"], "--db", db, "--json").stdout)["identity"]["implementation"]["digest"]
    assert [(m["kind"], m["digest"]) for m in matches] == [("implementation", impl)]
    assert matches[0]["href"] == f"/runs/{ac4k['id']}" and "ac4k" in matches[0]["title"]
    table = cli("search", "ac4k", "--db", db).stdout
    assert "no operation, workload, implementation or digest matches" not in table and impl[:19] in table
