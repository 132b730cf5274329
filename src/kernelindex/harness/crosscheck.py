"""The parent's figures for a timed batch, and the child's own figures as a cross-check only.

The published per-call time of a side in a pair is the parent's: the batch's wall time from the
request leaving to the reply arriving, less the cost of an empty batch of as many calls (the
harness's own loop with no kernel in it, run in the reference's sandbox right before and after the
pair, three times each with the quickest kept, the quicker of those two, while the solution is
frozen, so no solution code can inflate it), divided by the calls. Whatever the solution's process
does inside the batch, on any thread, in any order, is inside that span; work it does outside a
batch cannot happen, because its processes are frozen by their cgroup between batches and its inputs
reach its slots only when its batch starts. Nothing is discounted: the two sides run on CPUs of
their own, so a solution that loads its CPU only slows itself.

The child's per-call figures are kept beside them, labelled as the child's. They decide nothing
except that figures which are impossible by the parent's clock (more time than the whole batch,
a count that is not the calls asked for) mark the run as a suspected reward hack: honest harness
code in the child cannot produce them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

GRANULARITY_NS = 1_000  # a clock read per call in the child may round up by this much
NOISE_RATIO = 1.25


@dataclass
class PairTiming:
    calls: int
    # empty batches of as many calls in the reference's process, before and after (each the quickest of runner.PROBES)
    empty_batches_ns: list[int]
    solution_batch_ns: int  # the parent's clock, request out to reply in
    reference_batch_ns: int
    solution_reported: list[int]  # what the solution's process said its calls took: a cross-check only
    reference_reported: list[int]

    @property
    def empty_batch_ns(self) -> int:
        """The quieter of the two empty batches: other load only ever adds time."""
        return min(self.empty_batches_ns)

    @property
    def noisy(self) -> bool:
        return self.disturbance is not None

    @property
    def disturbance(self) -> str | None:
        """How other load disturbed this pair, or None: its two empty batches disagree by more than a
        quarter, or a side's batch took no longer than an empty one. Nothing of the solution runs while the
        empty batches do (it is frozen); what its batch leaves behind on the machine may still slow the one
        after it (measured on a CPU: ~1.5x, benchmarks/RESULTS.md), which only runs the pair again, and a
        pair run again replaces the last whatever its figures, so a solution gains nothing by it."""
        low, high = min(self.empty_batches_ns), max(self.empty_batches_ns)
        if high > NOISE_RATIO * low:
            before, after = (ns / 1e6 for ns in self.empty_batches_ns)
            return f"its empty batches before and after took {before:.3f} and {after:.3f} ms"
        if min(self.solution_batch_ns, self.reference_batch_ns) <= low:
            return "a side's batch took no longer than an empty one"
        return None

    @property
    def solution_ns(self) -> int:
        """Per-call time of the solution in this pair, by the parent's clock; never below 1 ns (a batch no
        longer than an empty one is below what this pair can resolve, and its spread then says so)."""
        return max(1, (self.solution_batch_ns - self.empty_batch_ns) // self.calls)

    @property
    def reference_ns(self) -> int:
        return max(1, (self.reference_batch_ns - self.empty_batch_ns) // self.calls)

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "empty_batch_ns": self.empty_batch_ns,
            "noisy": self.noisy,
            "solution_ns": self.solution_ns,
            "reference_ns": self.reference_ns,
        }


def _impossible(pair: PairTiming) -> str | None:
    samples = pair.solution_reported
    if len(samples) != pair.calls:
        return f"the solution process reported {len(samples)} figures for {pair.calls} calls"
    if any(s < 0 for s in samples):
        return "the solution process reported a negative call time"
    if sum(samples) > pair.solution_batch_ns + GRANULARITY_NS * pair.calls:
        return (
            f"its process's per-call figures add up to {sum(samples)} ns, more than the {pair.solution_batch_ns} ns "
            "the whole batch took by the parent's clock"
        )
    return None


def timing_problem(pairs: list[PairTiming]) -> str | None:
    """Why the solution's process cannot have measured what it reported, or None."""
    for number, pair in enumerate(pairs):
        reason = _impossible(pair)
        if reason:
            return f"timed pair {number}: {reason}"
    return None
