"""Inputs depend only on (case uuid, purpose, index): not on order, other cases or solution draws."""

from __future__ import annotations

import secrets

import torch
from harness_testkit import problem

from kernelindex.formats.workload import InputSpec, WorkloadCase, parse_case
from kernelindex.harness.inputs import load_reference, make_inputs, seed_for


def _same(a: dict, b: dict) -> bool:
    return all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)


def test_inputs_are_reproducible_and_independent_of_global_rng():
    p = problem("moe_gather_scatter")
    case = p.cases[0]
    torch.manual_seed(1)
    first = make_inputs(p.definition, case, "round", 3, "cpu", p.root)
    torch.rand(1000)  # a solution drawing random numbers shifts nothing
    make_inputs(p.definition, p.cases[1], "round", 0, "cpu", p.root)  # nor does another case before it
    again = make_inputs(p.definition, case, "round", 3, "cpu", p.root)
    assert _same(first, again)
    other_round = make_inputs(p.definition, case, "round", 4, "cpu", p.root)
    assert not torch.equal(first["hidden_states"], other_round["hidden_states"])
    timed = make_inputs(p.definition, case, "timed", 3, "cpu", p.root)
    assert not torch.equal(first["hidden_states"], timed["hidden_states"])
    assert seed_for(case.uuid, "round", 3) != seed_for(p.cases[1].uuid, "round", 3)


def test_custom_inputs_come_from_the_definition_entry_point():
    p = problem("moe_gather_scatter")
    case = p.cases[0]
    inputs = make_inputs(p.definition, case, "round", 0, "cpu", p.root, load_reference(p.definition))
    idx = inputs["token_indices"]
    assert idx.shape == (12,) and torch.equal(idx, idx.unique(sorted=True)) and int(idx.max()) < 40
    assert inputs["expert_ids"].max() < 4 and inputs["routing_weights"].shape == (12, 1)
    assert inputs["bias"].shape == () and inputs["alpha"] == 0.5 and isinstance(inputs["alpha"], float)
    assert [n for n in inputs] == list(p.definition.inputs)


def test_random_conventions_make_valid_tensors():
    p = problem("vector_add")
    d = p.definition
    from dataclasses import replace

    from kernelindex.formats.definition import TensorSpec

    specs = {
        "token_idx": TensorSpec("token_idx", ("n",), "int32"),
        "attn_mask": TensorSpec("attn_mask", ("n",), "bool"),
        "router_probs": TensorSpec("router_probs", ("4", "n"), "float32"),
        "w1_weight": TensorSpec("w1_weight", ("n", "n"), "bfloat16"),
        "q8": TensorSpec("q8", ("n",), "float8_e4m3fn"),
    }
    definition = replace(d, inputs=specs)
    case = WorkloadCase("c", {"n": 64}, {k: InputSpec("random") for k in specs}, d and p.cases[0].tolerance)
    inputs = make_inputs(definition, case, "round", 0, "cpu", p.root)
    assert (
        inputs["token_idx"].dtype == torch.int32
        and 0 <= int(inputs["token_idx"].min())
        and int(inputs["token_idx"].max()) < 64
    )
    assert inputs["attn_mask"].dtype == torch.bool and 0 < int(inputs["attn_mask"].sum()) < 64
    assert torch.allclose(inputs["router_probs"].sum(-1), torch.ones(4))
    assert abs(float(inputs["w1_weight"].float().std()) - 1 / 8) < 0.03  # fan-in 64 → std 1/8
    assert inputs["q8"].dtype == torch.float8_e4m3fn


def test_scalar_given_for_a_tensor_input_is_a_constant_tensor():
    p = problem("vector_add")
    raw = {"uuid": "s", "axes": {"n": 5}, "inputs": {"x": {"type": "scalar", "value": 2.5}, "y": {"type": "random"}}}
    case = parse_case(raw, p.definition, p.root / "workload.jsonl", 1)
    inputs = make_inputs(p.definition, case, "round", 0, "cpu", p.root)
    assert torch.equal(inputs["x"], torch.full((5,), 2.5))


def test_safetensors_inputs_are_read_from_the_problem_folder(tmp_path):
    from safetensors.torch import save_file

    p = problem("vector_add")
    data = torch.arange(6, dtype=torch.float32)
    save_file({"xs": data}, str(tmp_path / "data.safetensors"))
    raw = {
        "uuid": "s",
        "axes": {"n": 6},
        "inputs": {"x": {"type": "safetensors", "path": "data.safetensors", "tensor_key": "xs"}},
    }
    case = parse_case(raw, p.definition, tmp_path / "workload.jsonl", 1)
    inputs = make_inputs(p.definition, case, "round", 0, "cpu", tmp_path)
    assert torch.equal(inputs["x"], data) and inputs["y"].shape == (6,)


def test_custom_scalars_come_from_the_generator_seeded_per_call_as_upstream_calls_it():
    """Every input custom (SOL-ExecBench's rule), two Python scalars among them with a null value in the
    workload: the generator gets a torch.device, Python's random is seeded per call and left as it was."""
    import random

    p = problem("custom_scalar")
    case = p.cases[0]
    reference = load_reference(p.definition)
    random.seed(secrets.randbits(32))
    state = random.getstate()
    first = make_inputs(p.definition, case, "round", 0, "cpu", p.root, reference, nonce="n")
    assert random.getstate() == state  # the caller's generator is untouched
    assert isinstance(first["scale"], float) and 0.5 <= first["scale"] <= 2.0
    assert isinstance(first["shift"], int) and 1 <= first["shift"] <= 9 and first["x"].shape == (64,)
    assert _same(first, make_inputs(p.definition, case, "round", 0, "cpu", p.root, reference, nonce="n"))
    draws = {
        make_inputs(p.definition, case, "round", i, "cpu", p.root, reference, nonce="n")["scale"] for i in range(4)
    }
    assert len(draws) == 4  # each call its own seed
