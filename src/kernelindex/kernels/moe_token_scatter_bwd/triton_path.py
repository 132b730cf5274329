"""GPU pipeline for 009 (expert token scatter, backward): four Triton kernels, six launches.

bf16 operands are too coarse for gg = geo·W2 and for the two weight gradients over selected_tokens (the
spec's steps 5, 7, 9). For gg, geo is split into bf16 hi + lo parts, both multiplied by the same W2 tile
(about 16 mantissa bits, W2 read once). For the three weight gradients, geo, g_up, g_w1o, gated and
selected_tokens are fp16 (11 mantissa bits, 8x finer than bf16, same tensor-core rate; the values of
these problems lie far inside fp16's range, where bf16 inputs convert exactly). No f32 copy of a weight
is ever made, no process-wide switch is touched, and accumulation is f32 throughout.

1. gather: per routed row, g = grad_output[idx], the routing-weight gradient (row sum, scattered),
   geo = g * w as bf16 hi/lo and as fp16, and selected_tokens as fp16.
2. grad_w2 = geoᵀ · gated (fp16, f32 accumulate, bf16 straight into the output).
3. gg = geo_hi·W2 + geo_lo·W2 with the gating and silu-derivative epilogue, writing [g_up | g_w1o]
   twice: bf16 (for step 5) and fp16 (for step 4).
4. grad_w3 = g_upᵀ · X and grad_w1 = g_w1oᵀ · X (same kernel as step 2).
5. s1 + s3 as ONE product [g_up | g_w1o] · [W3; W1] (K = 2F, f32 accumulate) whose epilogue scatters
   the rows straight into grad_hidden_states.
When the tensors are not on a GPU (Triton's interpreter in the tests) the products run on f32-cast
operands, since the interpreter cannot multiply bf16.
"""

import torch
import triton
import triton.language as tl

# FMA contraction, as our checks and timings were made with it: Triton 3.9 defaults to it when unasked and
# 3.10 will not, so every launch asks.
FP_FUSION = True


@triton.jit
def gather_rows_kernel(
    go_ptr,
    idx_ptr,
    x_ptr,
    eo_ptr,
    sw_ptr,
    grw_ptr,
    geo_hi_ptr,
    geo_lo_ptr,
    geo16_ptr,
    x16_ptr,
    H,
    BLOCK_H: tl.constexpr,
):
    row = tl.program_id(0)
    dst = tl.load(idx_ptr + row)
    w = tl.load(sw_ptr + row).to(tl.float32)
    acc = tl.zeros([BLOCK_H], dtype=tl.float32)
    for h0 in range(0, H, BLOCK_H):
        h = h0 + tl.arange(0, BLOCK_H)
        m = h < H
        g = tl.load(go_ptr + dst * H + h, mask=m, other=0.0).to(tl.float32)
        e = tl.load(eo_ptr + row * H + h, mask=m, other=0.0).to(tl.float32)
        acc += g * e
        geo = g * w
        hi = geo.to(geo_hi_ptr.dtype.element_ty)
        lo = (geo - hi.to(tl.float32)).to(geo_lo_ptr.dtype.element_ty)
        tl.store(geo_hi_ptr + row * H + h, hi, mask=m)
        tl.store(geo_lo_ptr + row * H + h, lo, mask=m)
        tl.store(geo16_ptr + row * H + h, geo.to(geo16_ptr.dtype.element_ty), mask=m)
        x = tl.load(x_ptr + row * H + h, mask=m).to(tl.float32)
        tl.store(x16_ptr + row * H + h, x.to(x16_ptr.dtype.element_ty), mask=m)
    tl.store(grw_ptr + dst, tl.sum(acc, axis=0).to(grw_ptr.dtype.element_ty))


@triton.jit
def gate_grad_kernel(
    a_hi_ptr,
    a_lo_ptr,
    w2_ptr,
    w1o_ptr,
    gate_ptr,
    up_ptr,
    ub_ptr,
    u16_ptr,
    n_tok,
    H,
    F,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    DOT_F32: tl.constexpr,
):
    """gg = geo·W2 from hi/lo parts; epilogue: g_up = gg*gate, g_w1o = gg*up*silu'(w1o) into [g_up | g_w1o]
    as bf16 (ub) and fp16 (u16), both [N, 2F]."""
    num_m = tl.cdiv(n_tok, BM)
    pid = tl.program_id(0)
    pid_m = pid % num_m  # all row tiles of one W2 column block run together: W2 leaves HBM once
    pid_n = pid // num_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    m_ok = rm < n_tok
    n_ok = rn < F
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, H, BK):
        k = k0 + rk
        a_off = rm.to(tl.int64)[:, None] * H + k[None, :]
        a_mask = m_ok[:, None] & (k < H)[None, :]
        a_hi = tl.load(a_hi_ptr + a_off, mask=a_mask, other=0.0)
        a_lo = tl.load(a_lo_ptr + a_off, mask=a_mask, other=0.0)
        b = tl.load(
            w2_ptr + k.to(tl.int64)[:, None] * F + rn[None, :], mask=(k < H)[:, None] & n_ok[None, :], other=0.0
        )
        if DOT_F32:
            b = b.to(tl.float32)
            acc = tl.dot(a_hi.to(tl.float32), b, acc, input_precision="ieee")
            acc = tl.dot(a_lo.to(tl.float32), b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a_hi, b, acc)
            acc = tl.dot(a_lo, b, acc)
    mask = m_ok[:, None] & n_ok[None, :]
    off = rm.to(tl.int64)[:, None] * F + rn[None, :]
    w1o = tl.load(w1o_ptr + off, mask=mask, other=0.0).to(tl.float32)
    gate = tl.load(gate_ptr + off, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(up_ptr + off, mask=mask, other=0.0).to(tl.float32)
    sig = tl.sigmoid(w1o)
    g_up = acc * gate
    g_w1o = acc * up * sig * (1.0 + w1o * (1.0 - sig))
    row = rm.to(tl.int64)[:, None] * (2 * F) + rn[None, :]
    tl.store(ub_ptr + row, g_up.to(ub_ptr.dtype.element_ty), mask=mask)
    tl.store(ub_ptr + row + F, g_w1o.to(ub_ptr.dtype.element_ty), mask=mask)
    tl.store(u16_ptr + row, g_up.to(u16_ptr.dtype.element_ty), mask=mask)
    tl.store(u16_ptr + row + F, g_w1o.to(u16_ptr.dtype.element_ty), mask=mask)


@triton.jit
def weight_grad_kernel(
    a_ptr,
    b_ptr,
    out_ptr,
    K,
    M,
    N,
    a_stride,
    col0,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    A_ONCE: tl.constexpr,
    DOT_F32: tl.constexpr,
):
    """out [M, N] = A[:, col0 : col0 + M]ᵀ · B over K rows; A (row stride a_stride) and B [K, N] fp16,
    f32 accumulate. A_ONCE orders the grid so the larger operand streams from HBM once while the other
    stays in L2."""
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    pid = tl.program_id(0)
    if A_ONCE:
        pid_n = pid % num_n
        pid_m = pid // num_n
    else:
        pid_m = pid % num_m
        pid_n = pid // num_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    m_ok = rm < M
    n_ok = rn < N
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + rk
        k_ok = k < K
        a = tl.load(
            a_ptr + k.to(tl.int64)[:, None] * a_stride + col0 + rm[None, :],
            mask=k_ok[:, None] & m_ok[None, :],
            other=0.0,
        )
        b = tl.load(b_ptr + k.to(tl.int64)[:, None] * N + rn[None, :], mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        if DOT_F32:
            acc = tl.dot(tl.trans(a.to(tl.float32)), b.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(tl.trans(a), b, acc)
    tl.store(
        out_ptr + rm.to(tl.int64)[:, None] * N + rn[None, :],
        acc.to(out_ptr.dtype.element_ty),
        mask=m_ok[:, None] & n_ok[None, :],
    )


@triton.jit
def _accumulate_product(acc, a_rows, w_ptr, m_ok, rn, n_ok, H, F, BK: tl.constexpr, DOT_F32: tl.constexpr):
    """acc += A[:, :F] · W over K = F, A given as per-row base pointers, W [F, H] row-major."""
    rk = tl.arange(0, BK)
    for k0 in range(0, F, BK):
        k = k0 + rk
        a = tl.load(a_rows + k[None, :], mask=m_ok[:, None] & (k < F)[None, :], other=0.0)
        b = tl.load(w_ptr + k.to(tl.int64)[:, None] * H + rn[None, :], mask=(k < F)[:, None] & n_ok[None, :], other=0.0)
        if DOT_F32:
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def row_grad_scatter_kernel(
    u_ptr,
    w3_ptr,
    w1_ptr,
    idx_ptr,
    out_ptr,
    n_tok,
    H,
    F,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    DOT_F32: tl.constexpr,
):
    """grad_hidden_states[idx] = [g_up | g_w1o] · [W3; W1] (K = 2F, bf16), rows scattered in the epilogue."""
    num_m = tl.cdiv(n_tok, BM)
    pid = tl.program_id(0)
    pid_m = pid % num_m
    pid_n = pid // num_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    m_ok = rm < n_tok
    n_ok = rn < H
    a_rows = u_ptr + rm.to(tl.int64)[:, None] * (2 * F)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    acc = _accumulate_product(acc, a_rows, w3_ptr, m_ok, rn, n_ok, H, F, BK, DOT_F32)
    acc = _accumulate_product(acc, a_rows + F, w1_ptr, m_ok, rn, n_ok, H, F, BK, DOT_F32)
    dst = tl.load(idx_ptr + rm, mask=m_ok, other=0)
    tl.store(
        out_ptr + dst.to(tl.int64)[:, None] * H + rn[None, :],
        acc.to(out_ptr.dtype.element_ty),
        mask=m_ok[:, None] & n_ok[None, :],
    )


def _launch_params(n_tok, on_gpu):
    """Tile sizes per kernel: enough programs to fill the GPU when N is small, bigger tiles when it is not."""
    if not on_gpu:
        tiny = {"BM": 16, "BN": 16, "BK": 16}
        return tiny, tiny, tiny
    if n_tok <= 64:
        gate, rows = (
            dict(BM=64, BN=64, BK=64, num_warps=4, num_stages=4),
            dict(BM=64, BN=32, BK=64, num_warps=4, num_stages=4),
        )
    elif n_tok <= 256:
        gate, rows = (
            dict(BM=64, BN=64, BK=64, num_warps=4, num_stages=4),
            dict(BM=64, BN=64, BK=64, num_warps=4, num_stages=4),
        )
    else:
        gate = rows = dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    return gate, rows, dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3)


def forward(
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
    n_tok = token_indices.shape[0]
    hidden = grad_output.shape[1]
    ffn = w1_weight.shape[0]
    dev, bf16, f16 = grad_output.device, torch.bfloat16, torch.float16
    on_gpu = grad_output.is_cuda
    gate, rows, wgrad = _launch_params(n_tok, on_gpu)
    dot_f32 = not on_gpu

    geo_hi = torch.empty(n_tok, hidden, device=dev, dtype=bf16)
    geo_lo = torch.empty_like(geo_hi)
    geo16 = torch.empty(n_tok, hidden, device=dev, dtype=f16)
    x16 = torch.empty(n_tok, hidden, device=dev, dtype=f16)
    grad_routing_weights.zero_()
    gather_rows_kernel[(n_tok,)](
        grad_output,
        token_indices,
        selected_tokens,
        expert_output,
        selected_weights,
        grad_routing_weights,
        geo_hi,
        geo_lo,
        geo16,
        x16,
        hidden,
        BLOCK_H=1024 if on_gpu else 64,
        enable_fp_fusion=FP_FUSION,
    )

    # grad_w2 [H, F] = geoᵀ · gated: geo is the small operand (kept in L2), gated streams once
    grid = (triton.cdiv(hidden, wgrad["BM"]) * triton.cdiv(ffn, wgrad["BN"]),)
    weight_grad_kernel[grid](
        geo16,
        gated_output.to(f16),
        grad_w2_weight,
        n_tok,
        hidden,
        ffn,
        hidden,
        0,
        A_ONCE=False,
        DOT_F32=dot_f32,
        enable_fp_fusion=FP_FUSION,
        **wgrad,
    )
    del geo16

    ub = torch.empty(n_tok, 2 * ffn, device=dev, dtype=bf16)
    u16 = torch.empty(n_tok, 2 * ffn, device=dev, dtype=f16)
    grid = (triton.cdiv(n_tok, gate["BM"]) * triton.cdiv(ffn, gate["BN"]),)
    gate_grad_kernel[grid](
        geo_hi,
        geo_lo,
        w2_weight,
        w1_output,
        gate_output,
        up_output,
        ub,
        u16,
        n_tok,
        hidden,
        ffn,
        DOT_F32=dot_f32,
        enable_fp_fusion=FP_FUSION,
        **gate,
    )
    del geo_hi, geo_lo

    # grad_w3 / grad_w1 [F, H] = g_upᵀ · X / g_w1oᵀ · X: X stays in L2, the g columns stream once
    grid = (triton.cdiv(ffn, wgrad["BM"]) * triton.cdiv(hidden, wgrad["BN"]),)
    for col0, out in ((0, grad_w3_weight), (ffn, grad_w1_weight)):
        weight_grad_kernel[grid](
            u16,
            x16,
            out,
            n_tok,
            ffn,
            hidden,
            2 * ffn,
            col0,
            A_ONCE=True,
            DOT_F32=dot_f32,
            enable_fp_fusion=FP_FUSION,
            **wgrad,
        )
    del u16, x16

    grad_hidden_states.zero_()
    grid = (triton.cdiv(n_tok, rows["BM"]) * triton.cdiv(hidden, rows["BN"]),)
    row_grad_scatter_kernel[grid](
        ub,
        w3_weight,
        w1_weight,
        token_indices,
        grad_hidden_states,
        n_tok,
        hidden,
        ffn,
        DOT_F32=dot_f32,
        enable_fp_fusion=FP_FUSION,
        **rows,
    )
    return grad_hidden_states, grad_routing_weights, grad_w1_weight, grad_w2_weight, grad_w3_weight
