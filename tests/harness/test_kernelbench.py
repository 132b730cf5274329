"""KernelBench problem files under the full harness: the reference as ModelNew passes, wrong ones fail."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_testkit import quick
from sqlalchemy import select
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.formats.errors import FormatError
from kernelindex.harness import kernelbench, kernelbench_judge
from kernelindex.harness.records import evaluation_records
from kernelindex.harness.runner import evaluate
from kernelindex.harness.verdict import Verdict
from kernelindex.store import tables as t
from kernelindex.store.database import open_store

KB = Path(__file__).parent / "fixtures" / "kernelbench"
LEVEL1 = KB / "level1" / "3_Scaled_row_sum.py"
LEVEL2 = KB / "level2" / "7_Linear_GELU_Scale.py"


def reference_as_model_new(problem: Path, folder: Path) -> Path:
    """The reference copied as ModelNew, as a KernelBench user would first check the harness."""
    path = folder / "reference_copy.py"
    path.write_text(problem.read_text().replace("class Model(", "class ModelNew("), encoding="utf-8")
    return path


def run(problem: Path, solution: Path, folder: Path, scale: float = 1.0):
    prepared = kernelbench.prepare(problem, solution, folder / "prepared", scale=scale, rounds=kernelbench_judge.TRIALS)
    rule = kernelbench_judge.describe(prepared.precision, kernelbench_judge.TRIALS)
    suite = evaluate(prepared.problem, prepared.solution, quick(rounds=kernelbench_judge.TRIALS, rule=rule))
    return prepared, suite


def test_level1_reference_as_model_new_passes_and_records_the_rule(tmp_path):
    prepared, suite = run(LEVEL1, reference_as_model_new(LEVEL1, tmp_path), tmp_path, scale=0.25)
    assert [c.verdict for c in suite.cases] == [Verdict.PASSED], suite.cases[0].log
    assert prepared.problem.definition.name == "kernelbench-l1-3-scaled-row-sum"
    assert prepared.problem.cases[0].axes == {"batch_size": 16, "dim": 1024}
    protocol = evaluation_records(suite).protocol
    assert protocol["spec"]["correctness"]["comparator"] == "kernelbench_allclose"
    assert "atol=0.0001" in protocol["spec"]["correctness"]["reference"]
    assert "5 correctness trials" in protocol["spec"]["correctness"]["reference"]


def test_level2_parameters_agree_through_the_seed_and_wrong_weights_fail(tmp_path):
    _, fused = run(LEVEL2, KB / "solutions" / "level2_fused.py", tmp_path / "a", scale=0.1)
    assert fused.cases[0].verdict is Verdict.PASSED, fused.cases[0].log
    _, wrong = run(LEVEL2, KB / "solutions" / "level2_wrong_weights.py", tmp_path / "b", scale=0.1)
    assert wrong.cases[0].verdict is Verdict.INCORRECT_NUMERICAL
    assert "round-0" in wrong.cases[0].log


def test_a_scaled_problem_is_another_workload_of_the_same_operation(tmp_path):
    stand_in = reference_as_model_new(LEVEL2, tmp_path)
    small = kernelbench.prepare(LEVEL2, stand_in, tmp_path / "s", scale=0.1, check_memory=False)
    smaller = kernelbench.prepare(LEVEL2, stand_in, tmp_path / "t", scale=0.05, check_memory=False)
    assert small.problem.definition.raw["inputs"] == smaller.problem.definition.raw["inputs"]
    assert small.problem.cases[0].uuid != smaller.problem.cases[0].uuid
    assert small.problem.cases[0].axes["in_features"] == 128 and smaller.problem.cases[0].axes["in_features"] == 64


SCALING = KB / "scaling"


@pytest.mark.parametrize(
    ("problem", "scale", "axes"),
    [
        (
            SCALING / "level2" / "12_Gemm_GroupNorm_Swish.py",
            0.05,
            {"batch_size": 64, "in_features": 512, "out_features": 512, "num_groups": 16},
        ),
        (
            SCALING / "level1" / "13_Conv3d_shallow_depth.py",
            0.05,
            {"batch_size": 8, "in_channels": 3, "out_channels": 8, "depth": 8, "height": 16, "width": 16},
        ),
        (
            SCALING / "level2" / "3_ConvTranspose3d_LayerNorm_tied.py",
            0.2,  # 0.05 and 0.1 make out_channels 8 and the output's width 16: Model fails there
            {"batch_size": 8, "in_channels": 8, "out_channels": 16, "depth": 8, "height": 8, "width": 8},
        ),
    ],
    ids=["group-count-divides-features", "shallow-depth-on-a-shared-line", "sizes-tied-only-by-value"],
)
def test_sizes_that_must_agree_still_agree_scaled_for_a_cpu_smoke_run(tmp_path, problem, scale, axes):
    """Asked for 0.05, upstream's GroupNorm(256, 8192) became 16 groups of 408 features, a depth of 10 became
    1 under a kernel of 3, ``height = width = 256`` sharing a line was never scaled, and a LayerNorm over
    out_channels applied to a width equal to it only at upstream's sizes failed: each now runs and passes,
    the last at the smallest scale where Model runs."""
    prepared, suite = run(problem, reference_as_model_new(problem, tmp_path), tmp_path, scale=0.05)
    assert [c.verdict for c in suite.cases] == [Verdict.PASSED], suite.cases[0].log
    assert prepared.file.scale == pytest.approx(scale)
    assert {name: prepared.problem.cases[0].axes[name] for name in axes} == axes


BROKEN = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm((features + 1,))

    def forward(self, x):
        return self.norm(x)


batch_size = features = 64


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [features]
"""


def test_a_problem_failing_at_every_scale_is_refused_with_its_own_error(tmp_path):
    broken = tmp_path / "level2" / "3_Broken.py"
    broken.parent.mkdir()
    broken.write_text(BROKEN, encoding="utf-8")
    with pytest.raises(kernelbench.ModelFailed, match=r"running Model on the meta device failed: RuntimeError"):
        kernelbench.prepare(broken, reference_as_model_new(broken, tmp_path), tmp_path / "p", scale=0.25)


def test_a_problem_too_large_for_the_machine_is_refused_with_what_it_needs(tmp_path):
    huge = tmp_path / "level1" / "9_Huge_add.py"
    huge.parent.mkdir()
    huge.write_text(LEVEL1.read_text().replace("dim = 2048 * 2", "dim = 1 << 40"), encoding="utf-8")
    with pytest.raises(kernelbench.TooLarge, match=r"needs about .* GiB .* available; try --scale"):
        kernelbench.prepare(huge, reference_as_model_new(huge, tmp_path), tmp_path / "p")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("def get_inputs():\n    return []\n", "defines no class Model"),
        ("class Model:\n    def forward(self, x):\n        return x\n", "no module-level get_inputs"),
        ("class Model(:\n", "not valid Python"),
    ],
)
def test_files_that_are_not_kernelbench_problems_are_refused_by_name(tmp_path, text, reason):
    bad = tmp_path / "1_Bad.py"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError, match=reason) as caught:
        kernelbench.prepare(bad, KB / "solutions" / "level2_fused.py", tmp_path / "p")
    assert str(bad) in str(caught.value)


def test_a_solution_without_model_new_is_refused(tmp_path):
    with pytest.raises(FormatError, match="defines no class ModelNew"):
        kernelbench.prepare(LEVEL1, LEVEL1, tmp_path / "p")


def test_a_level_folder_imports_as_packs_and_a_recorded_smoke_run_joins_its_operation(tmp_path):
    db = str(tmp_path / "kb.db")
    imported = CliRunner().invoke(app, ["import", str(KB / "level1"), "--db", db])
    assert imported.exit_code == 0, imported.output
    again = CliRunner().invoke(app, ["import", str(KB / "level1"), "--db", db])
    assert "0 rows added" in again.output
    copy = reference_as_model_new(LEVEL1, tmp_path)
    quick_flags = ["--iterations", "4", "--pairs", "2", "--warmup", "1"]
    ran = CliRunner().invoke(
        app, ["eval", str(LEVEL1), "-s", str(copy), "--scale", "0.25", *quick_flags, "--record", "--db", db]
    )
    assert ran.exit_code == 0, ran.output
    store = open_store(db)
    try:
        with store.begin() as conn:
            ops = {r.slug: r.id for r in conn.execute(select(t.operations.c.slug, t.operations.c.id))}
            workloads = conn.execute(
                select(t.workloads.c.operation_id).where(
                    t.workloads.c.operation_id == ops["kernelbench-l1-3-scaled-row-sum"]
                )
            ).all()
            protocols = [m for (m,) in conn.execute(select(t.protocols.c.manifest))]
    finally:
        store.close()
    assert set(ops) == {"kernelbench-l1-1-square-matmul-small", "kernelbench-l1-3-scaled-row-sum"}
    assert len(workloads) >= 3  # the pack's case and suite, and the scaled smoke run's case and suite
    assert protocols[0]["spec"]["correctness"]["comparator"] == "kernelbench_allclose"


SCALARS = KB / "scalar_inputs" / "level1" / "12_Power_scale_sum.py"


def test_scalar_inputs_are_passed_by_value_to_both_sides_and_a_solution_ignoring_one_fails(tmp_path):
    """get_inputs() returning ints and floats beside tensors: upstream passes them to forward as they are."""
    prepared, suite = run(SCALARS, reference_as_model_new(SCALARS, tmp_path), tmp_path / "a")
    assert [c.verdict for c in suite.cases] == [Verdict.PASSED], suite.cases[0].log
    inputs = prepared.problem.definition.raw["inputs"]  # forward's names (made unique beside the sizes' axes)
    assert [(spec["shape"], spec["dtype"]) for spec in inputs.values()][1:] == [
        (None, "int64"),
        (None, "float64"),
        (None, "int64"),
    ]
    case = prepared.problem.cases[0]
    assert [(case.inputs[n].type, case.inputs[n].value) for n in inputs] == [
        ("custom", None),
        ("scalar", 3),
        ("scalar", 0.25),
        ("scalar", 1),
    ]
    _, wrong = run(SCALARS, KB / "solutions" / "scalar_inputs_ignored.py", tmp_path / "b")
    assert wrong.cases[0].verdict is Verdict.INCORRECT_NUMERICAL, wrong.cases[0].log


def test_a_scalar_input_is_part_of_the_workloads_identity(tmp_path):
    from kernelindex.formats.records import records_for

    other = tmp_path / "level1" / "12_Power_scale_sum.py"
    other.parent.mkdir()
    other.write_text(SCALARS.read_text().replace("scale = 0.25", "scale = 0.5"), encoding="utf-8")
    cases = []
    for path in (SCALARS, other):
        prepared = kernelbench.prepare(path, reference_as_model_new(path, tmp_path), tmp_path / path.parent.parent.name)
        cases.append((prepared.problem.cases[0], records_for(prepared.problem).cases))
    (first, first_records), (second, second_records) = cases
    assert first.axes == second.axes and first.uuid != second.uuid
    assert first_records[first.uuid]["spec"]["scalars"] != second_records[second.uuid]["spec"]["scalars"]


def test_an_input_that_is_neither_tensor_nor_number_is_refused_by_position(tmp_path):
    bad = tmp_path / "level1" / "12_Power_scale_sum.py"
    bad.parent.mkdir()
    bad.write_text(SCALARS.read_text().replace("exponent, scale, dim]", "exponent, 'sum', dim]"), encoding="utf-8")
    with pytest.raises(FormatError, match=r"get_inputs\(\)\[2\] is a str; only tensors and int, float or bool") as c:
        kernelbench.prepare(bad, reference_as_model_new(bad, tmp_path), tmp_path / "p")
    assert str(bad) in str(c.value)
