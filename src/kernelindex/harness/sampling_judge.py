"""FlashInfer-Bench's rule for its sampling definitions (op_type "sampling"), restated for the parent.

A sampler's output is a draw, so no element-wise rule can judge it; FlashInfer-Bench's
SamplingEvaluator (0.1.2's defaults, BenchmarkConfig) judges one input set thus:

1. the support: every token, unless the definition's name says ``top_k_top_p``, ``top_k`` or
   ``top_p`` (in that order; min-p and plain sampling keep every token). top-k keeps each row's
   tokens of probability at least its k-th largest (ties kept) where 0 < k < vocab; top-p keeps,
   from the probabilities sorted in descending order, those whose running sum is at most p + 0.05
   (the first always) where 0 < p < 1; top-k-top-p keeps what both keep, each from the unmasked
   row. Other k and p keep the whole row.
2. 100 calls on that input set: every sample must lie in [0, vocab) and in its row's support
   (sample i belongs to row i mod batch).
3. 500,000 samples a row: the input's every tensor of rank ≥ 1 tiled along its first axis
   10000 // batch times, and ceil(500000 / that) calls on the tiled inputs; a row's frequencies are
   its counts over (calls × tiles), against the row's probabilities masked by the support and
   renormalised. The worst row's total variation distance (half the L1 distance) must not pass 0.2.

The parent does all of it from the inputs it made and the samples it reads from its own arena after
the solution's process is frozen (`runner._CaseRun._sampling`); every other checked call (the rounds,
the timed batches) gets step 2's check on its own inputs. Three deviations, all stricter: a sample
outside [0, vocab) during step 3 fails the case (upstream indexes its counter with it: past the end a
crash, a negative one counted as a token from the end), a distance that is NaN fails, and a
solution's write into its tiled inputs reaches no later call (each call gets them afresh). Upstream divides by zero at no rows and
past 10,000; such a case is refused (`Unjudgeable`), as is a definition upstream's code cannot read (no 2-D
``probs``, a missing ``top_k`` / ``top_p`` tensor, an input not tiled along the batch axis).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from kernelindex.formats.definition import Definition
from kernelindex.formats.workload import WorkloadCase
from kernelindex.harness.compare import OutputCheck


class Unjudgeable(RuntimeError):
    """A problem its benchmark's own code could not judge: refused before any process starts, rather
    than given a verdict its benchmark would not give."""


@dataclass(frozen=True)
class SamplingRule:
    """FlashInfer-Bench's SamplingEvaluator parameters (its BenchmarkConfig defaults), all in the protocol."""

    method: str  # top_k_top_p | top_k | top_p | none: which support, from the definition's name
    batch_axis: str  # the axis the tiled inputs grow along
    validation_calls: int = 100
    samples_per_row: int = 500_000
    tiled_rows: int = 10_000
    tvd_threshold: float = 0.2
    nucleus_slack: float = 5e-2

    name = "flashinfer_bench_sampling_tvd"

    def describe(self, rounds: int) -> str:
        """The protocol's words for it (its digest is part of the comparison key, so are these figures)."""
        return (
            f"FlashInfer-Bench's SamplingEvaluator, restated: support by {self.method} (top-p slack "
            f"{self.nucleus_slack:g}); {self.validation_calls} calls on one round's inputs and every call of "
            f"{rounds} rounds and the timed batches must sample inside it; {self.samples_per_row} samples a row "
            f"from inputs tiled to {self.tiled_rows} rows; fails past a worst-row total variation distance of "
            f"{self.tvd_threshold:g} from the masked, renormalised probabilities; reference run in its own sandbox"
        )

    def tiling(self, rows: int) -> tuple[int, int]:
        """(tiles, calls) for a batch of ``rows``: upstream's repeat count and trial count."""
        tiles = self.tiled_rows // rows
        return tiles, -(-self.samples_per_row // tiles)

    def tiled_case(self, case: WorkloadCase, definition: Definition) -> WorkloadCase:
        """The case with its batch axis tiled: the shapes of step 3's calls."""
        rows = definition.resolve_axes(case.axes)[self.batch_axis]
        return replace(case, axes={**case.axes, self.batch_axis: rows * self.tiling(rows)[0]})

    def support(self, inputs: dict):
        """Each row's allowed tokens (bool [batch, vocab]), from the call's pristine inputs."""
        import torch

        probs = inputs["probs"]
        mask = torch.ones(probs.shape, dtype=torch.bool, device=probs.device)
        vocab = probs.shape[-1]
        if self.method in ("top_k", "top_k_top_p"):
            for row, k in enumerate(_per_row(inputs["top_k"], len(probs), int)):
                if 0 < k < vocab:
                    ordered, _ = torch.sort(probs[row], descending=True)
                    mask[row] = probs[row] >= ordered[k - 1]
        if self.method in ("top_p", "top_k_top_p"):
            for row, p in enumerate(_per_row(inputs["top_p"], len(probs), float)):
                if 0 < p < 1:
                    ordered, order = torch.sort(probs[row], descending=True)
                    nucleus = torch.cumsum(ordered, dim=0) <= p + self.nucleus_slack
                    nucleus[0] = True  # upstream keeps the first when none is within p (and it always is otherwise)
                    kept = torch.zeros(vocab, dtype=torch.bool, device=probs.device)
                    kept[order[nucleus]] = True
                    mask[row] &= kept
        return mask

    def check_draw(self, name: str, samples, mask) -> OutputCheck:
        """Step 2 on one call: every sample a token of its row's support."""
        import torch

        flat = samples.reshape(-1).to(torch.int64)
        vocab = mask.shape[-1]
        outside = (flat < 0) | (flat >= vocab)
        if bool(outside.any()):
            return OutputCheck(
                name,
                "INCORRECT_NUMERICAL",
                matched_ratio=_ratio(~outside),
                reason=f"samples {flat[outside][:8].tolist()} out of the vocabulary [0, {vocab})",
            )
        rows = torch.arange(flat.numel(), device=flat.device) % mask.shape[0]
        inside = mask[rows, flat]
        if bool(inside.all()):
            return OutputCheck(name, "PASSED")
        first = int((~inside).nonzero()[0])
        return OutputCheck(
            name,
            "INCORRECT_NUMERICAL",
            matched_ratio=_ratio(inside),
            reason=f"sample {int(flat[first])} is outside row {int(rows[first])}'s {self.method} support "
            f"({int((~inside).sum())} of {flat.numel()} samples are)",
        )

    def judge_counts(self, name: str, counts, per_row: int, probs, mask) -> OutputCheck:
        """Step 3's verdict from the counts ([batch, vocab], ``per_row`` samples each row). The errors
        reported are upstream's too (|frequency − expected|, and over |expected| + 1e-8); only the
        distance decides."""
        import torch

        masked = probs * mask.float()
        expected = masked / masked.sum(dim=-1, keepdim=True)
        frequencies = counts.float() / per_row
        error = (frequencies.to(torch.float32) - expected.to(torch.float32)).abs()
        tvds = [0.5 * float(torch.sum(torch.abs(frequencies[i] - expected[i]))) for i in range(len(counts))]
        worst = max(range(len(tvds)), key=lambda i: tvds[i])
        relative = error / (expected.to(torch.float32).abs() + 1e-8)
        check = OutputCheck(
            name,
            "PASSED",
            _finite(float(error.max())),
            _finite(float(relative.max())),
            reason=f"worst row {worst}: total variation distance {tvds[worst]:.4f} over {per_row} samples a row "
            f"(at most {self.tvd_threshold:g})",
        )
        if not tvds[worst] <= self.tvd_threshold:  # a NaN (a row of zeros) fails here; upstream's `>` passes it
            check.status = "INCORRECT_NUMERICAL"
        return check

    def tally(self, counts, samples) -> str:
        """Step 3's counts plus one call's samples (sample i to row i mod batch); what is wrong, if anything."""
        import torch

        flat = samples.reshape(-1).to(torch.int64)
        rows, vocab = counts.shape
        outside = (flat < 0) | (flat >= vocab)
        if bool(outside.any()):
            return f"samples {flat[outside][:8].tolist()} out of the vocabulary [0, {vocab}) in the tiled calls"
        where = (torch.arange(flat.numel(), device=flat.device) % rows) * vocab + flat
        counts += torch.bincount(where, minlength=rows * vocab).view(rows, vocab)
        return ""


def _per_row(values, rows: int, kind):
    """A 0-d tensor's value for every row, else each row's own, as upstream reads them."""
    if values.dim() == 0:
        return [kind(values.item())] * rows
    return [kind(v) for v in values.reshape(-1)[:rows].tolist()]


def _ratio(flags) -> float:
    return float(flags.float().mean()) if flags.numel() else 1.0


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 1e308


def thresholding(name: str) -> str:
    """Upstream's support from the definition's name alone."""
    lowered = name.lower()
    return next((m for m in ("top_k_top_p", "top_k", "top_p") if m in lowered), "none")


def rule_for(problem_format: str, definition: Definition, cases: list[WorkloadCase]) -> SamplingRule | None:
    """The sampling rule that judges this problem (None: its format's per-output comparator does);
    Unjudgeable where FlashInfer-Bench's own evaluator could not run it."""
    if problem_format != "flashinfer_bench" or definition.op_type != "sampling":
        return None
    refuse = f"{definition.name}: FlashInfer-Bench's sampling evaluator"
    probs = definition.inputs.get("probs")
    if probs is None or probs.shape is None or len(probs.shape) != 2:
        raise Unjudgeable(f"{refuse} reads a 2-D input named 'probs', which this definition lacks")
    batch = probs.shape[0]
    if batch not in definition.axes or definition.axes[batch].type != "var":
        raise Unjudgeable(f"{refuse} tiles the batch along probs' first axis; {batch!r} is no var axis here")
    rule = SamplingRule(thresholding(definition.name), batch)
    for name in {"top_k": ("top_k",), "top_p": ("top_p",), "top_k_top_p": ("top_k", "top_p"), "none": ()}[rule.method]:
        spec = definition.inputs.get(name)
        if spec is None or spec.is_scalar:
            raise Unjudgeable(f"{refuse} reads a tensor input {name!r} for {rule.method} sampling; there is none")
    for name, spec in definition.inputs.items():
        if spec.shape and spec.shape[0] != batch:
            raise Unjudgeable(f"{refuse} tiles every input along its first axis; {name!r} does not start at {batch!r}")
    for case in cases:
        if not 1 <= definition.resolve_axes(case.axes)[batch] <= rule.tiled_rows:
            raise Unjudgeable(
                f"{refuse} cannot judge case {case.uuid}: no rows, or more than {rule.tiled_rows} "
                "(it divides by zero there)"
            )
    return rule


def tile_into(views: dict, inputs: dict, tiles: int) -> None:
    """Upstream's tiled inputs written straight into the call's slot: each tensor of rank ≥ 1 repeated
    ``tiles`` times along its first axis (0-d ones as they are), without a tiled copy in between."""
    for name, view in views.items():
        source = inputs[name]
        if source.dim() == 0:
            view.copy_(source)
        else:
            view.view(tiles, *source.shape).copy_(source.unsqueeze(0).expand(tiles, *source.shape))
