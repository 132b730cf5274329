"""Our solution for 009 (expert token scatter with weighted forward, backward).

On a GPU: the Triton pipeline in triton_path.py. Elsewhere: the PyTorch path below, the same
plan with PyTorch products: only the N routed rows of grad_output are gathered; grad_w2 and the row
gradients are bf16 products (f32 accumulation) straight from the bf16 weights; the weight gradients over
selected_tokens use the hi/lo split ([hi; lo]ᵀ · [X; X]) and gg = geo · W2 is the only f32 product (the
one weight upcast), since both need more than bf16 operands; results go straight into the outputs.
"""

import torch

try:
    import triton  # noqa: F401  (only to learn whether the GPU path can exist)
except ImportError:  # CPU-only installs without Triton use the PyTorch path
    triton_path = None
else:
    try:
        from . import triton_path
    except ImportError:  # staged by a harness as plain files in one folder
        import triton_path


def forward_torch(
    grad_output,
    token_indices,
    selected_tokens,
    w1_output,
    gate_output,
    up_output,
    gated_output,
    expert_output,
    selected_weights,
    w1_weight,
    w2_weight,
    w3_weight,
    grad_hidden_states,
    grad_routing_weights,
    grad_w1_weight,
    grad_w2_weight,
    grad_w3_weight,
):
    f32, bf16 = torch.float32, torch.bfloat16
    ffn = w1_weight.shape[0]
    g = grad_output.index_select(0, token_indices).to(f32)
    grad_routing_weights.zero_()
    grad_routing_weights.index_copy_(
        0, token_indices, torch.einsum("nh,nh->n", g, expert_output.to(f32)).to(grad_routing_weights.dtype)
    )
    geo = g.mul_(selected_weights.to(f32)[:, None])
    torch.mm(geo.to(bf16).t(), gated_output, out=grad_w2_weight)
    gg = geo @ w2_weight.to(f32)  # the one f32 product: its operand geo needs more than bf16
    del geo, g

    w1o = w1_output.to(f32)
    sig = torch.sigmoid(w1o)
    silu_grad = sig * (1.0 + w1o * (1.0 - sig))
    del w1o, sig
    grads = torch.empty(gg.shape[0], 2 * ffn, dtype=f32, device=gg.device)  # [g_up | g_w1o]
    torch.mul(gg, gate_output, out=grads[:, :ffn])
    torch.mul(gg.mul_(up_output), silu_grad, out=grads[:, ffn:])
    del gg, silu_grad

    hi = grads.to(bf16)
    split = torch.cat([hi, grads.sub_(hi).to(bf16)])  # [[hi], [lo]]: [2N, 2F]
    del grads
    doubled = torch.cat([selected_tokens, selected_tokens])  # [X; X]: [2N, H]
    torch.mm(split[:, :ffn].t(), doubled, out=grad_w3_weight)
    torch.mm(split[:, ffn:].t(), doubled, out=grad_w1_weight)
    del split, doubled

    rows = (hi[:, :ffn] @ w3_weight).to(f32).add_(hi[:, ffn:] @ w1_weight)
    grad_hidden_states.zero_()
    grad_hidden_states.index_copy_(0, token_indices, rows.to(grad_hidden_states.dtype))
    return grad_hidden_states, grad_routing_weights, grad_w1_weight, grad_w2_weight, grad_w3_weight


def run(
    grad_output,
    token_indices,
    selected_tokens,
    w1_output,
    gate_output,
    up_output,
    gated_output,
    expert_output,
    selected_weights,
    w1_weight,
    w2_weight,
    w3_weight,
    grad_hidden_states,
    grad_routing_weights,
    grad_w1_weight,
    grad_w2_weight,
    grad_w3_weight,
):
    """Destination-passing entry point: the GPU pipeline on CUDA tensors, PyTorch elsewhere."""
    args = (
        grad_output,
        token_indices,
        selected_tokens,
        w1_output,
        gate_output,
        up_output,
        gated_output,
        expert_output,
        selected_weights,
        w1_weight,
        w2_weight,
        w3_weight,
        grad_hidden_states,
        grad_routing_weights,
        grad_w1_weight,
        grad_w2_weight,
        grad_w3_weight,
    )
    if grad_output.is_cuda and triton_path is not None:
        return triton_path.forward(*args)
    return forward_torch(*args)
