"""Random inputs as each upstream benchmark draws them: SOL-ExecBench shapes an input by its name
(a variance positive, a decay negative, attention weights a softmax, a norm weight ones), FlashInfer-
Bench draws by dtype alone; a SOL-ExecBench reference that needs those shapes passes against itself."""

from __future__ import annotations

import secrets

import torch
from harness_testkit import problem, quick, write_solution

from kernelindex.harness.inputs import make_inputs
from kernelindex.harness.runner import evaluate

NAME = "sol_named_inputs"  # our fixture: its reference takes rsqrt(x_var) and log(-A)


def _inputs(style: str) -> dict:
    p = problem(NAME)
    return make_inputs(p.definition, p.cases[0], "round", 0, "cpu", p.root, nonce=secrets.token_hex(8), style=style)


def test_sol_execbench_draws_named_inputs_as_it_does():
    assert problem(NAME).format == "sol_execbench"
    made = _inputs("sol_execbench")
    assert bool((made["x_var"] >= 0.1).all())
    assert bool((made["A"] < 0).all()) and bool((made["A"] >= -1.0).all())
    assert torch.equal(made["norm_weight"], torch.ones(8))
    assert torch.allclose(made["attn_weights"].sum(dim=-1), torch.ones(64))
    assert 0.1 < float(made["qkv_weight"].std() * 8**0.5) < 2.0  # scaled by 1/sqrt(fan-in) = 1/sqrt(8)
    assert int(made["counts"].abs().max()) > 64 and int(made["counts"].abs().max()) <= 1024  # ±1024, as upstream
    assert bool((made["x"] < 0).any())  # a name it knows nothing of stays a normal draw


def test_flashinfer_bench_and_our_packs_draw_by_dtype():
    for style in ("flashinfer_bench", "kernelindex"):
        made = _inputs(style)
        # A has 4 elements: one draw is all negative once in 16, eight draws all of them once in 2**32
        drawn = torch.cat([_inputs(style)["A"] for _ in range(8)])
        assert bool((made["x_var"] < 0).any()) and bool((drawn > 0).any()), style
        assert not torch.equal(made["norm_weight"], torch.ones(8)), style
    assert int(_inputs("flashinfer_bench")["counts"].abs().max()) > 64  # upstream's ±1024 integers
    assert int(_inputs("kernelindex")["counts"].abs().max()) <= 64  # ours


def test_a_reference_needing_upstreams_named_inputs_passes_against_itself(tmp_path):
    p = problem(NAME)
    reference = write_solution(tmp_path / "reference", p.definition.reference, definition=p.definition.name, dps=False)
    suite = evaluate(p, reference, quick(rounds=2, warmup=1, iterations=2, pairs=1))
    assert [case.status for case in suite.cases] == ["PASSED"], [case.log for case in suite.cases]


def test_a_custom_inputs_function_gets_the_axes_the_definition_does_not_declare(tmp_path):
    """SOL-ExecBench hands its generator every axis a workload gives (problem 126 reads an undeclared
    `is_joint_block` there); no shape uses such an axis, and its reference passes against itself."""
    import json

    from kernelindex.formats.problem import load_problem

    flag = secrets.randbelow(5) + 2
    reference = (
        "import torch\n\ndef make(axes, device):\n"
        "    return {'x': torch.full((axes['n'],), float(axes['flag']), device=device)}\n\n"
        "def run(x):\n    return x * 2\n"
    )
    definition = {
        "name": "undeclared_axis",
        "axes": {"n": {"type": "var"}},
        "custom_inputs_entrypoint": "make",
        "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
        "reference": reference,
    }
    case = {"uuid": "u-1", "axes": {"n": 5, "flag": flag}, "inputs": {"x": {"type": "custom"}}}
    folder = tmp_path / "problem"
    folder.mkdir()
    (folder / "definition.json").write_text(json.dumps(definition))
    (folder / "workload.jsonl").write_text(json.dumps(case) + "\n")
    p = load_problem(folder)
    assert any("'flag'" in w for w in p.warnings)
    made = make_inputs(p.definition, p.cases[0], "round", 0, "cpu", p.root, nonce="n", style="sol_execbench")
    assert torch.equal(made["x"], torch.full((5,), float(flag)))
    code = "import torch\n\ndef run(x):\n    return x * 2\n"
    suite = evaluate(p, write_solution(tmp_path / "s", code, definition="undeclared_axis", dps=False), quick())
    assert suite.cases[0].passed, suite.cases[0].log
