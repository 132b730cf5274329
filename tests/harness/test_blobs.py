"""Safetensors inputs under the upstream blob root (FlashInfer-Bench's dataset layout, SOL-ExecBench's
overlapping roots), one setting read in one place, and a clear refusal naming the workload and path; a
case's record names its blob by content, so cases that differ only in their data are distinct workloads."""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import replace

import pytest
import torch
from harness_testkit import PROBLEMS, quick, write_solution
from safetensors.torch import save_file
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.formats import blobs
from kernelindex.formats.errors import FormatError
from kernelindex.formats.problem import load_problem
from kernelindex.formats.records import records_for
from kernelindex.harness.records import evaluation_records
from kernelindex.harness.runner import evaluate
from kernelindex.records.canonical import digest
from kernelindex.services import harness_adapter as harness

UUID = "b10b0000-0000-4000-8000-000000000001"


def _dataset(tmp_path, n: int):
    """A FlashInfer-Bench-like trace set (tensors under blob/workloads/) and, apart from it, a problem folder
    whose one case reads x from it; the tensor's values are fresh each run."""
    data = torch.randn(n, generator=torch.Generator().manual_seed(secrets.randbits(63)))
    blob = tmp_path / "traces" / "blob" / "workloads" / "vector_add"
    blob.mkdir(parents=True)
    save_file({"x": data}, str(blob / "case.safetensors"))
    folder = tmp_path / "problem"
    folder.mkdir()
    (folder / "definition.json").write_text((PROBLEMS / "vector_add" / "definition.json").read_text())
    path = "blob/workloads/vector_add/case.safetensors"
    line = {"uuid": UUID, "axes": {"n": n}, "inputs": {"x": {"type": "safetensors", "path": path, "tensor_key": "x"}}}
    (folder / "workload.jsonl").write_text(json.dumps(line) + "\n")
    return folder, tmp_path / "traces", path, data


def test_a_path_resolves_under_the_root_whole_or_with_its_overlap_dropped(tmp_path, monkeypatch):
    folder, traces, path, _ = _dataset(tmp_path, 4)
    file = traces / path
    assert blobs.locate(path, folder, traces, UUID, "x") == file  # FlashInfer-Bench: the trace set's root
    assert blobs.locate(path, folder, traces / "blob", UUID, "x") == file  # SOL-ExecBench: "blob/" overlaps
    monkeypatch.setenv(blobs.ENV, str(traces))
    assert blobs.blob_root(None) == traces and blobs.blob_root(str(folder)) == folder  # the option wins
    monkeypatch.delenv(blobs.ENV)
    assert blobs.blob_root(None) is None


def test_a_missing_file_or_one_outside_both_roots_is_refused_by_workload_and_path(tmp_path):
    folder, traces, path, _ = _dataset(tmp_path, 4)
    with pytest.raises(blobs.BlobMissing) as missing:
        blobs.locate(path, folder, None, UUID, "x")
    assert UUID in str(missing.value) and path in str(missing.value) and blobs.ENV in str(missing.value)
    (tmp_path / "secret.safetensors").write_bytes(b"")
    for outside in ("../secret.safetensors", str(tmp_path / "secret.safetensors")):
        with pytest.raises(blobs.BlobMissing, match="secret"):
            blobs.locate(outside, folder, traces, UUID, "x")


def test_a_run_reads_the_blob_from_the_root_given(tmp_path):
    """The sandboxed reference sees only the problem's snapshot: the file is staged into it, and what the
    solution receives is the file's tensor (a solution that hard-codes it passes)."""
    n = 6
    folder, traces, _, data = _dataset(tmp_path, n)
    constant = repr(data.tolist())
    code = f"import torch\n\ndef run(x, y, z):\n    torch.add(torch.tensor({constant}), y, out=z)\n"
    suite = evaluate(load_problem(folder), write_solution(tmp_path / "s", code), quick(blob_root=str(traces)))
    assert [c.status for c in suite.cases] == ["PASSED"], suite.cases[0].log
    # the run's own records name the file it ran on, found where the run found it
    case = evaluation_records(suite).problem.cases[UUID]
    artifact = case["spec"]["tensors"]["x"]["data"]["artifact"]
    file = traces / artifact["uri"].split("#")[0]
    assert artifact["digest"] == "sha256:" + hashlib.sha256(file.read_bytes()).hexdigest()


def test_the_records_name_the_data_the_run_read_not_what_the_file_became(tmp_path):
    """Unsandboxed, a solution can write over the blob under the root once the run has staged it: the
    records name the copy the reference read, hashed before any process started, not the file as it is
    when the records are made."""
    n = 6
    folder, traces, path, data = _dataset(tmp_path, n)
    file = traces / path
    read = "sha256:" + hashlib.sha256(file.read_bytes()).hexdigest()
    code = (
        "import torch\nfrom safetensors.torch import save_file\n\ndef run(x, y, z):\n"
        f"    save_file({{'x': torch.full(({n},), 7.0)}}, {str(file)!r})\n    torch.add(x, y, out=z)\n"
    )
    suite = evaluate(
        load_problem(folder), write_solution(tmp_path / "s", code), quick(blob_root=str(traces), sandbox="off")
    )
    assert [c.status for c in suite.cases] == ["PASSED"], suite.cases[0].log
    assert "sha256:" + hashlib.sha256(file.read_bytes()).hexdigest() != read  # the solution did write it
    artifact = evaluation_records(suite).problem.cases[UUID]["spec"]["tensors"]["x"]["data"]["artifact"]
    assert artifact["digest"] == read
    # made from the folder alone, the record names the file as it now is: another workload
    assert records_for(load_problem(folder), traces).cases[UUID] != evaluation_records(suite).problem.cases[UUID]


def test_eval_without_the_blob_root_says_which_workload_and_path_and_reads_the_environments(tmp_path, monkeypatch):
    folder, traces, path, _ = _dataset(tmp_path, 4)
    monkeypatch.delenv(blobs.ENV, raising=False)
    write_solution(tmp_path / "s", "def run(x, y, z):\n    z.copy_(x + y)\n")
    args = ["eval", str(folder), "-s", str(tmp_path / "s" / "solution.json"), "--rounds", "1", "--iterations", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert UUID in result.output and path in result.output
    refused = CliRunner().invoke(app, [*args, "--blob-root", str(tmp_path / "nowhere")], env={"COLUMNS": "400"})
    assert refused.exit_code == 2 and "no folder" in refused.output, refused.output
    monkeypatch.setenv(blobs.ENV, str(traces))  # the environment's root, where no option names one
    ran = CliRunner().invoke(app, [*args, "--warmup", "0", "--pairs", "1"])
    assert ran.exit_code == 0 and "PASSED" in ran.output, ran.output


def _new_data(traces, path, n: int) -> None:
    save_file({"x": torch.randn(n, generator=torch.Generator().manual_seed(secrets.randbits(63)))}, str(traces / path))


def test_cases_that_differ_only_in_their_blobs_are_different_workloads(tmp_path, monkeypatch):
    """A record made without the blob's file could not tell two such cases apart (they would share a digest,
    and so a comparison group): the file's digest is part of the case, wherever the root puts it."""
    monkeypatch.delenv(blobs.ENV, raising=False)
    folder, traces, path, _ = _dataset(tmp_path, 5)
    first = records_for(load_problem(folder), traces).cases[UUID]
    artifact = first["spec"]["tensors"]["x"]["data"]["artifact"]
    assert artifact == {
        "uri": f"{path}#x",
        "digest": "sha256:" + hashlib.sha256((traces / path).read_bytes()).hexdigest(),
    }
    assert digest(records_for(load_problem(folder), traces).cases[UUID]) == digest(first)  # same data: same case
    _new_data(traces, path, 5)
    assert digest(records_for(load_problem(folder), traces).cases[UUID]) != digest(first)
    monkeypatch.setenv(blobs.ENV, str(traces / "blob"))  # SOL-ExecBench's overlapping root, from the environment
    assert (
        records_for(load_problem(folder)).cases[UUID]["spec"]["tensors"]["x"]["data"]["artifact"]["uri"] == f"{path}#x"
    )


def test_a_case_whose_blob_is_nowhere_gets_no_record_and_the_refusal_names_it(tmp_path, monkeypatch):
    monkeypatch.delenv(blobs.ENV, raising=False)
    folder, traces, path, _ = _dataset(tmp_path, 3)
    with pytest.raises(FormatError) as refused:
        records_for(load_problem(folder))
    assert refused.value.file.endswith("workload.jsonl") and refused.value.line == 1
    assert UUID in str(refused.value) and path in str(refused.value) and blobs.ENV in str(refused.value)


def test_import_of_a_problem_folder_finds_its_blobs_under_the_root_given(tmp_path, monkeypatch):
    monkeypatch.delenv(blobs.ENV, raising=False)
    folder, traces, path, _ = _dataset(tmp_path, 4)
    db = ["--db", str(tmp_path / "blobs.db")]
    refused = CliRunner().invoke(app, ["import", str(folder), *db])
    assert refused.exit_code == 1 and "Traceback" not in refused.output, refused.output
    assert UUID in refused.output and path in refused.output and "--blob-root" in refused.output

    def imported() -> dict:
        done = CliRunner().invoke(app, ["import", str(folder), *db, "--blob-root", str(traces), "--json"])
        assert done.exit_code == 0, done.output
        return json.loads(done.stdout)[0]

    assert imported()["added"].get("workloads") == 2  # the case and its suite
    assert "workloads" not in imported()["added"]  # the same data again: the same workload
    _new_data(traces, path, 4)
    assert imported()["added"].get("workloads") == 1  # other data: another case (the suite names cases by uuid)


def test_cases_that_read_other_tensors_of_one_file_are_different_workloads(tmp_path, monkeypatch):
    monkeypatch.delenv(blobs.ENV, raising=False)
    folder, traces, path, _ = _dataset(tmp_path, 4)
    save_file({"x": torch.randn(4), "y": torch.randn(4)}, str(traces / path))
    first = records_for(load_problem(folder), traces).cases[UUID]
    workload = folder / "workload.jsonl"
    workload.write_text(workload.read_text().replace('"tensor_key": "x"', '"tensor_key": "y"'))
    other = records_for(load_problem(folder), traces).cases[UUID]
    assert other["spec"]["tensors"]["x"]["data"]["artifact"]["uri"] == f"{path}#y"
    assert digest(other) != digest(first)


def test_a_campaigns_batches_that_read_one_blob_differently_are_not_merged(tmp_path):
    """A campaign stores one run per case from batches run apart: their blob digests are merged, and a
    file read with other contents by another batch refuses the merge rather than naming one of them."""
    folder, traces, path, _ = _dataset(tmp_path, 5)
    solution = write_solution(tmp_path / "s", "import torch\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n")
    suite = evaluate(load_problem(folder), solution, quick(blob_root=str(traces)))
    assert [c.status for c in suite.cases] == ["PASSED"], suite.cases[0].log
    read = suite.blob_digests[path]
    assert harness.merge([suite, replace(suite, cases=[])]).blob_digests == {path: read}
    other = "sha256:" + hashlib.sha256(read.encode()).hexdigest()
    with pytest.raises(ValueError, match=f"{path} changed between batches"):
        harness.merge([suite, replace(suite, cases=[], blob_digests={path: other})])
