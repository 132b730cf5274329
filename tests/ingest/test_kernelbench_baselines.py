"""KernelBench's published baselines: reported runs with their machine, variant and statistic, idempotent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from kernelindex.ingest.problems import ImportFailed
from kernelindex.ingest.upstream import dispatch
from kernelindex.store import tables as t
from kernelindex.web.app import create_app

FIXTURES = Path(__file__).parent / "fixtures" / "kernelbench"
EAGER = FIXTURES / "TestBox_A100" / "baseline_time_torch.json"


def test_baselines_import_as_reported_runs_with_provenance_and_idempotently(store):
    assert dispatch.detect(FIXTURES) == dispatch.detect(EAGER) == "kernelbench"
    report = dispatch.import_upstream(store, "kernelbench", FIXTURES)
    assert report.added["runs"] == 4
    with store.begin() as conn:
        bundles = [m for (m,) in conn.execute(select(t.runs.c.manifest))]
    by_title = {b["run"]["metadata"]["title"]: b for b in bundles}
    eager = by_title["3_Scaled_row_sum.py · torch · TestBox_A100"]["run"]["spec"]
    compiled = by_title["3_Scaled_row_sum.py · torch.compile inductor-default · TestBox_A100"]["run"]["spec"]
    assert eager["measurements"][0] == {"metric": "latency", "statistic": "mean", "unit": "ms", "value": 0.0412}
    assert {m["statistic"] for m in eager["measurements"]} == {"mean", "std", "min", "max"}
    assert eager["sourceNative"]["source"] == "kernelbench" and eager["sourceNative"]["metrics"]["num_trials"] == 100
    assert eager["implementationDigest"] != compiled["implementationDigest"]
    assert eager["workloadDigest"] == compiled["workloadDigest"]
    assert sum(dispatch.import_upstream(store, "kernelbench", FIXTURES).added.values()) == 0


def test_baselines_show_on_their_operation_page(store):
    dispatch.import_upstream(store, "kernelbench", EAGER)
    with TestClient(create_app(store=store), raise_server_exceptions=False) as client:
        page = client.get("/operations/kernelbench-l1-3-scaled-row-sum-baseline")
        other = client.get("/operations/kernelbench-l2-7-linear-gelu-scale-baseline")
    assert page.status_code == 200 and other.status_code == 200
    assert "NVIDIA A100" in page.text and "41.2" in page.text
    assert "87.1" in other.text and "41.2" not in other.text


def test_a_level1_operation_page_lists_each_variants_baseline_with_its_machine(store):
    """Both variants of one problem on one machine: a comparison group each, chosen on the operation's
    page by machine and variant, its table the run titled by file, variant and machine folder."""
    import html
    import re

    dispatch.import_upstream(store, "kernelbench", FIXTURES)
    with TestClient(create_app(store=store), raise_server_exceptions=False) as client:
        page = client.get("/operations/kernelbench-l1-3-scaled-row-sum-baseline")
        assert page.status_code == 200
        chooser = page.text[page.text.index('class="group-chooser"') :].split("</ul>", 1)[0]
        links = dict((label, html.unescape(href)) for href, label in re.findall(r'href="([^"]+)">([^<]+)</a>', chooser))
        assert set(links) == {
            "NVIDIA A100-SXM4-80GB · KernelBench baseline timing (torch)",
            "NVIDIA A100-SXM4-80GB · KernelBench baseline timing (torch.compile inductor-default)",
        }
        shown = {label: client.get(href).text for label, href in links.items()}
    for variant, value in (("torch", "41.2"), ("torch.compile inductor-default", "30.5")):
        group = shown[f"NVIDIA A100-SXM4-80GB · KernelBench baseline timing ({variant})"]
        assert f"KernelBench baseline timing ({variant}) · KernelBench machine TestBox_A100" in group
        assert f"3_Scaled_row_sum.py · {variant} · TestBox_A100" in group and value in group


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda d: d["level1"]["3_Scaled_row_sum.py"].update(mean="fast"), "mean must be a finite number"),
        (lambda d: d["level1"]["3_Scaled_row_sum.py"].update(min=1.0), "not between min and max"),
        (lambda d: d.update(levelX={}), "is not a level"),
        (lambda d: d["level1"]["3_Scaled_row_sum.py"].pop("hardware"), "hardware must be a non-empty string"),
    ],
)
def test_a_bad_baseline_file_is_refused_by_field_and_stores_nothing(store, tmp_path, change, reason):
    data = json.loads(EAGER.read_text())
    change(data)
    bad = tmp_path / "Box" / "baseline_time_torch.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps(data))
    with pytest.raises(ImportFailed, match=reason) as caught:
        dispatch.import_upstream(store, "kernelbench", bad)
    assert str(bad) in str(caught.value)
    with store.begin() as conn:
        assert conn.execute(select(t.runs.c.id)).first() is None


def test_a_file_not_named_as_a_baseline_is_refused(store, tmp_path):
    other = tmp_path / "timings.json"
    other.write_text(EAGER.read_text())
    with pytest.raises(ImportFailed, match="not a KernelBench baseline file"):
        dispatch.import_upstream(store, "kernelbench", other)


PROBLEMS = Path(__file__).parents[1] / "harness" / "fixtures" / "kernelbench"  # the files EAGER's entries time


def test_baselines_given_the_problems_join_the_operation_and_workload_of_the_problems_own_packs(tmp_path):
    """`import KernelBench/levelN` makes each problem's operation and workload; baselines imported with
    --problem land on those (beside the solutions' runs), not on a `<name>-baseline` operation of their own."""
    from typer.testing import CliRunner

    from kernelindex.cli import app
    from kernelindex.store.database import open_store

    db, runner = str(tmp_path / "kb.db"), CliRunner()
    packs = runner.invoke(app, ["import", str(PROBLEMS / "level1"), str(PROBLEMS / "level2"), "--db", db])
    assert packs.exit_code == 0, packs.output
    store = open_store(db)
    try:
        with store.begin() as conn:
            before = dict(conn.execute(select(t.operations.c.slug, t.operations.c.id)).all())
            cases = {
                op: digest
                for op, digest in conn.execute(
                    select(t.workloads.c.operation_id, t.workloads.c.workload_digest).where(
                        t.workloads.c.kind == "WorkloadCase"
                    )
                )
            }
        args = ["import", "--from", "kernelbench", str(EAGER), "--problem", str(PROBLEMS), "--db", db]
        for _ in range(2):  # the second time adds nothing
            base = runner.invoke(app, args)
            assert base.exit_code == 0, base.output
        with store.begin() as conn:
            after = dict(conn.execute(select(t.operations.c.slug, t.operations.c.id)).all())
            runs = conn.execute(select(t.runs.c.workload_digest, t.runs.c.operation_digest, t.runs.c.manifest)).all()
    finally:
        store.close()
    assert after == before and not any(slug.endswith("-baseline") for slug in after)
    assert len(runs) == 3
    by_file = {r.manifest["run"]["metadata"]["title"].split(" · ")[0]: r for r in runs}
    row_sum = by_file["3_Scaled_row_sum.py"]
    assert row_sum.workload_digest == cases[before["kernelbench-l1-3-scaled-row-sum"]]
    assert by_file["7_Linear_GELU_Scale.py"].workload_digest == cases[before["kernelbench-l2-7-linear-gelu-scale"]]
    assert row_sum.manifest["run"]["spec"]["measurements"][0]["value"] == 0.0412


def test_baselines_naming_a_problem_the_folder_lacks_are_refused_by_field(store, tmp_path):
    from kernelindex.services.imports import import_upstream_paths

    level1 = tmp_path / "KernelBench" / "level1"
    level1.mkdir(parents=True)
    (level1 / "3_Scaled_row_sum.py").write_text((PROBLEMS / "level1" / "3_Scaled_row_sum.py").read_text())
    with pytest.raises(ImportFailed) as caught:
        import_upstream_paths(store, "kernelbench", [EAGER], problems=level1.parent)
    (problem,) = caught.value.problems
    assert (problem.file, problem.field) == (str(EAGER), "level1.1_Square_matmul_small.py")
    assert "no problem file 1_Square_matmul_small.py in level1" in problem.reason
    with store.begin() as conn:
        assert conn.execute(select(t.runs.c.id)).first() is None


def test_problem_files_are_for_kernelbench_baselines_only(store, tmp_path):
    from kernelindex.services.imports import import_upstream_paths

    with pytest.raises(ImportFailed, match="no --from kernelbench import") as caught:
        import_upstream_paths(store, "liger", [EAGER], problems=PROBLEMS)
    assert caught.value.problems[0].field == "--problem"
