"""Our solution for 042 (MoE load-balancing loss, backward).

out = grad_expert_mask + (grad_tokens_per_expert + c), c = grad_load_balance_loss / (S*K) when training
(the spec's E * (1/E) factor is exactly 1 for E = 256). One streaming pass: c is formed on the device
from the two scalars (no host sync, no clone); each program keeps the [E] row vector in registers and
walks row tiles of the mask in a grid-stride loop over a grid sized to the machine. topk_idx,
expert_mask and tokens_per_expert do not affect the result and are never read (only topk_idx's shape).
Self-contained (torch and triton only) so that the harness can stage this file alone.
"""

import functools

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs without Triton use the PyTorch path
    triton = None

PROGRAMS_PER_SM = 8
BLOCK_ROWS = 16
# FMA contraction, as our checks and timings were made with it: Triton 3.9 defaults to it when unasked and
# 3.10 will not, so the launch asks.
FP_FUSION = True

if triton is not None:

    @triton.jit
    def load_balance_bwd_kernel(
        gm_ptr, gtpe_ptr, glb_ptr, train_ptr, out_ptr, n_rows, inv_sk, E: tl.constexpr, BLOCK_ROWS: tl.constexpr
    ):
        cols = tl.arange(0, E)
        c = tl.load(glb_ptr).to(tl.float32) * inv_sk
        c = tl.where(tl.load(train_ptr) != 0, c, 0.0)
        v = tl.load(gtpe_ptr + cols).to(tl.float32) + c
        n_tiles = tl.cdiv(n_rows, BLOCK_ROWS)
        rows0 = tl.arange(0, BLOCK_ROWS)
        for tile in range(tl.program_id(0), n_tiles, tl.num_programs(0)):
            rows = tile * BLOCK_ROWS + rows0
            offs = rows.to(tl.int64)[:, None] * E + cols[None, :]
            mask = (rows < n_rows)[:, None]
            x = tl.load(gm_ptr + offs, mask=mask, eviction_policy="evict_first")
            tl.store(out_ptr + offs, x + v[None, :], mask=mask, eviction_policy="evict_first")


@functools.cache
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def forward_triton(
    grad_tokens_per_expert, grad_expert_mask, grad_load_balance_loss, top_k, training, out, max_programs=None
):
    """Launch the streaming kernel; max_programs caps the grid (the interpreter uses a few)."""
    n_rows, experts = grad_expert_mask.shape
    n_tiles = triton.cdiv(n_rows, BLOCK_ROWS)
    if max_programs is None:
        max_programs = _sm_count(grad_expert_mask.device.index or 0) * PROGRAMS_PER_SM
    grid = (max(1, min(n_tiles, max_programs)),)
    load_balance_bwd_kernel[grid](
        grad_expert_mask,
        grad_tokens_per_expert,
        grad_load_balance_loss,
        training.view(torch.uint8),
        out,
        n_rows,
        1.0 / (n_rows * top_k),
        E=experts,
        BLOCK_ROWS=BLOCK_ROWS,
        num_warps=4,
        enable_fp_fusion=FP_FUSION,
    )
    return out


def forward_torch(grad_tokens_per_expert, grad_expert_mask, grad_load_balance_loss, top_k, training, out):
    """The same arithmetic in PyTorch on the tensors' own device, without host syncs."""
    n_rows = grad_expert_mask.shape[0]
    loss_grad = grad_load_balance_loss.to(torch.float32) * training  # zero unless training
    v = torch.add(grad_tokens_per_expert.to(torch.float32), loss_grad, alpha=1.0 / (n_rows * top_k))
    torch.add(grad_expert_mask, v, out=out)
    return out


def run(
    grad_tokens_per_expert,
    grad_expert_mask,
    grad_load_balance_loss,
    topk_idx,
    expert_mask,
    tokens_per_expert,
    training,
    grad_expert_mask_out,
):
    """Destination-passing entry point: Triton on a GPU, PyTorch elsewhere."""
    top_k = topk_idx.shape[1]
    args = (grad_tokens_per_expert, grad_expert_mask, grad_load_balance_loss, top_k, training, grad_expert_mask_out)
    if grad_expert_mask.is_cuda and triton is not None:
        return forward_triton(*args)
    return forward_torch(*args)
