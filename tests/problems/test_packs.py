"""The two problem packs: they load under the harness, match the spec's case tables, declare costs that
agree with their own tensor shapes, and their reference agrees with an independent float64 computation."""

from __future__ import annotations

import math

import pytest
import torch

from kernelindex.formats import axes as axis_math
from kernelindex.formats.problem import load_problem
from kernelindex.harness.dtypes import torch_dtype
from kernelindex.harness.inputs import load_reference
from kernelindex.problems import LOAD_BALANCE_BWD, TOKEN_SCATTER_BWD

SEED = torch.seed() % 2**31
print(f"tests/problems seed: {SEED}")


@pytest.fixture(scope="module")
def scatter():
    return load_problem(TOKEN_SCATTER_BWD)


@pytest.fixture(scope="module")
def balance():
    return load_problem(LOAD_BALANCE_BWD)


def _spec_table(text: str, heading: str) -> list[list[str]]:
    section = text.split(heading, 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("####") or line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].isdigit():
            rows.append(cells)
    return rows


def test_packs_match_the_spec_case_tables(shared_dir, scatter, balance):
    text = (shared_dir / "spec" / "problems.md").read_text()
    rows = _spec_table(text, "#### 009")
    assert len(rows) == 16 == len(scatter.cases)
    for (i, uuid, b, n, atol, rtol, t_sol, t_b), case in zip(rows, scatter.cases):
        assert case.uuid == uuid, f"case {i}"
        assert case.axes == {"batch_seq_len": int(b), "num_tokens": int(n)}
        assert (case.tolerance.max_atol, case.tolerance.max_rtol) == (float(atol), float(rtol))
        assert (case.t_sol_ms, case.t_b_ms) == (float(t_sol), float(t_b))
    rows = _spec_table(text, "#### 042")
    assert len(rows) == 16 == len(balance.cases)
    for (i, uuid, s, atol, rtol, t_sol, t_b), case in zip(rows, balance.cases):
        assert case.uuid == uuid and case.axes == {"batch_seq_len": int(s)}, f"case {i}"
        assert (case.tolerance.max_atol, case.tolerance.max_rtol) == (float(atol), float(rtol))
        assert (case.t_sol_ms, case.t_b_ms) == (float(t_sol), float(t_b))


def test_packs_declare_the_upstream_shape_of_the_problem(scatter, balance):
    d = scatter.definition
    assert d.name == "009_expert_token_scatter_with_weighted_forward_backward"
    assert list(d.inputs) == [
        "grad_output",
        "token_indices",
        "selected_tokens",
        "w1_output",
        "gate_output",
        "up_output",
        "gated_output",
        "expert_output",
        "selected_weights",
        "w1_weight",
        "w2_weight",
        "w3_weight",
    ]
    assert list(d.outputs) == [
        "grad_hidden_states",
        "grad_routing_weights",
        "grad_w1_weight",
        "grad_w2_weight",
        "grad_w3_weight",
    ]
    assert (d.axes["hidden_dim"].value, d.axes["ffn_dim"].value) == (4096, 14336)
    d = balance.definition
    assert d.name == "042_moe_expert_load_balancing_and_token_capacity_backward"
    assert list(d.outputs) == ["grad_expert_mask_out"]
    assert (d.axes["n_routed_experts"].value, d.axes["num_experts_per_tok"].value) == (256, 8)
    for problem in (scatter, balance):
        assert len({c.uuid for c in problem.cases}) == 16
        assert all(c.sol_hardware == "NVIDIA B200" for c in problem.cases)
        assert all(spec.type == "custom" for c in problem.cases for spec in c.inputs.values())


def _tensor_bytes(definition, names, axis_values) -> int:
    total = 0
    for name in names:
        spec = {**definition.inputs, **definition.outputs}[name]
        total += math.prod(definition.shape(spec, axis_values)) * torch_dtype(spec.dtype).itemsize
    return total


def test_declared_costs_follow_from_the_tensors(scatter, balance):
    """009 moves every input and output once; 042 skips the three inputs the result does not depend on."""
    d = scatter.definition
    for case in scatter.cases:
        values = d.resolve_axes(case.axes)
        every = [*d.inputs, *d.outputs]
        assert axis_math.evaluate(d.bytes, values) == _tensor_bytes(d, every, values)
        n, h, f = values["num_tokens"], values["hidden_dim"], values["ffn_dim"]
        assert axis_math.evaluate(d.flops, values) == 12 * n * h * f
    d = balance.definition
    for case in balance.cases:
        values = d.resolve_axes(case.axes)
        used = [n for n in [*d.inputs, *d.outputs] if n not in ("topk_idx", "expert_mask", "tokens_per_expert")]
        assert axis_math.evaluate(d.bytes, values) == _tensor_bytes(d, used, values)


def _check_shapes_and_dtypes(definition, inputs, axis_values):
    for name, spec in definition.inputs.items():
        tensor = inputs[name]
        assert tuple(tensor.shape) == definition.shape(spec, axis_values), name
        assert tensor.dtype == torch_dtype(spec.dtype), name


@pytest.mark.parametrize("batch,n_tok", [(40, 12), (16, 16), (300, 215)])
def test_scatter_custom_inputs_keep_their_invariants(scatter, batch, n_tok):
    d = scatter.definition
    values = d.resolve_axes({"batch_seq_len": batch, "num_tokens": n_tok})
    values.update(hidden_dim=32, ffn_dim=48)
    torch.manual_seed(SEED)
    inputs = load_reference(d).make_inputs(values, "cpu")
    _check_shapes_and_dtypes(d, inputs, values)
    idx = inputs["token_indices"]
    assert idx.numel() == min(n_tok, batch)
    assert bool((idx[1:] > idx[:-1]).all()), "indices must be sorted and unique"
    assert 0 <= int(idx.min()) and int(idx.max()) < batch
    w1o = inputs["w1_output"].float()
    assert torch.equal(inputs["gate_output"], torch.nn.functional.silu(w1o).bfloat16())
    assert torch.equal(inputs["gated_output"], inputs["gate_output"] * inputs["up_output"])
    sw = inputs["selected_weights"].float()
    assert bool(((sw >= 0) & (sw <= 1)).all())


@pytest.mark.parametrize("seq", [1, 37, 2371])
def test_balance_custom_inputs_keep_their_invariants(balance, seq):
    d = balance.definition
    values = d.resolve_axes({"batch_seq_len": seq})
    torch.manual_seed(SEED)
    inputs = load_reference(d).make_inputs(values, "cpu")
    _check_shapes_and_dtypes(d, inputs, values)
    topk, mask = inputs["topk_idx"], inputs["expert_mask"]
    assert bool(((topk >= 0) & (topk < 256)).all())
    rebuilt = torch.zeros_like(mask)
    for row in range(seq):
        rebuilt[row, topk[row].unique()] = 1
    assert torch.equal(mask, rebuilt), "mask must be 1 exactly at the routed (row, expert) positions"
    assert inputs["tokens_per_expert"].dtype == torch.int32
    assert torch.equal(inputs["tokens_per_expert"].long(), mask.sum(dim=0))
    assert inputs["training"].tolist() == [True]


def _scatter_f64(inp):
    """The 009 math in float64, token by token: independent of the reference's vectorised form."""
    d = {k: (v.double() if v.is_floating_point() else v) for k, v in inp.items()}
    batch, hidden = d["grad_output"].shape
    ffn = d["w1_weight"].shape[0]
    grad_hidden = torch.zeros(batch, hidden, dtype=torch.float64)
    grad_routing = torch.zeros(batch, dtype=torch.float64)
    grad_w1 = torch.zeros(ffn, hidden, dtype=torch.float64)
    grad_w2 = torch.zeros(hidden, ffn, dtype=torch.float64)
    grad_w3 = torch.zeros(ffn, hidden, dtype=torch.float64)
    for n, b in enumerate(d["token_indices"].tolist()):
        g = d["grad_output"][b]
        grad_routing[b] = torch.dot(g, d["expert_output"][n])
        geo = g * d["selected_weights"][n]
        grad_w2 += torch.outer(geo, d["gated_output"][n])
        gg = d["w2_weight"].t().mv(geo)
        z = d["w1_output"][n]
        silu_grad = torch.sigmoid(z) + z * torch.sigmoid(z) * (1 - torch.sigmoid(z))
        g_w1o = gg * d["up_output"][n] * silu_grad
        g_up = gg * d["gate_output"][n]
        x = d["selected_tokens"][n]
        grad_w1 += torch.outer(g_w1o, x)
        grad_w3 += torch.outer(g_up, x)
        grad_hidden[b] = d["w1_weight"].t().mv(g_w1o) + d["w3_weight"].t().mv(g_up)
    return grad_hidden, grad_routing, grad_w1, grad_w2, grad_w3


def _within_bf16_rounding(out, exact, names):
    """bf16 outputs of an f32 computation: within a couple of bf16 ulps of the exact value."""
    for name, o, e in zip(names, out, exact):
        assert o.dtype == torch.bfloat16, name
        err = (o.double() - e).abs()
        bound = 2**-7 * e.abs() + 1e-4 * e.abs().max()
        assert bool((err <= bound).all()), f"{name}: worst excess {(err - bound).max().item():.3g}"


def test_scatter_reference_matches_float64(scatter):
    d = scatter.definition
    ref = load_reference(d)
    values = {"batch_seq_len": 40, "num_tokens": 24, "hidden_dim": 32, "ffn_dim": 48}
    torch.manual_seed(SEED)
    inputs = ref.make_inputs(values, "cpu")
    out = ref.run(*inputs.values())
    exact = _scatter_f64(inputs)
    _within_bf16_rounding(out, exact, list(d.outputs))
    idx = set(inputs["token_indices"].tolist())
    untouched = [b for b in range(40) if b not in idx]
    assert bool((out[0][untouched] == 0).all()) and bool((out[1][untouched] == 0).all())


@pytest.mark.parametrize("training", [True, False])
def test_balance_reference_matches_float64(balance, training):
    ref = load_reference(balance.definition)
    torch.manual_seed(SEED)
    inputs = ref.make_inputs({"batch_seq_len": 50, "n_routed_experts": 256, "num_experts_per_tok": 8}, "cpu")
    inputs["training"] = torch.tensor([training])
    out = ref.run(*inputs.values())
    c = float(inputs["grad_load_balance_loss"][0]) / (50 * 8) if training else 0.0
    exact = inputs["grad_expert_mask"].double() + (inputs["grad_tokens_per_expert"].double() + c)[None, :]
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.double(), exact, atol=1e-6, rtol=1e-6)
    if training:
        assert not torch.allclose(out, inputs["grad_expert_mask"] + inputs["grad_tokens_per_expert"], atol=1e-7)
