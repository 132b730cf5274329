"""`kernelindex eval` on a definition of a FlashInfer-Bench trace set (its dataset layout), as its own
loader reads one: every workload file under workloads/, lines grouped by the definition each names,
safetensors inputs from the set's root. The set here is ours, made fresh each run."""

from __future__ import annotations

import json
import random
import secrets
import uuid
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.formats import trace_set
from kernelindex.formats.errors import FormatError
from kernelindex.formats.problem import load_problem
from kernelindex.harness import trace_sets

RNG = random.Random(secrets.randbits(64))
DEFINITION = {
    "name": "scale_add_h8",
    "op_type": "elementwise",
    "tags": ["status:verified"],
    "axes": {"n": {"type": "var"}, "h": {"type": "const", "value": 8}},
    "inputs": {"x": {"shape": ["n", "h"], "dtype": "float32"}, "w": {"shape": ["h"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["n", "h"], "dtype": "float32"}},
    "reference": "import torch\n\ndef run(x, w):\n    return x * w + 1.0\n",
}


def _line(definition: str, n: int, inputs: dict) -> str:
    workload = {"uuid": str(uuid.UUID(int=RNG.getrandbits(128))), "axes": {"n": n}, "inputs": inputs}
    return json.dumps({"definition": definition, "solution": None, "workload": workload, "evaluation": None})


def _trace_set(tmp_path: Path) -> tuple[Path, Path, list[int]]:
    """A trace set whose definition's lines are spread over two files (one named for another definition),
    beside another definition's line; one case reads its x from blob/workloads/."""
    root = tmp_path / "flashinfer-trace"
    (root / "definitions" / "elementwise").mkdir(parents=True)
    (root / "workloads" / "elementwise").mkdir(parents=True)
    blob = root / "blob" / "workloads" / "elementwise" / "scale_add_h8"
    blob.mkdir(parents=True)
    sizes = [RNG.randint(3, 40) for _ in range(3)]
    save_file({"x": torch.randn(sizes[2], 8)}, str(blob / "x.safetensors"))
    file = root / "definitions" / "elementwise" / "scale_add_h8.json"
    file.write_text(json.dumps(DEFINITION, indent=1))
    random_inputs = {"x": {"type": "random"}, "w": {"type": "random"}}
    from_blob = {"x": {"type": "safetensors", "path": str(blob.relative_to(root) / "x.safetensors"), "tensor_key": "x"}}
    (root / "workloads" / "elementwise" / "scale_add_h8.jsonl").write_text(
        _line("scale_add_h8", sizes[0], random_inputs) + "\n" + _line("other_op", 5, random_inputs) + "\n"
    )
    (root / "workloads" / "elementwise" / "more.jsonl").write_text(
        "\n".join(
            [
                _line("scale_add_h8", sizes[1], random_inputs),
                _line("scale_add_h8", sizes[2], from_blob | {"w": {"type": "random"}}),
            ]
        )
        + "\n"
    )
    return root, file, sizes


def test_a_definitions_lines_are_gathered_from_every_workload_file(tmp_path):
    root, file, sizes = _trace_set(tmp_path)
    picked = trace_set.select(file)
    assert picked.root == root.resolve()
    assert sorted(json.loads(line)["workload"]["axes"]["n"] for line in picked.workload_lines) == sorted(sizes)
    folder, blob_root = trace_sets.problem_folder(file, tmp_path / "made")
    problem = load_problem(folder)
    assert problem.format == "flashinfer_bench" and len(problem.cases) == 3 and blob_root == root.resolve()


def test_a_bad_line_is_named_where_it_lies_and_a_set_given_whole_says_how_to_name_one(tmp_path):
    root, file, _ = _trace_set(tmp_path)
    broken = root / "workloads" / "elementwise" / "more.jsonl"
    lines = broken.read_text().splitlines()
    bad = json.loads(lines[0])
    bad["workload"]["axes"] = {"n": "many"}
    broken.write_text("\n".join([json.dumps(bad), *lines[1:]]) + "\n")
    with pytest.raises(FormatError) as error:
        trace_set.select(file)
    assert str(broken) in str(error.value) and ":1" in str(error.value)
    with pytest.raises(FormatError, match="is a FlashInfer-Bench trace set of 1 definition"):
        load_problem(root)
    lonely = tmp_path / "lonely.json"
    lonely.write_text(json.dumps(DEFINITION))
    with pytest.raises(FormatError, match="neither a problem folder nor a definition in a FlashInfer-Bench trace set"):
        trace_set.select(lonely)


def test_eval_runs_a_trace_sets_definition_with_its_blobs_and_its_judge(tmp_path):
    root, file, _ = _trace_set(tmp_path)
    solution = tmp_path / "solution.json"
    solution.write_text(
        json.dumps(
            {
                "name": "scale_add_torch",
                "definition": "scale_add_h8",
                "author": "kernelindex tests",
                "spec": {
                    "languages": ["pytorch"],
                    "target_hardware": ["cpu"],
                    "entry_point": "solution.py::run",
                    "destination_passing_style": False,
                },
                "sources": [
                    {
                        "path": "solution.py",
                        "content": "import torch\n\ndef run(x, w):\n    return torch.addcmul(torch.ones_like(x), x, w)\n",
                    }
                ],
            }
        )
    )
    quick = [
        "--rounds",
        "2",
        "--warmup",
        "1",
        "--iterations",
        "2",
        "--pairs",
        "1",
        "--output",
        str(tmp_path / "traces.jsonl"),
    ]
    shown = CliRunner().invoke(app, ["eval", str(file), "--solution", str(solution), *quick])
    assert shown.exit_code == 0, shown.output
    traces = [json.loads(line) for line in (tmp_path / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == 3 and {t["evaluation"]["status"] for t in traces} == {"PASSED"}
    off = RNG.choice([0.5, -0.75, 2.0])  # beyond FlashInfer-Bench's atol and rtol of 1e-2 on every element
    doc = json.loads(solution.read_text())
    doc["sources"][0]["content"] = f"import torch\n\ndef run(x, w):\n    return x * w + 1.0 + {off}\n"
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(doc))
    failed = CliRunner().invoke(app, ["eval", str(file), "--solution", str(wrong), *quick])
    assert failed.exit_code == 1 and "INCORRECT_NUMERICAL" in failed.output, failed.output
    whole = CliRunner().invoke(app, ["eval", str(root), "--solution", str(solution), *quick])
    assert whole.exit_code == 1 and "trace set of 1 definition(s): give one's file" in whole.output


def test_import_of_a_trace_set_names_the_importer_that_reads_it(tmp_path):
    root, _, _ = _trace_set(tmp_path)
    db = str(tmp_path / "index.db")
    plain = CliRunner().invoke(app, ["import", str(root), "--db", db])
    assert plain.exit_code != 0 and "import it with --from flashinfer" in plain.output, plain.output
    other = root / "definitions" / "elementwise" / "other_op.json"
    other.write_text(json.dumps({**DEFINITION, "name": "other_op"}))
    blob = next(root.glob("blob/**/*.safetensors"))
    moved = blob.rename(tmp_path / "away.safetensors")  # its case's data is nowhere: no record can name it
    refused = CliRunner().invoke(app, ["import", "--from", "flashinfer", str(root), "--db", db], env={"COLUMNS": "400"})
    assert refused.exit_code == 1 and "Traceback" not in refused.output, refused.output
    said = refused.output.replace("\n", "")
    assert str(blob.relative_to(root)) in said and f"under {root}" in said, refused.output
    assert "trace-0" not in said  # the scratch folder made for the import is nothing to its user
    moved.rename(blob)
    done = CliRunner().invoke(app, ["import", "--from", "flashinfer", str(root), "--db", db])
    assert done.exit_code == 0, done.output
    assert "4 lines" in done.output  # the four workload traces, none of them a run
