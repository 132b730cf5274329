"""FlashInfer-Bench's sampling rule (harness/sampling_judge.py) through the whole harness, and against upstream.

The fixture `fib_sampling` is a FlashInfer-Bench top-k-top-p definition of our own; each test writes its
top_k / top_p (the workload's safetensors) afresh from a random draw, and its probs are random by the nonce.
"""

from __future__ import annotations

import json
import random
import shutil

import pytest
import torch
from harness_testkit import PROBLEMS, QUICK, quick, write_solution

from kernelindex.formats.definition import Definition, TensorSpec
from kernelindex.formats.problem import load_problem
from kernelindex.harness import records
from kernelindex.harness.runner import evaluate
from kernelindex.harness.sampling_judge import SamplingRule, Unjudgeable, rule_for, thresholding, tile_into

VOCAB = 48
ROWS = 4
DEFINITION = "top_k_top_p_sampling_from_probs_v48"


def _problem(tmp_path, ks: list[int], ps: list[float]):
    """The fixture with these top_k / top_p: restrictive enough that the support is a few tokens a row."""
    from safetensors.torch import save_file

    folder = tmp_path / "fib_sampling"
    shutil.copytree(PROBLEMS / "fib_sampling", folder)
    top_k, top_p = torch.tensor(ks, dtype=torch.int32), torch.tensor(ps, dtype=torch.float32)
    save_file({"top_k": top_k, "top_p": top_p}, str(folder / "params.safetensors"))
    return load_problem(folder)


def _draw() -> tuple[list[int], list[float]]:
    """Fresh each run: 4 to 12 tokens kept by top-k, a nucleus of 0.6 to 0.9."""
    rng = random.Random()
    return [rng.randint(4, 12) for _ in range(ROWS)], [round(rng.uniform(0.6, 0.9), 3) for _ in range(ROWS)]


# Samplers as solutions (value-returning, as the reference): each wrong in one way FlashInfer-Bench catches.
IGNORES_TOP_K = """import torch

def run(probs, top_k, top_p):
    ordered, order = torch.sort(probs, dim=-1, descending=True)
    keep = torch.cumsum(ordered, dim=-1) <= top_p.unsqueeze(1)
    keep[:, 0] = True
    kept = torch.zeros_like(probs).scatter(1, order, torch.where(keep, ordered, torch.zeros_like(ordered)))
    return torch.multinomial(kept, 1).squeeze(1)
"""
ARGMAX = "import torch\n\ndef run(probs, top_k, top_p):\n    return probs.argmax(dim=-1)\n"
UNIFORM = (
    "import torch\n\ndef run(probs, top_k, top_p):\n"
    "    return torch.randint(0, probs.shape[-1], (probs.shape[0],), dtype=torch.int64)\n"
)
OUT_OF_VOCABULARY = (
    "import torch\n\ndef run(probs, top_k, top_p):\n    return torch.full((probs.shape[0],), probs.shape[-1])\n"
)
# right on the batch it is validated on, the argmax where the batch is tiled (a sampler that knows the check)
TILED_ARGMAX = """import torch

def run(probs, top_k, top_p):
    if probs.shape[0] > 64:
        return probs.argmax(dim=-1)
    return reference(probs, top_k, top_p)
"""


# right for the rounds, the 100 validation calls, the 200 tiled calls of 4 rows and the warm-up; from the
# first timed call on, anything in the vocabulary
WRONG_LATER = f"""import torch

calls = 0

def run(probs, top_k, top_p):
    global calls
    calls += 1
    if calls > {QUICK["rounds"] + 100 + 200 + QUICK["warmup"]}:
        return torch.randint(0, probs.shape[-1], (probs.shape[0],), dtype=torch.int64)
    return reference(probs, top_k, top_p)
"""
# the reference writing its draw into the output it is handed
DESTINATION = "\n\ndef run(probs, top_k, top_p, samples):\n    samples.copy_(reference(probs, top_k, top_p))\n"


def _reference_solution(tmp_path, problem, code: str | None = None, name: str = "s"):
    body = code if code is not None else problem.definition.reference
    if code in (TILED_ARGMAX, WRONG_LATER, DESTINATION):
        body = problem.definition.reference.replace("def run(", "def reference(") + "\n\n" + code
    return write_solution(tmp_path / name, body, definition=DEFINITION, dps=code == DESTINATION)


def test_the_reference_passes_and_the_protocol_names_the_rule_and_its_parameters(tmp_path):
    problem = _problem(tmp_path, *_draw())
    assert problem.format == "flashinfer_bench"
    suite = evaluate(problem, _reference_solution(tmp_path, problem), quick())
    case = suite.cases[0]
    assert case.status == "PASSED", case.log
    rule = rule_for("flashinfer_bench", problem.definition, problem.cases)
    assert rule is not None and rule.method == "top_k_top_p"
    tiles, calls = rule.tiling(ROWS)
    assert (tiles, calls) == (2500, 200)  # upstream's 10000 // 4 and ceil(500000 / 2500)
    assert case.checked_calls.count(f"sampling-tiled-{calls}x{tiles}") == 1
    assert sum(t.startswith("sampling-") for t in case.checked_calls) == 100 + 1
    assert "total variation distance" in case.outputs[0].reason
    correctness = records.evaluation_records(suite).protocol["spec"]["correctness"]
    assert correctness["comparator"] == "flashinfer_bench_sampling_tvd"
    assert "500000 samples a row" in correctness["reference"] and "10000 rows" in correctness["reference"]


def test_a_destination_passing_sampler_is_judged_alike(tmp_path):
    problem = _problem(tmp_path, *_draw())
    case = evaluate(problem, _reference_solution(tmp_path, problem, DESTINATION), quick()).cases[0]
    assert case.status == "PASSED", case.log


def test_every_timed_call_is_checked_against_its_own_support(tmp_path):
    problem = _problem(tmp_path, *_draw())
    case = evaluate(problem, _reference_solution(tmp_path, problem, WRONG_LATER), quick()).cases[0]
    assert case.status == "INCORRECT_NUMERICAL", case.log
    assert case.log.startswith("timed-") and "outside row" in case.log, case.log


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (IGNORES_TOP_K, "outside row"),
        (UNIFORM, "outside row"),
        (OUT_OF_VOCABULARY, "out of the vocabulary"),
        (ARGMAX, "total variation distance"),
        (TILED_ARGMAX, "total variation distance"),
    ],
    ids=["ignores_top_k", "uniform", "out_of_vocabulary", "argmax", "argmax_when_tiled"],
)
def test_a_wrong_sampler_fails(tmp_path, code, said):
    problem = _problem(tmp_path, *_draw())
    case = evaluate(problem, _reference_solution(tmp_path, problem, code), quick()).cases[0]
    assert case.status == "INCORRECT_NUMERICAL", case.log
    assert said in case.log, case.log


def _upstream():
    """FlashInfer-Bench's own sampling evaluator, where it is installed."""
    return pytest.importorskip(
        "flashinfer_bench.bench.evaluators.sampling",
        reason="flashinfer-bench is not installed: no upstream to agree with",
    )


def _fib_definition(name: str):
    from flashinfer_bench.data import AxisConst, AxisVar
    from flashinfer_bench.data import Definition as FibDefinition
    from flashinfer_bench.data import TensorSpec as FibSpec

    return FibDefinition(
        name=name,
        op_type="sampling",
        axes={"batch_size": AxisVar(), "vocab_size": AxisConst(value=VOCAB)},
        inputs={
            "probs": FibSpec(shape=["batch_size", "vocab_size"], dtype="float32"),
            "top_k": FibSpec(shape=["batch_size"], dtype="int32"),
            "top_p": FibSpec(shape=["batch_size"], dtype="float32"),
        },
        outputs={"samples": FibSpec(shape=["batch_size"], dtype="int64")},
        reference="def run(probs, top_k, top_p):\n    pass\n",
    )


def _ours(name: str) -> Definition:
    specs = {
        "probs": TensorSpec("probs", ("batch_size", "vocab_size"), "float32"),
        "top_k": TensorSpec("top_k", ("batch_size",), "int32"),
        "top_p": TensorSpec("top_p", ("batch_size",), "float32"),
    }
    from kernelindex.formats.definition import Axis

    axes = {"batch_size": Axis("batch_size", "var"), "vocab_size": Axis("vocab_size", "const", VOCAB)}
    samples = {"samples": TensorSpec("samples", ("batch_size",), "int64")}
    return Definition(name, axes, specs, samples, "def run(probs, top_k, top_p):\n    pass\n", op_type="sampling")


def _inputs(gen: torch.Generator) -> dict:
    """Fresh probs, and top_k / top_p with upstream's edges in them (k ≤ 0 or ≥ vocab, p ≤ 0 or ≥ 1: all kept)."""
    probs = torch.softmax(torch.randn(ROWS, VOCAB, generator=gen) * 2, dim=-1)
    ks = [int(k) for k in torch.randint(1, VOCAB, (ROWS,), generator=gen)]
    ps = [float(p) for p in torch.rand(ROWS, generator=gen) * 0.9 + 0.05]
    ks[int(torch.randint(0, ROWS, (), generator=gen))] = [0, -3, VOCAB, VOCAB + 5][
        int(torch.randint(0, 4, (), generator=gen))
    ]
    ps[int(torch.randint(0, ROWS, (), generator=gen))] = [0.0, -0.5, 1.0, 1.5][
        int(torch.randint(0, 4, (), generator=gen))
    ]
    return {"probs": probs, "top_k": torch.tensor(ks, dtype=torch.int32), "top_p": torch.tensor(ps)}


@pytest.mark.parametrize(
    "name", ["top_k_top_p_sampling_from_probs", "top_k_sampling_from_probs", "top_p_sampling", "min_p_sampling"]
)
def test_the_support_is_upstreams_mask(name):
    upstream = _upstream()
    gen = torch.Generator().manual_seed(random.getrandbits(63))
    rule = rule_for("flashinfer_bench", _ours(name), [])
    assert rule is not None and rule.method == thresholding(name) == upstream._detect_thresholding_method(
        _fib_definition(name)
    )
    for _ in range(20):
        inputs = _inputs(gen)
        params = {k: v for k, v in inputs.items() if k != "probs"}
        theirs = upstream._compute_valid_sampling_mask(inputs["probs"], rule.method, params)
        assert torch.equal(rule.support(inputs), theirs)


class _Sampler:
    """A sampler upstream's evaluator calls as a value-returning runnable; ours gets the same draws, call
    by call, from a generator seeded alike."""

    def __init__(self, kind: str, seed: int):
        self.kind, self.gen = kind, torch.Generator().manual_seed(seed)
        self.metadata = type("Metadata", (), {"destination_passing_style": False})()

    def __call__(self, probs, top_k, top_p):
        if self.kind == "argmax":
            return probs.argmax(dim=-1)
        weights = probs
        if self.kind == "masked":  # the support itself, renormalised: FlashInfer-Bench's expectation
            weights = probs * SamplingRule("top_k_top_p", "batch_size").support(
                {"probs": probs, "top_k": top_k, "top_p": top_p}
            )
        drawn = torch.multinomial(weights, 1, generator=self.gen).squeeze(1)
        return drawn + VOCAB if self.kind == "shifted" else drawn


def _our_verdict(rule: SamplingRule, sampler: _Sampler, inputs: dict) -> tuple[str, float | None]:
    """The harness's steps (runner._CaseRun._sampling) on one input set: the support, the validation calls,
    the tiled calls' counts, the distance."""
    support = rule.support(inputs)
    for _ in range(rule.validation_calls):
        check = rule.check_draw("samples", sampler(**inputs), support)
        if check.status != "PASSED":
            return check.status, None
    tiles, calls = rule.tiling(ROWS)
    tiled = {name: torch.empty((ROWS * tiles, *t.shape[1:]), dtype=t.dtype) for name, t in inputs.items()}
    counts = torch.zeros(support.shape, dtype=torch.int64)
    for _ in range(calls):
        tile_into(tiled, inputs, tiles)
        assert not rule.tally(counts, sampler(**tiled))
    judged = rule.judge_counts("samples", counts, calls * tiles, inputs["probs"], support)
    return judged.status, float(judged.reason.split("distance ")[1].split()[0])


@pytest.mark.parametrize("kind", ["masked", "unmasked", "argmax", "shifted"])
def test_upstreams_evaluator_and_ours_judge_the_same_draws_alike(kind, monkeypatch, tmp_path):
    """The same sampler, seeded alike, through FlashInfer-Bench's SamplingEvaluator.check_correctness and through
    our steps: the same verdict and the same worst distance. Upstream counts its samples one `.item()` at a
    time (minutes for 500,000 a row on a CPU), so both run at 20,000 samples a row here."""
    upstream = _upstream()
    from flashinfer_bench.bench.config import BenchmarkConfig

    samples = 20_000
    counted = upstream._sample_token_distributions
    monkeypatch.setattr(
        upstream, "_sample_token_distributions", lambda *a, **k: counted(*a, **{**k, "num_trials": samples})
    )
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)  # a CPU run: nothing to wait for
    name = "top_k_top_p_sampling_from_probs"
    gen = torch.Generator().manual_seed(random.getrandbits(63))
    inputs = _inputs(gen)
    ordered = [inputs["probs"], inputs["top_k"], inputs["top_p"]]
    fib = _fib_definition(name)
    support = upstream._compute_valid_sampling_mask(
        inputs["probs"], "top_k_top_p", {k: inputs[k] for k in ("top_k", "top_p")}
    )
    masked = inputs["probs"] * support.float()
    expected = masked / masked.sum(dim=-1, keepdim=True)
    seed = random.getrandbits(63)
    correctness, evaluation = upstream.SamplingEvaluator.check_correctness(
        fib, _Sampler(kind, seed), [ordered], [[expected]], BenchmarkConfig(), str(tmp_path / "log"), "cpu"
    )
    theirs = "PASSED" if evaluation is None else evaluation.status.value
    rule = SamplingRule(thresholding(name), "batch_size", samples_per_row=samples)
    ours, distance = _our_verdict(rule, _Sampler(kind, seed), inputs)
    assert ours == theirs
    if distance is not None:
        assert distance == pytest.approx(correctness.extra["tvd"], abs=5e-5)  # our reason prints it to 4 places
    if kind != "argmax":  # the argmax passes where every row's support is nearly one token: both say so
        assert (ours == "PASSED") == (kind == "masked")


def _definition_file(tmp_path, **changes) -> Definition:
    folder = tmp_path / "changed"
    shutil.copytree(PROBLEMS / "fib_sampling", folder, dirs_exist_ok=True)
    raw = json.loads((folder / "definition.json").read_text())
    for key, value in changes.items():
        if value is None:
            raw["inputs"].pop(key)
        else:
            raw["inputs"][key] = value
    (folder / "definition.json").write_text(json.dumps(raw))
    return load_problem(folder).definition


def test_what_upstreams_evaluator_cannot_read_is_refused_before_anything_runs(tmp_path):
    problem = _problem(tmp_path, *_draw())
    with pytest.raises(Unjudgeable, match="tensor input 'top_p'"):
        rule_for("flashinfer_bench", _definition_file(tmp_path, top_p=None), [])
    with pytest.raises(Unjudgeable, match="2-D input named 'probs'"):
        rule_for(
            "flashinfer_bench", _definition_file(tmp_path, probs={"shape": ["vocab_size"], "dtype": "float32"}), []
        )
    with pytest.raises(Unjudgeable, match="does not start at 'batch_size'"):
        rule_for("flashinfer_bench", _definition_file(tmp_path, top_k={"shape": ["vocab_size"], "dtype": "int32"}), [])
    # upstream's 10000 // rows tiles: a division by zero rows, then by zero tiles
    for rows in (0, random.randint(10_001, 20_000)):
        wide = load_problem(problem.root)
        wide.cases[0].axes["batch_size"] = rows
        with pytest.raises(Unjudgeable, match="no rows, or more than 10000"):
            evaluate(wide, None, quick())  # type: ignore[arg-type]  # refused before the solution is read


def test_the_memory_plan_holds_the_tiled_call_in_the_solutions_arena_only(tmp_path):
    from kernelindex.harness import memory
    from kernelindex.harness.arena import Layout
    from kernelindex.harness.runner import memory_plan

    problem = _problem(tmp_path, *_draw())
    case = problem.cases[0]
    rows = random.randint(1, 8)  # a small batch: 10,000 tiled rows take more than all its slots
    case.axes["batch_size"] = rows
    rule = rule_for(problem.format, problem.definition, problem.cases)
    assert rule is not None
    tiles = rule.tiling(rows)[0]
    tiled = Layout.build(problem.definition, rule.tiled_case(case, problem.definition), 1)
    assert [e.shape[:1] for e in tiled.inputs + tiled.outputs] == [(rows * tiles,)] * 4  # every tensor tiled
    plan = memory_plan(problem, quick(), None)
    assert plan.floors == {case.uuid: tiled.slot_bytes}
    assert plan.arena_bytes(case.uuid) == tiled.slot_bytes > plan.reference_bytes  # the reference never runs it
    children = (memory.PROCESSES - 1) * memory.PROCESS_BYTES  # what the budget leaves the processes yet to start
    tighter = memory_plan(problem, quick(), plan.need(case.uuid) - 1 + children)
    assert tighter.fitted and tighter.arena_bytes(case.uuid) == tiled.slot_bytes  # fewer slots, never a smaller arena
    with pytest.raises(memory.DoesNotFit):
        memory_plan(problem, quick(), tiled.slot_bytes - 1 + children)


def test_samplers_evaluated_together_are_each_judged_on_their_own_draws(tmp_path):
    from kernelindex.harness.runner import evaluate_many

    problem = _problem(tmp_path, *_draw())
    solutions = [_reference_solution(tmp_path, problem, code, name) for name, code in (("a", ARGMAX), ("r", None))]
    suites = evaluate_many(problem, solutions, quick())
    assert [s.cases[0].status for s in suites] == ["INCORRECT_NUMERICAL", "PASSED"], [s.cases[0].log for s in suites]
