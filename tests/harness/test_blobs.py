"""Safetensors inputs under the upstream blob root (FlashInfer-Bench's dataset layout, SOL-ExecBench's
overlapping roots), one setting read in one place, and a clear refusal naming the workload and path."""

from __future__ import annotations

import json
import secrets

import pytest
import torch
from harness_testkit import PROBLEMS, quick, write_solution
from safetensors.torch import save_file
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.formats.problem import load_problem
from kernelindex.harness import blobs
from kernelindex.harness.runner import evaluate

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


def test_eval_without_the_blob_root_says_which_workload_and_path_and_reads_the_environments(tmp_path, monkeypatch):
    folder, traces, path, _ = _dataset(tmp_path, 4)
    monkeypatch.delenv(blobs.ENV, raising=False)
    write_solution(tmp_path / "s", "def run(x, y, z):\n    z.copy_(x + y)\n")
    args = ["eval", str(folder), "-s", str(tmp_path / "s" / "solution.json"), "--rounds", "1", "--iterations", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert UUID in result.output and path in result.output
    refused = CliRunner().invoke(app, [*args, "--blob-root", str(tmp_path / "nowhere")])
    assert refused.exit_code == 2 and "no folder" in refused.output, refused.output
    monkeypatch.setenv(blobs.ENV, str(traces))  # the environment's root, where no option names one
    ran = CliRunner().invoke(app, [*args, "--warmup", "0", "--pairs", "1"])
    assert ran.exit_code == 0 and "PASSED" in ran.output, ran.output
