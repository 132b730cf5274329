"""FlashInfer-Bench's own problem and solution format in the harness (``spec.language``), on CPU.

The snapshot's definition (``fused_add_rmsnorm_h2048``) and its trace workloads make a problem
folder; a python-language solution of ours runs on it, and every trace line ``eval`` writes is
checked against flashinfer-bench's own ``Trace`` model when that package imports. It is not a
declared dependency (it requires flashinfer-python and CUDA wheels); its data models need only
pydantic, so ``pip install --no-deps flashinfer-bench docstring-parser`` is enough for this check.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness_testkit import quick
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.formats.errors import FormatError
from kernelindex.formats.problem import load_problem
from kernelindex.formats.solution import load_solution
from kernelindex.harness.runner import evaluate

RMSNORM = """import torch


def run(hidden_states, residual, weight):
    x = hidden_states.to(torch.float32) + residual.to(torch.float32)
    y = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * weight.to(torch.float32)
    return y.to(hidden_states.dtype)
"""


@pytest.fixture
def dataset(shared_dir) -> Path:
    path = shared_dir / "data" / "upstream-fixtures" / "flashinfer" / "dataset"
    if not path.is_dir():
        pytest.skip(f"FlashInfer-Bench snapshot {path} is absent")
    return path


@pytest.fixture
def problem_dir(dataset, tmp_path) -> Path:
    """definition.json as the dataset has it; workload.jsonl from the workloads its traces measured."""
    folder = tmp_path / "fused_add_rmsnorm_h2048"
    folder.mkdir()
    shutil.copy(dataset / "definition.json", folder / "definition.json")
    workloads = [json.loads(line)["workload"] for line in (dataset / "trace.jsonl").read_text().splitlines()]
    folder.joinpath("workload.jsonl").write_text("".join(json.dumps(w) + "\n" for w in workloads[:2]))
    return folder


def flashinfer_solution(folder: Path, language: str, code: str = RMSNORM, **spec) -> Path:
    """A solution in FlashInfer-Bench's shape: one ``spec.language``, value-returning."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "name": f"ours_{language}",
        "definition": "fused_add_rmsnorm_h2048",
        "author": "kernelindex tests",
        "spec": {
            "language": language,
            "target_hardware": ["cpu"],
            "entry_point": "main.py::run",
            "dependencies": [],
            "destination_passing_style": False,
            **spec,
        },
        "sources": [{"path": "main.py", "content": code}],
    }
    path = folder / "solution.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


def test_the_real_baseline_solution_is_read(dataset):
    solution = load_solution(dataset / "solution.json")
    assert solution.languages == ("python",) and not solution.compiled
    assert solution.entry_point == "main.py::run" and solution.destination_passing_style is False
    llm = load_solution(dataset / "llm-solution.json")
    assert llm.languages == ("triton",)


@pytest.mark.parametrize(
    ("language", "compiled"), [("python", False), ("triton", False), ("tilelang", False), ("cpp", True), ("cuda", True)]
)
def test_every_flashinfer_language_is_known(tmp_path, language, compiled):
    assert load_solution(flashinfer_solution(tmp_path, language)).compiled is compiled


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        ({"language": "fortran"}, "spec.language", "unknown language 'fortran'"),
        ({"language": ["python"]}, "spec.language", "a string"),
        ({"language": "python", "languages": ["cuda_cpp"]}, "spec.language", "spec.languages says"),
    ],
)
def test_bad_language_fields_are_refused_by_name(tmp_path, spec, field, words):
    path = flashinfer_solution(tmp_path, "python")
    doc = json.loads(path.read_text())
    doc["spec"].update(spec)
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError) as refused:
        load_solution(path)
    assert refused.value.field == field and words in str(refused.value)


def test_a_python_language_solution_runs_on_cpu_and_its_traces_validate(problem_dir, tmp_path):
    result = evaluate(load_problem(problem_dir), load_solution(flashinfer_solution(tmp_path / "s", "python")), quick())
    assert [r.status for r in result.cases] == ["PASSED", "PASSED"], [r.log for r in result.cases]
    out = tmp_path / "traces.jsonl"
    ran = CliRunner().invoke(
        app,
        [
            "eval",
            str(problem_dir),
            "--solution",
            str(tmp_path / "s" / "solution.json"),
            "-o",
            str(out),
            "--rounds",
            "2",
            "--warmup",
            "1",
            "--iterations",
            "4",
        ],
    )
    assert ran.exit_code == 0, ran.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 2 and {line["evaluation"]["status"] for line in lines} == {"PASSED"}
    try:
        from flashinfer_bench.data import Trace
    except ImportError as exc:  # the package's data models need only pydantic; say why if absent
        pytest.skip(f"flashinfer-bench is not importable here ({exc}); the lines were checked for shape only")
    for line in lines:
        trace = Trace.model_validate(line)
        assert trace.definition == "fused_add_rmsnorm_h2048" and trace.solution == "ours_python"
        assert trace.evaluation is not None and trace.evaluation.performance.latency_ms > 0
