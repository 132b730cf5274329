"""Reading the upstream formats, and refusing bad files with file, line and field named."""

from __future__ import annotations

import json
import random
import shutil

import pytest
from harness_testkit import PROBLEMS, SOLUTIONS, problem

from hostile_kit import SEED, hostile_edit_file
from kernelindex.formats.axes import ExpressionError, evaluate
from kernelindex.formats.definition import load_definition
from kernelindex.formats.errors import FormatError
from kernelindex.formats.problem import load_problem
from kernelindex.formats.records import trace_links
from kernelindex.formats.solution import load_solution


def test_fixture_problems_load_with_every_feature():
    moe = problem("moe_gather_scatter")
    d = moe.definition
    assert [a.type for a in d.axes.values()] == ["var", "var", "const", "const", "expr"]
    assert d.inputs["bias"].shape == () and d.inputs["alpha"].shape is None
    assert d.inputs["routing_weights"].shape == ("num_tokens", "1")
    axes = d.resolve_axes(moe.cases[0].axes)
    assert axes == {"batch": 40, "num_tokens": 12, "hidden": 16, "experts": 4, "flat": 640}
    assert d.shape(d.inputs["routing_weights"], axes) == (12, 1)
    assert moe.cases[0].inputs["alpha"].value == 0.5
    assert moe.cases[0].tolerance.max_atol == 1e-5
    assert moe.cases[1].tolerance.max_atol == 1e-2 and moe.cases[1].tolerance.required_matched_ratio == 0.99
    add = problem("vector_add")
    assert add.cases[0].t_sol_ms == 0.0005 and add.cases[0].t_b_ms == 0.02 and add.definition.flops == "n"


def test_solutions_read_sources_inline_and_from_files_beside():
    beside = load_solution(SOLUTIONS / "softmax_triton" / "solution.json")
    assert [s.path for s in beside.sources] == ["main.py", "softmax_kernel.py"]
    assert "def launch" in beside.sources[1].content and beside.destination_passing_style
    inline = load_solution(SOLUTIONS / "softmax_torch" / "solution.json")
    assert inline.entry_point == "softmax.py::run" and not inline.destination_passing_style


def test_axis_expressions_are_arithmetic_only():
    assert evaluate("a * (b + 2) // 3 % 5 ** 1", {"a": 4, "b": 1}) == 4 * 3 // 3 % 5
    for bad in ("__import__('os')", "a.real", "[a]", "a if a else b", "lambda: 1"):
        with pytest.raises(ExpressionError):
            evaluate(bad, {"a": 1, "b": 2})


def _definition(tmp_path, **changes):
    doc = json.loads((PROBLEMS / "vector_add" / "definition.json").read_text())
    doc.update(changes)
    path = tmp_path / "definition.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


@pytest.mark.parametrize(
    "changes, field, reason",
    [
        ({"axes": {"n": {"type": "variable"}}}, "axes.n.type", "const, var or expr"),
        (
            {"axes": {"n": {"type": "var"}, "m": {"type": "expr", "expression": "n + k"}}},
            "axes.m.expression",
            "unknown axes ['k']",
        ),
        (
            {"inputs": {"x": {"shape": ["n"], "dtype": "float24"}, "y": {"shape": ["n"], "dtype": "float32"}}},
            "inputs.x.dtype",
            "unknown dtype",
        ),
        (
            {"inputs": {"x": {"shape": ["q"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "float32"}}},
            "x.shape",
            "unknown axis 'q'",
        ),
        (
            {"inputs": {"x": {"shape": ["n"], "dtype": ["float32"]}, "y": {"shape": ["n"], "dtype": "float32"}}},
            "inputs.x.dtype",
            "unknown dtype",
        ),
        ({"name": ["vector_add"]}, "name", "non-empty string"),
        ({"op_type": 3.5}, "op_type", "must be a string"),
        ({"description": {"text": "adds"}}, "description", "must be a string"),
        ({"reference": "x = 1"}, "reference", "defining run"),
        ({"custom_inputs_entrypoint": "make"}, "custom_inputs_entrypoint", "no function 'make'"),
    ],
)
def test_bad_definitions_name_file_line_and_field(tmp_path, changes, field, reason):
    path = _definition(tmp_path, **changes)
    with pytest.raises(FormatError) as caught:
        load_definition(path)
    assert caught.value.field == field and reason in caught.value.reason
    assert caught.value.file == str(path) and caught.value.line is not None
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    "line, field",
    [
        ({"uuid": 7, "axes": {"n": 4}}, "uuid"),
        ({"uuid": "u", "axes": {}}, "axes"),
        ({"uuid": "u", "axes": {"n": "4"}}, "axes"),
        ({"uuid": "u", "axes": {"n": 4}, "inputs": {"x": {"type": "noise"}}}, "inputs.x.type"),
        ({"uuid": "u", "axes": {"n": 4}, "tolerance": {"max_atol": -1}}, "tolerance.max_atol"),
        ({"uuid": "u", "axes": {"n": 4}, "t_sol_ms": 0}, "t_sol_ms"),
        ({"uuid": "u", "axes": 3.5}, "axes"),
        ({"uuid": "u", "axes": {"n": 4}, "inputs": {"x": {"type": {"a": 1}}}}, "inputs.x.type"),
    ],
)
def test_bad_workload_lines_name_the_line(tmp_path, line, field):
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "definition.json").write_text((PROBLEMS / "vector_add" / "definition.json").read_text())
    good = {"uuid": "good", "axes": {"n": 3}}
    (folder / "workload.jsonl").write_text(json.dumps(good) + "\n\n" + json.dumps(line) + "\n")
    with pytest.raises(FormatError) as caught:
        load_problem(folder)
    assert (caught.value.line, caught.value.field) == (3, field)
    assert caught.value.file.endswith("workload.jsonl")


def test_constraints_and_duplicates_are_refused(tmp_path):
    folder = tmp_path / "moe"
    folder.mkdir()
    (folder / "definition.json").write_text((PROBLEMS / "moe_gather_scatter" / "definition.json").read_text())
    (folder / "workload.jsonl").write_text(
        json.dumps(
            {"uuid": "a", "axes": {"batch": 2, "num_tokens": 5}, "inputs": {"alpha": {"type": "scalar", "value": 1}}}
        )
        + "\n"
    )
    with pytest.raises(FormatError, match="num_tokens <= batch"):
        load_problem(folder)
    (folder / "workload.jsonl").write_text(
        "\n".join(
            json.dumps(
                {
                    "uuid": "a",
                    "axes": {"batch": 5, "num_tokens": 2},
                    "inputs": {"alpha": {"type": "scalar", "value": 1}},
                }
            )
            for _ in range(2)
        )
    )
    with pytest.raises(FormatError, match="duplicate of line 1"):
        load_problem(folder)


@pytest.mark.parametrize(
    "spec_changes, sources, field",
    [
        ({"languages": ["pytorch", "cuda_cpp"]}, None, "spec.languages"),
        ({"languages": ["fortran"]}, None, "spec.languages"),
        ({"entry_point": "add.py:run"}, None, "spec.entry_point"),
        ({"entry_point": "other.py::run"}, None, "spec.entry_point"),
        ({}, [{"path": "../add.py", "content": ""}], "sources[0].path"),
        ({}, [{"path": "/etc/add.py", "content": ""}], "sources[0].path"),
        ({}, [{"path": "missing.py"}], "sources[0].content"),
    ],
)
def test_bad_solutions_are_refused(tmp_path, spec_changes, sources, field):
    doc = json.loads((SOLUTIONS / "vector_add_torch" / "solution.json").read_text())
    doc["spec"].update(spec_changes)
    doc["sources"] = sources or [{"path": "add.py", "content": "def run(x, y, z):\n    pass\n"}]
    path = tmp_path / "solution.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError) as caught:
        load_solution(path)
    assert caught.value.field == field and caught.value.file == str(path)


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"name": {"a": 1}}, "name"),
        ({"definition": ""}, "definition"),
        ({"author": {"name": "someone"}}, "author"),
        ({"description": ["adds"]}, "description"),
        ({"spec": {"target_hardware": ["H100", "x" * 101]}}, "spec.target_hardware"),
        ({"spec": {"target_hardware": [{"gpu": "H100"}]}}, "spec.target_hardware"),
        ({"spec": {"compile_options": ["-O3"]}}, "spec.compile_options"),
    ],
)
def test_solution_fields_of_the_wrong_type_are_refused_by_field(tmp_path, changes, field):
    doc = json.loads((SOLUTIONS / "vector_add_torch" / "solution.json").read_text())
    doc["sources"] = [{"path": "add.py", "content": (SOLUTIONS / "vector_add_torch" / "add.py").read_text()}]
    doc["spec"].update(changes.pop("spec", {}))
    doc.update(changes)
    path = tmp_path / "solution.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError) as caught:
        load_solution(path)
    assert caught.value.field == field and caught.value.file == str(path)


def test_a_lone_surrogate_in_a_solution_or_workload_is_refused_by_file(tmp_path):
    """A \\ud800 escape is valid JSON but no UTF-8 text: it crashed the sources' digest."""
    doc = json.loads((SOLUTIONS / "vector_add_torch" / "solution.json").read_text())
    doc["sources"] = [{"path": "add.py", "content": "def run(x, y, z):\n    pass  # \ud800\n"}]
    path = tmp_path / "solution.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="lone UTF-16 surrogate") as caught:
        load_solution(path)
    assert caught.value.file == str(path)
    folder = tmp_path / "p"
    shutil.copytree(PROBLEMS / "vector_add", folder)
    (folder / "workload.jsonl").write_text(json.dumps({"uuid": "a\udfffb", "axes": {"n": 3}}) + "\n")
    with pytest.raises(FormatError, match="lone UTF-16 surrogate") as caught:
        load_problem(folder)
    assert (caught.value.file, caught.value.line) == (str(folder / "workload.jsonl"), 1)


def test_a_key_given_twice_or_a_nan_is_refused_not_silently_resolved(tmp_path):
    """json.loads keeps the last of two equal keys: a reader of the file would see one solution
    and the harness run another. Refused by file (and line, in a workload), as NaN is."""
    text = (SOLUTIONS / "vector_add_torch" / "solution.json").read_text()
    doc = json.loads(text)
    shown = json.dumps(doc)
    path = tmp_path / "solution.json"
    path.write_text(shown[:-1] + ', "author": "someone else"}')
    with pytest.raises(FormatError, match="duplicate key 'author'") as caught:
        load_solution(path)
    assert caught.value.file == str(path)
    folder = tmp_path / "p"
    shutil.copytree(PROBLEMS / "vector_add", folder)
    lines = (folder / "workload.jsonl").read_text().splitlines()
    lines.insert(1, '{"uuid": "x-nan", "axes": {"n": NaN}}')
    (folder / "workload.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(FormatError, match="NaN is not JSON") as caught:
        load_problem(folder)
    assert (caught.value.file, caught.value.line) == (str(folder / "workload.jsonl"), 2)


@pytest.mark.parametrize("name", ["definition.json", "workload.jsonl"])
def test_problem_files_that_are_not_utf8_are_refused_by_file(tmp_path, name):
    folder = tmp_path / "p"
    shutil.copytree(PROBLEMS / "vector_add", folder)
    (folder / name).write_bytes((folder / name).read_bytes().replace(b'"', b'\xff"', 1))
    with pytest.raises(FormatError, match="not UTF-8 text") as caught:
        load_problem(folder)
    assert caught.value.file == str(folder / name)


@pytest.mark.parametrize("name", ["vector_add", "moe_gather_scatter"])
def test_any_hostile_value_in_a_problem_or_solution_is_read_or_refused_by_file(tmp_path, name):
    """Seeded property: a hostile value at a random place of the definition, a workload line or the
    solution; reading them into records (what eval and trace imports do) either works or raises a
    FormatError naming one of the files, never anything else."""
    rng = random.Random(f"{SEED}-{name}")
    print(f"hostile problem seed: {SEED} (set KERNELINDEX_TEST_SEED to repeat)")
    for attempt in range(60):
        folder, solution = tmp_path / f"{attempt}" / "p", tmp_path / f"{attempt}" / "solution.json"
        shutil.copytree(PROBLEMS / name, folder)
        shutil.copy(SOLUTIONS / f"{name}_torch" / "solution.json", solution)
        for source in (SOLUTIONS / f"{name}_torch").glob("*.py"):
            shutil.copy(source, solution.parent)
        target = rng.choice([folder / "definition.json", folder / "workload.jsonl", solution])
        what = hostile_edit_file(target, rng)
        where = f"{what} (seed {SEED})"
        try:
            trace_links(folder, solution)
        except FormatError as exc:
            assert exc.file in (str(folder / "definition.json"), str(folder / "workload.jsonl"), str(solution)), where
            assert exc.reason, where
        except Exception as exc:  # noqa: BLE001 - what the property is about
            pytest.fail(f"{where}: {exc!r}")
