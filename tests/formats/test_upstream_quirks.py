"""Problem folders upstream's own loaders accept (pydantic's defaults: unknown keys ignored, bool
scalars, names as given): we read them too, say what we passed over, and still write valid records.
Each fixture is a small folder of our own reproducing one quirk found in SOL-ExecBench's problems."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelindex.formats.errors import FormatError
from kernelindex.formats.problem import load_problem
from kernelindex.formats.records import record_names, records_for

REFERENCE = "import torch\n\ndef run(x, scale):\n    return x * scale\n"


def _folder(tmp_path: Path, cases: list[dict], **definition) -> Path:
    doc = {
        "name": "scale_rows",
        "op_type": "elementwise",
        "axes": {"n": {"type": "var"}, "d": {"type": "const", "value": 4}},
        "inputs": {"x": {"shape": ["n", "d"], "dtype": "float32"}, "scale": {"shape": None, "dtype": "float32"}},
        "outputs": {"y": {"shape": ["n", "d"], "dtype": "float32"}},
        "reference": REFERENCE,
        **definition,
    }
    folder = tmp_path / "problem"
    folder.mkdir()
    (folder / "definition.json").write_text(json.dumps(doc, indent=2))
    (folder / "workload.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return folder


def _case(**changes) -> dict:
    return {"uuid": "case-1", "axes": {"n": 3}, "inputs": {"scale": {"type": "scalar", "value": 2.0}}, **changes}


def test_a_misspelt_tolerance_key_is_ignored_with_a_warning(tmp_path):
    problem = load_problem(_folder(tmp_path, [_case(tolerance={"max_atol": 1e-3, "required_match_ratio": 0.5})]))
    tolerance = problem.cases[0].tolerance
    assert tolerance.max_atol == 1e-3 and tolerance.required_matched_ratio == 0.99  # the default stays, as upstream
    (warning,) = problem.warnings
    assert "'required_match_ratio'" in warning and "workload.jsonl:1" in warning


def test_a_bool_scalar_is_taken_and_recorded_as_an_integer(tmp_path):
    folder = _folder(
        tmp_path,
        [_case(inputs={"scale": {"type": "scalar", "value": True}})],
        inputs={"x": {"shape": ["n", "d"], "dtype": "float32"}, "scale": {"shape": None, "dtype": "bool"}},
    )
    problem = load_problem(folder)
    assert problem.cases[0].inputs["scale"].value is True
    case = records_for(problem).cases["case-1"]
    assert case["spec"]["scalars"]["scale"] == {"dtype": "bool", "value": 1}


def test_an_undeclared_axis_and_an_extra_input_are_passed_over(tmp_path):
    line = _case(
        axes={"n": 3, "seq_len": 7}, inputs={"scale": {"type": "scalar", "value": 2}, "bias": {"type": "random"}}
    )
    problem = load_problem(_folder(tmp_path, [line]))
    case = problem.cases[0]
    assert case.axes == {"n": 3} and set(case.inputs) == {"x", "scale"}
    assert sorted(w.split(": ", 1)[1].split(" ")[1] for w in problem.warnings) == ["'bias'", "'seq_len'"]
    assert records_for(problem).cases["case-1"]["spec"]["axes"] == {"n": 3, "d": 4}


def test_upper_case_names_stay_in_the_problem_and_are_mapped_in_records(tmp_path):
    folder = _folder(
        tmp_path,
        [{"uuid": "case-1", "axes": {"M": 3}, "inputs": {"scale": {"type": "scalar", "value": 2}}}],
        axes={"M": {"type": "var"}, "m": {"type": "const", "value": 4}},
        inputs={"A_cumsum": {"shape": ["M", "m"], "dtype": "float32"}, "scale": {"shape": None, "dtype": "float32"}},
        outputs={"Y": {"shape": ["M", "m"], "dtype": "float32"}},
        reference="def run(A_cumsum, scale):\n    return A_cumsum * scale\n",
    )
    problem = load_problem(folder)
    assert list(problem.definition.axes) == ["M", "m"] and list(problem.definition.inputs) == ["A_cumsum", "scale"]
    assert record_names(problem.definition) == {
        "M": "m_2",
        "m": "m",
        "A_cumsum": "a_cumsum",
        "scale": "scale",
        "Y": "y",
    }
    made = records_for(problem)
    assert made.operation["spec"]["axes"].keys() == {"m", "m_2"}
    assert made.operation["spec"]["inputs"][0] == {
        "name": "a_cumsum",
        "tensor": {"dtype": "fp32", "shape": ["m_2", "m"]},
    }
    assert made.cases["case-1"]["spec"]["tensors"]["a_cumsum"]["shape"] == [3, 4]
    assert made.suite["spec"]["cases"] == [{"externalId": "case-1", "axes": {"m_2": 3, "m": 4}}]


def test_a_custom_scalar_with_a_null_value_is_left_to_the_generator(tmp_path):
    folder = _folder(
        tmp_path,
        [
            {
                "uuid": "case-1",
                "axes": {"n": 3},
                "inputs": {"x": {"type": "custom"}, "scale": {"type": "custom", "value": None}},
            }
        ],
        custom_inputs_entrypoint="make",
        reference=REFERENCE + "\ndef make(axes, device):\n    return {}\n",
    )
    problem = load_problem(folder)
    assert problem.cases[0].inputs["scale"].type == "custom" and problem.cases[0].inputs["scale"].value is None
    assert "scalars" not in records_for(problem).cases["case-1"]["spec"]


def test_what_upstream_refuses_we_refuse_too(tmp_path):
    """A scalar given no value, or a value that is neither a number nor a bool, fails upstream's ScalarInput."""
    for value in ("2", None, [1]):
        folder = tmp_path / repr(value)
        folder.mkdir()
        with pytest.raises(FormatError) as caught:
            load_problem(_folder(folder, [_case(inputs={"scale": {"type": "scalar", "value": value}})]))
        assert caught.value.field == "inputs.scale.value" and caught.value.line == 1


def test_flashinfer_bench_dataset_lines_without_a_uuid_get_a_stable_one(tmp_path):
    workload = {"axes": {"n": 3}, "inputs": {"scale": {"type": "scalar", "value": 2}}}
    native = {"definition": "scale_rows", "solution": None, "workload": workload, "evaluation": None}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = load_problem(_folder(tmp_path / "a", [native]))
    again = load_problem(_folder(tmp_path / "b", [workload]))
    assert first.cases[0].uuid == again.cases[0].uuid  # the same workload, read either way
    assert len(first.cases[0].uuid) == 36 and first.cases[0].axes == {"n": 3}
    assert first.cases[0].raw == workload  # the workload itself travels to the child and into trace lines


@pytest.mark.parametrize(
    ("tolerance", "field", "words"),
    [
        (None, "tolerance", "must be an object"),  # ToleranceSpec refuses a null tolerance
        ({"max_atol": None}, "tolerance.max_atol", "non-negative number"),  # and a null field
        ({"max_rtol": 10**400}, "tolerance.max_rtol", "a float holds exactly"),  # and a number past float's range
        ({"max_error_cap": -0.5}, "tolerance.max_error_cap", "non-negative number"),  # it would fail every output
        ({"max_error_cap": True}, "tolerance.max_error_cap", "non-negative number"),  # it would read 1.0
    ],
)
def test_a_tolerance_upstream_refuses_or_no_output_passes_is_refused(tmp_path, tolerance, field, words):
    with pytest.raises(FormatError) as raised:
        load_problem(_folder(tmp_path, [_case(tolerance=tolerance)]))
    assert raised.value.field == field and words in str(raised.value), str(raised.value)


def test_a_null_error_cap_is_no_cap_and_integers_stay_as_written(tmp_path):
    problem = load_problem(_folder(tmp_path, [_case(tolerance={"max_atol": 17, "max_error_cap": None})]))
    tolerance = problem.cases[0].tolerance
    assert tolerance.max_error_cap is None and tolerance.max_atol == 17 and isinstance(tolerance.max_atol, int)


@pytest.mark.parametrize(("name", "ratio"), [("scale_rows", 1.0), ("scale_rows_moe_fp8_block_scale", 0.95)])
def test_a_flashinfer_bench_case_states_the_tolerance_it_is_judged_by(tmp_path, name, ratio):
    """Its workloads carry none, so its BenchmarkConfig's (every element; 95% for its low-bit evaluator)
    is each case's, and the WorkloadCase records say so rather than SOL-ExecBench's 0.99."""
    line = {"uuid": "case-1", "axes": {"n": 3}, "inputs": {"scale": {"type": "scalar", "value": 2.0}}}
    problem = load_problem(_folder(tmp_path, [line], name=name, tags=["status:verified"]))
    assert problem.format == "flashinfer_bench"
    assert problem.cases[0].tolerance.required_matched_ratio == ratio
    correctness = records_for(problem).cases["case-1"]["spec"]["correctness"]
    assert (correctness["requiredMatchedRatio"], correctness["maxAbsoluteError"]) == (ratio, 1e-2)
    # the same line with a tolerance is SOL-ExecBench's, judged by its own
    (tmp_path / "sol").mkdir()
    sol = load_problem(_folder(tmp_path / "sol", [{**line, "tolerance": {"required_matched_ratio": 0.9}}], name=name))
    assert sol.format == "sol_execbench" and sol.cases[0].tolerance.required_matched_ratio == 0.9
