"""Evaluating a solution on a problem: the trusted parent and its two sandboxed children.

The parent (this module) never runs solution code. Per case it cuts two arenas (one for the
solution's sandbox, one for the reference's) into call slots, has the reference process make
each call's inputs from the case, the slot's purpose and index and this evaluation's secret
nonce; the parent keeps a pristine copy and hands a batch's inputs to the solution's slots only
as that batch starts. Both sides run in paired rounds (reference batch, solution batch, then the
other way round) between two empty batches; every published figure is the parent's clock around
a whole batch less the quicker empty batch (`crosscheck.py`). The solution's processes are
frozen through their cgroup whenever they are not running a batch, so nothing of theirs runs
while the reference is timed or while the parent reads outputs. After each batch the parent
compares every call's outputs with the reference's, straight from its own buffers (a FlashInfer-Bench
sampling problem's draws against their inputs' support instead, and after the rounds its many-call
distribution test: `sampling_judge`).
`judgement.decide` turns what the parent saw into the case's verdict.

Several solutions of one problem share one call (`evaluate_many`): one snapshot, one reference
process and one nonce, the reference's checked rounds made once per case; each solution still gets
its own processes, cgroup, scratch and suite result, and its own copy of every input. A case's
solutions take turns on one arena, handed on only once the kernel says the last one's processes are
all gone and wiped to zeros first (`_Session.hand_back`), so none finds anything another left there.

Entry points: `evaluate(problem, solution, EvalOptions, progress=...) -> SuiteResult`,
`evaluate_many(problem, solutions, ...) -> [SuiteResult]`, `write_traces(suite, path)`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import random
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from kernelindex import __version__
from kernelindex.formats import blobs
from kernelindex.formats.problem import Problem
from kernelindex.formats.solution import Solution
from kernelindex.formats.trace import Correctness, Performance, trace_line_object, upstream_status
from kernelindex.formats.workload import WorkloadCase
from kernelindex.harness import memory, replies, sandbox
from kernelindex.harness.arena import Arena, Layout
from kernelindex.harness.blobs import stage
from kernelindex.harness.compare import STRICT, OutputCheck, comparator_for, merge, same_bits
from kernelindex.harness.crosscheck import PairTiming, timing_problem
from kernelindex.harness.environment import read_environment
from kernelindex.harness.isolation import Child, ChildEnded
from kernelindex.harness.judgement import Observations, decide
from kernelindex.harness.sampling_judge import Unjudgeable, rule_for, tile_into
from kernelindex.harness.scores import CaseScore, SuiteScore, case_score, suite_score
from kernelindex.harness.stats import (
    IMPLAUSIBLE_SPEEDUP,
    UNSTABLE_INTERVAL,
    UNSTABLE_SPREAD,
    Interval,
    Summary,
    speedup_interval,
    spread,
    suite_speedup_interval,
    summarize,
)
from kernelindex.harness.timing import PhaseClock
from kernelindex.harness.verdict import Verdict
from kernelindex.records.canonical import DIGEST_PREFIX
from kernelindex.records.refusal import Refusal, RefusalKind
from kernelindex.records.vocabulary import (
    STRICT_RULE_FLAG,
)  # passed by the benchmark's rule, refused by ours: not ranked

HARNESS_NAME = "kernelindex-harness"
HARNESS_VERSION = f"{__version__}+h3"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
# What the harness's own processes (child, zygote, fork server) import after a run starts, so what a
# solution would have to rewrite to change how the next process judges it; the rest of the package is
# never loaded by them, and edits to it (a developer's, another tool's) say nothing about a solution.
HARNESS_FILES = (PACKAGE_DIR / "__init__.py", PACKAGE_DIR / "harness", PACKAGE_DIR / "records", PACKAGE_DIR / "formats")
STARTUP_S = 60.0  # starting a sandboxed Python with torch, on top of the time limit and not charged to it
BATCH_TARGET_MS = 10.0
MAX_BATCH = 256  # calls in one timed batch, at most
MAX_DISAGREEMENTS = 8  # calls a run lists where the two rules disagree
MAX_BATCH_S = 1.0  # and no more calls than keep the slower side's batch this short
NOISY_RETRIES = 2  # a pair disturbed by other load (see PairTiming.noisy) is run again, at most this often
# empty batches run before a pair and after it, the quickest of each kept: a one-off stall of a millisecond or
# more (the scheduler, the kernel's own work) made pairs read as disturbed and run again, where load that lasts
# slows all of them
PROBES = 3
TIMED_BYTES = 256 << 20  # arena bytes the timed slots of one side may take beyond the fewest a batch needs
# empty batches of each size a solution's sizing adds to its case's (`_TimedInputs.overheads`): the quickest
# of 3 moved by a third from one solution to the next (241-355 us for one call of 042), and the batch, and
# so the call's peak memory, with it
SIZING_EMPTIES = 5
# Where a case's calls are slow on this machine (seconds each on a CPU), its protocol outlasts any fixed
# budget: each batch therefore adds to its side's budget its calls at the reference's pace (the quickest
# call per batch the reference has shown in the case, by the parent's clock), twice that for the reference
# and this many times it for a solution. `timeout_s` is then the reserve for a call that hangs or a side
# that slows down. A solution's allowance comes from the reference's process, never its own, so a slow or
# sleeping solution buys itself no time; the first reference batch of a case runs on the reserve alone.
REFERENCE_PACE = 2
SOLUTION_PACE = 10


@dataclass
class EvalOptions:
    device: str = "cpu"
    rounds: int = 10  # correctness calls, every one checked
    warmup: int = 10
    iterations: int = 50  # timed calls of each side at least, in `pairs` paired batches (more when calls are short)
    pairs: int = 10
    # per case, for the solution's processes and the reference's separately, beyond what each batch adds at
    # the reference's pace (REFERENCE_PACE)
    timeout_s: float = 300.0
    memory_limit_mb: int = 16384
    sandbox: str = "auto"  # auto: bubblewrap when it works, else run unsandboxed (recorded as reproducible);
    #                        required: refuse to run without it; off: never (reproducible)
    cases: list[str] | None = None  # uuids (or prefixes) to run; all when None
    batch_target_ms: float = BATCH_TARGET_MS  # a timed batch should take at least this long by the parent's clock
    rule: str = (
        ""  # an upstream judge's rule these cases' tolerances carry (kernelbench_judge.describe), for the protocol
    )
    blob_root: str | None = None  # where safetensors inputs' paths start (blobs.blob_root: else KERNELINDEX_BLOB_ROOT)
    # host memory this evaluation may take, its processes included (a Ray task's grant): the plan fits within
    # it and within what the machine has available; None: the machine's available memory alone
    memory_budget_bytes: int | None = None

    @property
    def timer(self) -> str:
        """What the published figures come from: the parent's clock around each whole batch."""
        return "parent_batch_clock"

    @property
    def pair_count(self) -> int:
        """Paired batches actually run: never more than there are timed calls."""
        return max(1, min(self.pairs, self.iterations))

    @property
    def batch(self) -> int:
        """The fewest calls in one timed batch (where memory gives a case fewer slots: `pairs_for`)."""
        return -(-self.iterations // self.pair_count)

    def pairs_for(self, calls: int) -> int:
        """Paired batches of ``calls`` calls each: `pair_count`, or more where a case's buffers fit fewer slots
        than `batch` (a large case on a small machine), so that every case still gets `iterations` timed calls."""
        return max(self.pair_count, -(-self.iterations // calls))


@dataclass
class CaseResult:
    case: WorkloadCase
    verdict: Verdict
    log: str
    timestamp: str
    outputs: list[OutputCheck] = field(default_factory=list)
    samples_ns: list[int] = field(default_factory=list)
    reference_samples_ns: list[int] = field(default_factory=list)
    pairs: list[PairTiming] = field(default_factory=list)
    checked_calls: list[str] = field(default_factory=list)
    solution_output: str = ""  # what the solution's process said (escaped, capped): its data, never our log
    latency: Summary | None = None
    reference_latency: Summary | None = None
    speedup: Interval | None = None
    flags: list[str] = field(
        default_factory=list
    )  # unstable, below_speed_of_light, implausible_speedup, fails_kernelindex_strict
    score: CaseScore | None = None
    # where our stricter rule (compare.STRICT) judged a checked output otherwise than the benchmark's:
    # the benchmark's verdict stands; these say where and how the two differ
    disagreements: list[str] = field(default_factory=list)
    strict_refused: bool = False  # some checked call passed the benchmark's rule and failed ours
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase of the case (timing.PhaseClock)

    @property
    def status(self) -> str:
        """The upstream trace-line name of the verdict."""
        return upstream_status(self.verdict)

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASSED

    @property
    def ranked(self) -> bool:
        return self.passed and not self.flags


@dataclass
class SuiteResult:
    problem_root: str
    definition_name: str
    solution: Solution
    problem: Problem
    options: EvalOptions
    environment: dict
    cases: list[CaseResult]
    score: SuiteScore
    started_at: str
    finished_at: str
    nonce: str = ""  # the secret mixed into every input; published with the records after the run
    sandboxed: bool = False
    sandbox_note: str = ""  # why the run was not sandboxed (then it is reproducible, not verified)
    speedup: Interval | None = None
    # each safetensors path the run read -> the digest of the copy it read (its snapshot's, hashed once
    # before any process started): what the records name, whatever happens to the original afterwards
    blob_digests: dict[str, str] = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        return len(self.cases) != len(self.problem.cases)

    def trace_lines(self) -> list[dict]:
        """One upstream-format trace line per case (formats.trace writes the shape)."""
        return [
            trace_line_object(
                definition=self.definition_name,
                solution=self.solution.name,
                case=c.case,
                status=c.verdict,
                environment=self.environment,
                timestamp=c.timestamp,
                log=c.log,
                correctness=_correctness(c),
                performance=_performance(c),
            )
            for c in self.cases
        ]


@dataclass
class ProgressEvent:
    """What `evaluate` is doing now, for a progress bar."""

    case_number: int
    cases: int
    uuid: str
    phase: str  # load | rounds | sampling (FlashInfer-Bench's sampling problems) | warmup | timing | done
    done: int  # calls or pairs finished in this phase
    total: int
    eta_s: float | None = None  # estimated seconds left in this case, once a timed pair has run
    result: CaseResult | None = None  # set when phase == "done"
    solution: int = 0  # which of the call's solutions (evaluate_many), from 0
    note: str = ""  # why this step happens again (a timed pair that other load disturbed)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class EnvironmentChanged(Refusal, RuntimeError):
    """Problem or harness files changed during a sandboxed run. The sandbox mounts them read-only, so
    the change came from outside it: no evidence about the solution, and nothing may be recorded."""

    kind = RefusalKind.CONFLICT


def _digests(root: Path) -> dict[str, str]:
    """SHA-256 of a file, or of every file under a folder (bytecode caches aside); {} when absent."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files if "__pycache__" not in p.parts}


def _read_only(root: Path) -> None:
    for path in root.rglob("*"):
        path.chmod(stat.S_IRUSR | (stat.S_IXUSR if path.is_dir() else 0))
    root.chmod(stat.S_IRUSR | stat.S_IXUSR)


def _writable(root: Path) -> None:
    """Make a folder of ours removable again; a solution's scratch may hold links to anywhere, so
    nothing here follows a symbolic link (a link is removed, never its target chmodded)."""
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [".", *dirs, *files]:
            path = os.path.join(folder, name)
            try:
                mode = os.lstat(path).st_mode
                if not stat.S_ISLNK(mode):
                    os.chmod(
                        path, stat.S_IMODE(mode) | stat.S_IWUSR | stat.S_IRUSR | stat.S_IXUSR, follow_symlinks=False
                    )
            except (OSError, NotImplementedError):
                pass


def _cpus() -> dict[str, list[int]]:
    """A CPU of its own for each side where the machine has two to spare (the last two this process
    may use), so neither side's load, nor anything a solution starts, runs on the other's CPU."""
    usable = sorted(os.sched_getaffinity(0))
    if len(usable) < 2:
        return {"solution": usable, "reference": usable}
    return {"solution": [usable[-1]], "reference": [usable[-2]]}


class _Budget:
    """Seconds one side (solution or reference) may spend in a case, counted only while it works."""

    def __init__(self, seconds: float):
        self.left = seconds

    def deadline(self) -> float:
        return time.monotonic() + max(0.0, self.left)

    def spend(self, started: float) -> None:
        self.left -= time.monotonic() - started


def _poison(layout: Layout, arena, slot: int, rng: random.Random) -> None:
    """Outputs start as NaN (floats) or unpredictable bytes: an untouched output cannot pass."""
    import torch

    for out in layout.outs(arena, slot):
        if out.dtype.is_floating_point and out.element_size() > 1:
            out.fill_(float("nan"))
        else:
            raw = out.reshape(-1).view(torch.uint8)
            raw.copy_(
                torch.randint(
                    0, 256, raw.shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(rng.getrandbits(63))
                ).to(raw.device)
            )


def _tiled_bytes(problem: Problem, cases: list[WorkloadCase]) -> dict[str, int]:
    """By case, the bytes of a FlashInfer-Bench sampling case's tiled call (`sampling_judge`), which the
    solution's arena must hold too; none for other problems, nor where the session refuses the problem."""
    try:
        rule = rule_for(problem.format, problem.definition, cases)
    except Unjudgeable:
        return {}
    if rule is None:
        return {}
    return {
        case.uuid: Layout.build(problem.definition, rule.tiled_case(case, problem.definition), 1).slot_bytes
        for case in cases
    }


def case_layouts(problem: Problem, options: EvalOptions, cases: list[WorkloadCase]) -> dict[str, Layout]:
    """Each case's slots with memory to spare: one per checked round, and as many for the timed batches
    (which reuse them once the rounds are checked) as a batch may use: the fewest a batch needs, more (up
    to MAX_BATCH) while they fit in TIMED_BYTES. Unused slots cost nothing: an arena's pages are only
    allocated once written."""
    layouts = {}
    for case in cases:
        one = Layout.build(problem.definition, case, 1).slot_bytes
        timed = max(options.batch, min(MAX_BATCH, TIMED_BYTES // one))
        layouts[case.uuid] = Layout.build(problem.definition, case, max(options.rounds, timed))
    return layouts


@dataclass
class _Rounds:
    """One case's checked rounds as the reference made them, kept in the parent's memory for every
    solution of a call: the pristine inputs (each solution gets its own copy in its own arena, so none
    sees what another did to its inputs) and the scalars that go with them; the reference's outputs on
    exactly those inputs stay in its arena's round slots. Nothing of a solution's process writes to
    either."""

    pristine: dict[int, dict]
    scalars: dict[str, dict]
    in_place: frozenset[str]  # the inputs the reference wrote on them


@dataclass
class _TimedInputs:
    """The current case's timed inputs as the parent holds them. `copies`: per slot the pristine copy, a
    buffer every attempt of every solution of the case writes its inputs into (allocated once, not once a
    candidate); `held`: which call's inputs (index) and scalars each buffer holds now. Each solution's
    first timed attempt takes the indices of the last attempt before it, whose inputs are all held (the
    reference makes none: they are copied back into its slots), every later attempt fresh ones, so no
    solution sees one call's inputs twice, and none gets inputs another could have shaped. They are one
    case's (`case`): the next case starts from none, whether or not its rounds kept slots of their own.
    `overheads`: the quickest empty batches of one call and of a warm-up's calls in the reference's process,
    by the warm-up's calls, over every sizing of the case so far (`_CaseRun._batch_size`): no solution
    shapes them, and a later solution sizes its batch from the loop's floor rather than from its own draw
    (a single eval's one solution from its own, as before)."""

    case: str = ""
    copies: dict[int, dict] = field(default_factory=dict)
    held: dict[int, tuple[int, dict | None]] = field(default_factory=dict)
    last_first: int = 0
    next_index: int = 0
    overheads: dict[int, tuple[int, int]] = field(default_factory=dict)

    def attempt(self, size: int, first_of_solution: bool) -> int:
        """The first call index of an attempt of `size` calls."""
        first = self.last_first if first_of_solution else self.next_index
        self.last_first, self.next_index = first, max(self.next_index, first + size)
        return first


def memory_plan(
    problem: Problem, options: EvalOptions, available: int | None, cases: list[WorkloadCase] | None = None
) -> memory.Plan:
    """The layouts these cases run with: fitted to ``available`` bytes of this machine (None: not checked)
    and to the options' grant, each arena within what a child's memory cap lets it map; on a GPU as wanted
    (its arenas live in its own memory). Raises memory.DoesNotFit with the figures when a case cannot fit."""
    cases = cases if cases is not None else _chosen(problem, options)
    wanted, floors = case_layouts(problem, options, cases), _tiled_bytes(problem, cases)
    if options.device.startswith("cuda"):
        return memory.Plan(wanted, {u: layout.slots for u, layout in wanted.items()}, None, floors)
    # the child's cap holds its interpreter with torch (one PROCESS_BYTES, with room) beside the arena
    cap = (options.memory_limit_mb << 20) - memory.PROCESS_BYTES
    # down to one slot: a case that fits fewer than a batch's calls takes more pairs of fewer (`pairs_for`)
    return memory.fit(wanted, 1, memory.buffer_budget(available, options.memory_budget_bytes), cap, floors)


def _chosen(problem: Problem, options: EvalOptions) -> list[WorkloadCase]:
    return problem.cases if not options.cases else [problem.case(u) for u in options.cases]


def _sandbox_mode(options: EvalOptions) -> tuple[bool, str]:
    """Whether this call's processes run sandboxed and, where not, why: decided once per call, before any
    session is built (sandbox="required" without one raises here)."""
    usable, why = sandbox.available() if options.sandbox != "off" else (False, "sandbox switched off (--sandbox off)")
    if options.sandbox == "required" and not usable:
        raise RuntimeError(f"no sandbox: {why}")
    return usable, why


class _Session:
    """What the solutions of one call share: the problem's read-only snapshot, the reference's process
    and arena, the nonce and the current case's checked rounds (`_Rounds`). A solution's processes and
    scratch are its own, made per case and ended with it; its arena is the case's, wiped between solutions."""

    def __init__(self, problem: Problem, options: EvalOptions, cases: list[WorkloadCase], mode: tuple[bool, str]):
        self.problem, self.options = problem, options
        self.sandboxed, self.sandbox_note = mode
        self.nonce = secrets.token_hex(16)
        self.rng = random.SystemRandom()
        self.comparator = comparator_for(problem.format)
        self.sampling = rule_for(problem.format, problem.definition, cases)  # refused before anything, as are these
        found = blobs.locate_all(cases, problem.root, blobs.blob_root(options.blob_root))
        self.base = Path(tempfile.mkdtemp(prefix="kernelindex-eval-"))
        self.snapshot = self.base / "problem"
        shutil.copytree(problem.root, self.snapshot)
        self.files = stage(found, problem.root, self.snapshot)
        _read_only(self.snapshot)
        self.watched = [problem.root.resolve(), self.snapshot, *HARNESS_FILES]
        self.baseline = {str(r): _digests(r) for r in self.watched}  # taken once, never again
        staged = self.baseline[str(self.snapshot)]
        self.blob_digests = {
            path: DIGEST_PREFIX + staged[str(self.snapshot / file)] for path, file in self.files.items()
        }
        self.memory = options.memory_limit_mb << 20
        try:
            self.plan = memory_plan(problem, options, memory.available_bytes(), cases)
        except memory.DoesNotFit:
            _writable(self.base)
            shutil.rmtree(self.base, ignore_errors=True)
            raise
        self.layouts = self.plan.layouts
        self.reference_arena = Arena(self.plan.reference_bytes, options.device)
        self.reference: Child | None = None
        self.solution_arena: tuple[str, Arena] | None = None  # (case uuid, arena) the case's last solution left
        self.ahead: dict | None = None  # a request sent to the reference (`ask_ahead`) whose reply is unread
        self.cpus = _cpus()
        self.rounds: dict[str, _Rounds] = {}  # the current case's (by uuid), made by its first solution
        self.timed = _TimedInputs()  # the current case's
        self.pace: dict[str, int] = {}  # by case uuid: the reference's quickest call per batch there, ns

    def tampered(self) -> list[str]:
        changes = []
        for root in self.watched:
            now, before = _digests(root), self.baseline[str(root)]
            for path in sorted(set(now) | set(before)):
                if now.get(path) != before.get(path):
                    how = "changed" if path in before and path in now else "added or removed"
                    changes.append(f"problem or harness file {path} was {how}")
        return changes

    def _reference_child(self) -> Child:
        if self.reference is None or self.reference.proc.poll() is not None:
            if self.reference is not None:
                self.reference.close()
            self.ahead = None
            self.reference = Child(
                "reference",
                self.snapshot,
                self.base / "reference.log",
                self.memory,
                self.options.device,
                self.reference_arena,
                self.sandboxed,
                writable=False,
                cpus=self.cpus["reference"],
            )
            root = sandbox.SCRATCH if self.sandboxed else str(self.snapshot)
            budget = _Budget(STARTUP_S + self.options.timeout_s)  # start-up is not charged to a case
            self._ask_reference(
                budget, {"op": "open", "arena": self.reference_arena.handle(), "device": self.options.device}
            )
            self._ask_reference(
                budget,
                {
                    "op": "load",
                    "definition_path": f"{root}/definition.json",
                    "problem_root": root,
                    "blobs": self.files,
                    "format": self.problem.format,
                },
            )
        return self.reference

    def ask_ahead(self, message: dict) -> None:
        """Send the reference a request without waiting: the next `_ask_reference` of the same message takes
        its reply (any other reads it first and drops it), so the reference makes the next attempt's inputs
        while the parent checks the last one's calls, when nothing is timed."""
        assert self.reference is not None and self.ahead is None
        self.reference.send(message)
        self.ahead = message

    def settle(self) -> None:
        """Wait for the reply of a request asked ahead and drop it (a failure in it too: inputs nobody takes),
        so the reference's process is idle before the parent writes into its arena or asks anything else."""
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            with contextlib.suppress(_ReferenceFailed):
                self._answer(_Budget(STARTUP_S + self.options.timeout_s), ahead)

    def _ask_reference(self, budget: _Budget, message: dict) -> replies.Done | replies.InputsDone | replies.BatchDone:
        if self.ahead != message:
            self.settle()
            assert self.reference is not None
            self.reference.send(message)
        self.ahead = None
        return self._answer(budget, message)

    def _answer(self, budget: _Budget, message: dict) -> replies.Done | replies.InputsDone | replies.BatchDone:
        """The reference's reply to `message`, its last request."""
        started = time.monotonic()
        assert self.reference is not None
        try:
            raw = self.reference.receive(budget.deadline(), repr(message["op"]))
        except ChildEnded:
            self.reference.close()
            self.reference = None
            raise
        finally:
            budget.spend(started)
        try:
            reply = replies.parse(raw, message["op"])
        except replies.MalformedReply as exc:
            raise _ReferenceFailed(f"the reference's process sent a malformed reply: {exc}") from None
        if isinstance(reply, replies.Failure):
            raise _ReferenceFailed(replies.untrusted(reply.log, replies.LOG_CHARS))
        return reply

    def run_case(self, number: int, case: WorkloadCase, report: _Reporter, solution: Solution) -> CaseResult:
        started = utc_now()
        run = _CaseRun(self, case, report, solution)
        seen = run.observe()
        with run.clock.phase("checking"):
            seen.tampering = self.tampered()
        if seen.tampering and self.sandboxed:
            raise EnvironmentChanged(
                "problem or harness files changed during the run, outside the sandbox (it mounts them"
                f" read-only): {'; '.join(seen.tampering[:3])}; not evidence about the solution, nothing"
                " recorded: rerun once the files stay put"
            )
        verdict, reason = decide(seen)
        result = CaseResult(case, verdict, reason, started, checked_calls=run.checked, pairs=run.pairs)
        result.outputs = [merge(v) for v in run.checks.values()]
        result.disagreements, result.strict_refused = run.disagreements, run.strict_refused
        result.solution_output = run.said.text()
        result.phases = run.clock.totals()
        if run.pairs:
            result.reference_samples_ns = [p.reference_ns for p in run.pairs]
            result.reference_latency = summarize(result.reference_samples_ns)
        if run.pairs and verdict is Verdict.PASSED:
            result.samples_ns = [p.solution_ns for p in run.pairs]
            result.latency = summarize(result.samples_ns)
            result.speedup = speedup_interval(
                [[p.reference_ns] for p in run.pairs], [[p.solution_ns] for p in run.pairs]
            )
        return result

    def arena_for(self, case: WorkloadCase) -> Arena:
        """The solution side's arena for a case: the one its last solution handed back (`hand_back`), else a
        fresh one. Fresh pages cost the kernel more than the copy into them (~2 us a page here: 0.5 s for
        a 248 MiB batch of 042), so a case's solutions take turns on one arena, wiped between them."""
        kept, self.solution_arena = self.solution_arena, None
        if kept is not None and kept[0] == case.uuid:
            return kept[1]
        if kept is not None:
            kept[1].close()
        return Arena(self.plan.arena_bytes(case.uuid), self.options.device)

    def hand_back(self, uuid: str, arena: Arena, child: Child | None, written: int) -> None:
        """Keep a solution's arena for the case's next solution only where the kernel says none of its
        processes is left (its cgroup empty or gone: nothing of it can map the memory again) and once every
        byte of it is wiped; otherwise end it."""
        if child is not None and child.gone():
            try:
                arena.wipe(written)
                self.solution_arena = (uuid, arena)
                return
            except OSError:
                pass
        arena.close()

    def close(self) -> None:
        if self.reference:
            self.reference.close()
        if self.solution_arena is not None:
            self.solution_arena[1].close()
        self.reference_arena.close()
        _writable(self.base)
        shutil.rmtree(self.base, ignore_errors=True)


def _in_phase(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Charge a _CaseRun method's time to phase `name` of the case's PhaseClock."""

    def wrap(method: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(method)
        def timed(self: _CaseRun, *args) -> None:
            with self.clock.phase(name):
                method(self, *args)

        return timed

    return wrap


class _ReferenceFailed(Exception):
    pass


class _SolutionFailed(Exception):
    pass


class _CaseRun:
    """One case's protocol: load, checked rounds, warm-up, paired timed batches.

    Every figure that is published comes from the parent's clock around a whole batch, less the
    cost of an empty batch of the same size measured next to it (`_empty_batch`). Nothing the
    solution's process measures or says is part of it.
    """

    def __init__(self, session: _Session, case: WorkloadCase, report: _Reporter, solution: Solution):
        self.s, self.case, self.report, self.solution = session, case, report, solution
        self.layout = session.layouts[case.uuid]
        self.seen = Observations()
        self.checks: dict[str, list[OutputCheck]] = {}
        self.disagreements: list[str] = []
        self.strict_refused = False
        self.judge = session.comparator.check
        self.sampling = session.sampling  # FlashInfer-Bench's sampling rule, which judges draws instead (`_sampling`)
        self.checked: list[str] = []
        self.said = replies.SolutionOutput()
        self.pairs: list[PairTiming] = []
        self.pristine: dict[int, dict] = {}
        self.written = 0  # bytes of the solution's arena up to the end of the last slot handed to it
        self.scalars: dict[str, dict] = {}  # by slot: the Python scalars a custom inputs function made there
        self.in_place: frozenset[str] = frozenset()  # inputs the reference itself writes (`_learn_in_place`)
        # With room for every checked round beside the timed batches, the rounds keep slots of their own and
        # their reference outputs serve every solution of the call (`_Rounds`). Otherwise (memory fitted
        # fewer slots) they stream through the first slots a chunk at a time, the timed batches reuse those,
        # and the reference makes them again for each solution.
        rounds, slots = session.options.rounds, self.layout.slots
        self.shared = slots >= rounds + session.options.batch
        self.round_slots = list(range(rounds if self.shared else min(rounds, slots)))
        self.timed_slots = list(range(rounds, slots)) if self.shared else list(range(slots))
        self.clock = PhaseClock()

    def observe(self) -> Observations:
        opts, s = self.s.options, self.s
        with self.clock.phase("setup"):
            case_dir = s.base / f"case-{self.case.uuid[:8]}-{secrets.token_hex(4)}"
            scratch = case_dir / "scratch"
            scratch.mkdir(parents=True)
            for source in self.solution.sources:
                target = scratch / source.path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(source.content, encoding="utf-8")
            self.sol_budget, self.ref_budget = _Budget(opts.timeout_s), _Budget(opts.timeout_s)
            self.arena = s.arena_for(self.case)
        self.sol = None
        try:
            with self.clock.phase("setup"):
                self.report(ProgressEvent(self.report.number, self.report.total, self.case.uuid, "load", 0, 1))
                self.ref = s._reference_child()
                self.sol = Child(
                    "solution",
                    scratch,
                    case_dir / "solution.log",
                    s.memory,
                    opts.device,
                    self.arena,
                    s.sandboxed,
                    writable=True,
                    cpus=s.cpus["solution"],
                )
            self._protocol()
        except ChildEnded as ended:
            if ended.role == "solution":
                self.seen.solution_ended = (ended.kind, ended.detail)
            else:
                self.seen.reference_ended = (ended.kind, ended.detail)
                s.rounds.clear()  # its outputs in the round slots may be half written: the next solution remakes them
                s.timed = _TimedInputs()
        except _ReferenceFailed as failed:
            self.seen.reference_failed = f"the reference failed:\n{failed}"
            s.rounds.clear()
            s.timed = _TimedInputs()
        except _SolutionFailed:
            pass  # what failed is in self.seen already
        finally:
            with self.clock.phase("setup"):  # ending the processes, removing the scratch
                if self.sol is not None:
                    self.said.stdout = self.sol.log_tail(2000)
                    self.sol.close()
                # the pages a next run writes again, less room for one full comparison: a next solution that
                # fails makes it while the parent holds the case's timed state, which no single eval does
                s.hand_back(self.case.uuid, self.arena, self.sol, self.written - memory.compare_bytes(self.layout))
                _writable(case_dir)
                shutil.rmtree(case_dir, ignore_errors=True)
        return self.seen

    # --- the two sides ---------------------------------------------------------------------

    def _solution(self, message: dict, what: str) -> tuple[replies.Done | replies.InputsDone | replies.BatchDone, int]:
        """Run one request on the thawed solution, freeze it again; (reply, ns by the parent's clock from
        the request leaving to the reply arriving)."""
        # Starting the process and importing the solution get their own allowance, not the case's budget.
        assert self.sol is not None
        opening = message["op"] in ("open", "load")
        budget = _Budget(STARTUP_S + self.s.options.timeout_s) if opening else self.sol_budget
        if message["op"] == "batch":
            self._allow(budget, message, SOLUTION_PACE)
        with self.clock.phase("setup" if opening else "solution"):
            self.sol.thaw()
            started = time.monotonic()
            try:
                t0 = time.perf_counter_ns()
                self.sol.send(message)
                raw = self.sol.receive(budget.deadline(), what)
                elapsed = time.perf_counter_ns() - t0
            finally:
                budget.spend(started)
                if not self.sol.freeze():
                    self.seen.not_frozen = True
        if self.sol.pending():
            self.seen.unasked_replies = True
            raise _SolutionFailed()
        if self.seen.not_frozen:
            raise _SolutionFailed()
        try:
            reply = replies.parse(raw, message["op"])
        except replies.MalformedReply as exc:
            self.seen.malformed_reply = f"during {what}: {exc}"
            raise _SolutionFailed() from None
        if isinstance(reply, replies.Failure):
            self.said.failure_log = reply.log[: replies.LOG_CHARS]
            if message["op"] == "load":
                self.seen.load_failed = "the solution did not load"
            else:
                self.seen.call_failed = (reply.kind, f"a call failed during {what}")
            raise _SolutionFailed()
        if isinstance(reply, replies.BatchDone):
            self.said.add_notes(reply.notes)
        return reply, elapsed

    def _reference(self, message: dict) -> tuple[replies.Done | replies.InputsDone | replies.BatchDone, int]:
        # the reference's budget is for its calls; making inputs and empty batches are the harness's own
        # work, with an allowance of their own (a hang there still ends at its deadline)
        batch = message["op"] == "batch"
        budget = self.ref_budget if batch else _Budget(STARTUP_S + self.s.options.timeout_s)
        if batch:
            self._allow(budget, message, REFERENCE_PACE)
        phase = {"batch": "reference", "calibrate": "calibration"}.get(message["op"], "inputs")
        with self.clock.phase(phase):
            t0 = time.perf_counter_ns()
            reply = self.s._ask_reference(budget, message)
            elapsed = time.perf_counter_ns() - t0
        if batch:
            per_call = elapsed // len(message["slots"])
            self.s.pace[self.case.uuid] = min(self.s.pace.get(self.case.uuid, per_call), per_call)
        return reply, elapsed

    def _allow(self, budget: _Budget, message: dict, times: int) -> None:
        """Add a batch's calls at `times` the reference's pace in this case to `budget` (none before the
        reference has run a batch here)."""
        pace = self.s.pace.get(self.case.uuid)
        if pace is not None:
            budget.left += len(message["slots"]) * pace * times / 1e9

    def _empty_batch(self, size: int) -> int:
        """An empty batch of `size` calls in the reference's process, by the parent's clock: the loop's own
        cost (views, cache flush, synchronisation, the pipe both ways) with no kernel in it. Measured in a
        process that runs no solution code, while the solution's processes are frozen, so nothing a
        solution does can make it longer and so make its own figure shorter."""
        message = {"op": "calibrate", "layout": self.layout.to_json(), "slots": self.timed_slots[:size]}
        return self._reference(message)[1]

    def _quickest_empty(self, size: int, runs: int) -> int:
        """The quickest of `runs` empty batches of `size` calls: a one-off stall in one of them is never kept."""
        return min(self._empty_batch(size) for _ in range(runs))

    @_in_phase("inputs")
    def _make_inputs(self, calls: list[tuple[int, str, int]]) -> None:
        """The reference makes the inputs in its slots; the parent keeps a pristine copy of each (and the
        scalars a custom inputs function made, which go to both sides with the batch)."""
        timed = self.s.timed
        held = [c for c in calls if c[1] == "timed" and timed.held.get(c[0], (-1, None))[0] == c[2]]
        wanted = [c for c in calls if c not in held]
        if held or self.s.ahead != self._inputs_message(wanted):
            self.s.settle()  # the parent is about to write into the reference's slots, or to ask for other inputs
        for slot, _, _ in held:  # another solution's attempt had these made: back into the reference's slots
            for name, view in self.layout.tensor_inputs(self.s.reference_arena.tensor, slot).items():
                view.copy_(timed.copies[slot][name])
            scalars = timed.held[slot][1]
            if scalars is not None:
                self.scalars[str(slot)] = scalars
            self.pristine[slot] = timed.copies[slot]
        if not wanted:
            return
        reply, _ = self._reference(self._inputs_message(wanted))
        assert isinstance(reply, replies.InputsDone)
        self.scalars.update(reply.scalars)
        for slot, purpose, index in wanted:
            made = self.layout.tensor_inputs(self.s.reference_arena.tensor, slot)
            kept = timed.copies.get(slot) if purpose == "timed" else None
            if kept is None:
                kept = {name: t.clone() for name, t in made.items()}
            else:  # the slot's earlier inputs are done with: their batch was checked before these were asked for
                for name, t in made.items():
                    kept[name].copy_(t)
            if purpose == "timed":
                timed.copies[slot], timed.held[slot] = kept, (index, reply.scalars.get(str(slot)))
            self.pristine[slot] = kept

    def _inputs_message(self, calls: list[tuple[int, str, int]]) -> dict:
        return {
            "op": "inputs",
            "layout": self.layout.to_json(),
            "case": self.case.raw,
            "nonce": self.s.nonce,
            "calls": [list(c) for c in calls],
        }

    @_in_phase("inputs")
    def _hand_inputs(self, slots: list[int], given: dict | None = None) -> None:
        """Copy the inputs (each slot's own, or ``given`` into every one) into the solution's slots and poison
        its outputs: only now, with its processes frozen and its batch about to start, so nothing of it can
        see them earlier."""
        for slot in slots:
            for name, view in self.layout.tensor_inputs(self.arena.tensor, slot).items():
                view.copy_((given or self.pristine[slot])[name])
            _poison(self.layout, self.arena.tensor, slot, self.s.rng)
            self.written = max(self.written, (slot + 1) * self.layout.slot_bytes)

    def _batch_message(self, slots: list[int], timed: bool) -> dict:
        scalars = {str(slot): self.scalars[str(slot)] for slot in slots if str(slot) in self.scalars}
        return {"op": "batch", "layout": self.layout.to_json(), "slots": slots, "timed": timed, "scalars": scalars}

    # --- checks, all on parent memory with the solution frozen -------------------------------

    @_in_phase("checking")
    def _learn_in_place(self, slots: list[int]) -> None:
        """The inputs the reference itself wrote in its checked rounds (a cache it updates in place, as
        SOL-ExecBench's KV-cache problems do): the problem's own semantics, so a solution may write them too.
        Harmless either way: every call gets its own pristine copy of its inputs, so a write reaches no
        later call and nothing of the reference."""
        written = set(self.in_place)
        for slot in slots:
            now = self.layout.tensor_inputs(self.s.reference_arena.tensor, slot)
            written.update(n for n, t in now.items() if not same_bits(t, self.pristine[slot][n]))
        self.in_place = frozenset(written)

    @_in_phase("checking")
    def _check_inputs(self, slots: list[int]) -> None:
        """A write into an input the reference leaves alone: a hack by our own packs' rule; the upstream
        benchmarks do not check inputs, so there their verdict stands and the run shows the disagreement
        (and, like an output only our rule refuses, is kept out of the rankings)."""
        for slot in slots:
            now = self.layout.tensor_inputs(self.arena.tensor, slot)
            written = [n for n, t in now.items() if n not in self.in_place and not same_bits(t, self.pristine[slot][n])]
            if not written:
                continue
            if self.judge is STRICT.check:
                self.seen.inputs_written = written
                raise _SolutionFailed()
            self.strict_refused = True
            for name in written:
                self._note_disagreement(
                    f"wrote into input {name!r}, which the reference leaves alone: {STRICT.name} refuses it, "
                    "the benchmark does not check inputs"
                )

    @_in_phase("checking")
    def _check_outputs(self, pairs: list[tuple[int, str]], support=None) -> None:
        """Every call's outputs by the benchmark's rule; a sampling problem's draws against their inputs'
        support (``support``: the one all of these calls' inputs share), not against the reference's draws."""
        defs = self.s.problem.definition.outputs
        for slot, tag in pairs:
            self.checked.append(tag)
            mine = self.layout.outs(self.arena.tensor, slot)
            if self.sampling is not None:
                allowed = support if support is not None else self.sampling.support(self.pristine[slot])
                self._record(tag, self.sampling.check_draw(self.layout.outputs[0].name, mine[0], allowed))
                continue
            theirs = self.layout.outs(self.s.reference_arena.tensor, slot)
            for entry, out, ref in zip(self.layout.outputs, mine, theirs):
                check = self.judge(entry.name, defs[entry.name], out, ref, self.case.tolerance)
                if self.judge is not STRICT.check:  # our own packs: the rule is ours already, once is enough
                    self._second_opinion(
                        tag, check, STRICT.check(entry.name, defs[entry.name], out, ref, self.case.tolerance)
                    )
                self._record(tag, check)
        if self.seen.failed_output:
            raise _SolutionFailed()

    def _record(self, tag: str, check: OutputCheck) -> None:
        self.checks.setdefault(check.name, []).append(check)
        if check.status != "PASSED" and self.seen.failed_output is None:
            self.seen.failed_output = (tag, check)

    @_in_phase("checking")
    def _sampling(self) -> None:
        """FlashInfer-Bench's SamplingEvaluator (`sampling_judge`) on one checked round's inputs, after the rounds:
        its validation calls (as many at a time as the round slots), then its tiled calls, one slot each; the
        parent reads every sample from its own arena with the solution frozen and decides from them alone."""
        import torch

        rule, definition = self.sampling, self.s.problem.definition
        assert rule is not None
        inputs = self.pristine[self.round_slots[0]]  # (a FlashInfer-Bench problem has no custom scalars)
        support = rule.support(inputs)
        tiles, calls = rule.tiling(len(inputs["probs"]))
        progress = functools.partial(ProgressEvent, self.report.number, self.report.total, self.case.uuid, "sampling")
        self.report(progress(0, rule.validation_calls + calls))
        for done in range(0, rule.validation_calls, len(self.round_slots)):
            used = self.round_slots[: rule.validation_calls - done]
            self._hand_inputs(used, inputs)
            self._solution(self._batch_message(used, False), "sampling validation")
            self._check_outputs([(slot, f"sampling-{done + j}") for j, slot in enumerate(used)], support)
        tiled = Layout.build(definition, rule.tiled_case(self.case, definition), 1)
        counts = torch.zeros(support.shape, dtype=torch.int64, device=support.device)
        samples = self.layout.outputs[0].name
        self.checked.append(f"sampling-tiled-{calls}x{tiles}")
        for call in range(calls):
            if call % max(1, calls // 10) == 0:
                self.report(progress(rule.validation_calls + call, rule.validation_calls + calls))
            with self.clock.phase("inputs"):
                tile_into(tiled.tensor_inputs(self.arena.tensor, 0), inputs, tiles)
                _poison(tiled, self.arena.tensor, 0, self.s.rng)
                self.written = max(self.written, tiled.slot_bytes)
            message = {"op": "batch", "layout": tiled.to_json(), "slots": [0], "timed": False, "scalars": {}}
            self._solution(message, "sampling")
            wrong = rule.tally(counts, tiled.outs(self.arena.tensor, 0)[0])
            if wrong:
                self._record("sampling-tiled", OutputCheck(samples, "INCORRECT_NUMERICAL", reason=wrong))
                raise _SolutionFailed()
        self._record("sampling-tiled", rule.judge_counts(samples, counts, calls * tiles, inputs["probs"], support))
        if self.seen.failed_output:
            raise _SolutionFailed()

    def _second_opinion(self, tag: str, upstream: OutputCheck, strict: OutputCheck) -> None:
        """Note a call where our stricter rule and the benchmark's differ."""
        if (upstream.status == "PASSED") == (strict.status == "PASSED"):
            return
        self.strict_refused |= upstream.status == "PASSED"
        passed, failed = (upstream, strict) if upstream.status == "PASSED" else (strict, upstream)
        judges = "the benchmark's rule passes it" if passed is upstream else f"{STRICT.name} passes it"
        self._note_disagreement(f"{tag} {upstream.name}: {judges}, the other finds {failed.status}: {failed.reason}")

    def _note_disagreement(self, note: str) -> None:
        """The run lists each disagreement once, and at most MAX_DISAGREEMENTS of them: enough to see why."""
        if note not in self.disagreements and len(self.disagreements) < MAX_DISAGREEMENTS:
            self.disagreements.append(note)

    # --- the protocol ------------------------------------------------------------------------

    def _reference_rounds(self, rounds: list[int]) -> None:
        """The checked rounds' inputs and the reference's outputs on them, in its arena's round slots:
        made by the case's first solution, kept (`_Rounds`) for every later one of the call. The outputs
        there are the rounds batch's, or those of the last warm-up, which runs on the pristine inputs
        again (`_restore_rounds`): either way the reference's on exactly the inputs each solution gets."""
        kept = self.s.rounds.get(self.case.uuid)
        if kept is None:
            self.s.rounds.clear()  # an earlier case's: its slots in the reference's arena are this case's now
            self._make_inputs([(r, "round", r) for r in rounds])
            self._reference(self._batch_message(rounds, False))
            self._learn_in_place(rounds)
            kept = _Rounds({r: self.pristine[r] for r in rounds}, dict(self.scalars), self.in_place)
            self.s.rounds[self.case.uuid] = kept
        self.pristine.update(kept.pristine)
        self.scalars.update(kept.scalars)
        self.in_place = kept.in_place

    @_in_phase("inputs")
    def _restore_rounds(self, rounds: list[int]) -> None:
        """The pristine round inputs back into the reference's slots, so that its warm-up (which leaves
        its outputs there for the next solution's check) runs on exactly them, whatever it did to them."""
        self.s.settle()
        for slot in rounds:
            for name, view in self.layout.tensor_inputs(self.s.reference_arena.tensor, slot).items():
                view.copy_(self.pristine[slot][name])

    def _batch_size(self, warm: tuple[int, int], calls: int) -> int:
        """Calls per timed batch: enough that the faster side's batch lasts `batch_target_ms` and fifty
        times an empty batch's fixed cost, no more than keeps the slower side's batch within
        MAX_BATCH_S, within the slots the case has; never fewer than the options' batch."""
        measured = self.s.timed.overheads
        one = self._quickest_empty(1, SIZING_EMPTIES)
        empty = self._quickest_empty(calls, SIZING_EMPTIES)
        before = measured.get(calls, (one, empty))
        one, empty = measured[calls] = (min(one, before[0]), min(empty, before[1]))
        fast, slow = (max(1_000, (t - empty) // calls) for t in sorted(warm))
        target = max(self.s.options.batch_target_ms * 1e6, 50 * one)
        size = min(math.ceil(target / fast), int(MAX_BATCH_S * 1e9 // slow), len(self.timed_slots))
        return max(self.s.options.batch, size)

    @_in_phase("inputs")
    def _fit_to_batch(self, timed: list[int]) -> None:
        """Hold nothing past this solution's batch: the pristine copies of the slots past it, and the pages
        past it in both arenas, which a solution before it with a larger batch left (held for the case, a
        many-solution call would keep the largest batch any of its solutions drew, which no single eval does).
        A later solution with a larger batch has them made again."""
        timed_inputs = self.s.timed
        for slot in [slot for slot in timed_inputs.copies if slot > timed[-1]]:
            del timed_inputs.copies[slot]
            timed_inputs.held.pop(slot, None)
        end = (timed[-1] + 1) * self.layout.slot_bytes
        self.s.settle()  # the reference's process idle before its pages go
        with contextlib.suppress(OSError):  # a refused hole leaves the pages as they are, nothing worse
            self.s.reference_arena.release(end)
            self.arena.release(end)
        self.written = min(self.written, end)

    def _timed_pair(self, pair: int, timed: list[int], first: int, last_attempt: bool) -> PairTiming:
        """One paired batch on fresh inputs, between two empty batches; every call's outputs checked. Where
        another attempt or pair follows, the reference makes its fresh inputs (`ask_ahead`) during the checks."""
        self._make_inputs([(slot, "timed", first + j) for j, slot in enumerate(timed)])
        before = self._quickest_empty(len(timed), PROBES)
        sides = ["reference", "solution"] if pair % 2 == 0 else ["solution", "reference"]
        figures: dict[str, tuple[int, list[int]]] = {}
        for side in sides:
            if side == "solution":
                self._hand_inputs(timed)
                reply, elapsed = self._solution(self._batch_message(timed, True), f"timed pair {pair}")
            else:
                reply, elapsed = self._reference(self._batch_message(timed, True))
            assert isinstance(reply, replies.BatchDone)
            figures[side] = (elapsed, reply.samples)
        after = self._quickest_empty(len(timed), PROBES)
        timing = PairTiming(
            calls=len(timed),
            empty_batches_ns=[before, after],
            solution_batch_ns=figures["solution"][0],
            reference_batch_ns=figures["reference"][0],
            solution_reported=figures["solution"][1],
            reference_reported=figures["reference"][1],
        )
        if (timing.noisy and not last_attempt) or pair + 1 < self.s.options.pair_count:
            following = self.s.timed.next_index  # the next attempt's first call (`_TimedInputs.attempt`)
            self.s.ask_ahead(self._inputs_message([(slot, "timed", following + j) for j, slot in enumerate(timed)]))
        self._check_inputs(timed)
        self._check_outputs([(slot, f"timed-{first + j}") for j, slot in enumerate(timed)])
        return timing

    def _protocol(self) -> None:
        opts = self.s.options
        uuid, number, total = self.case.uuid, self.report.number, self.report.total
        assert self.sol is not None
        if self.s.timed.case != uuid:  # an earlier case's inputs, of its shapes and its draw
            self.s.timed = _TimedInputs(uuid)
        self._solution({"op": "open", "arena": self.arena.handle(), "device": opts.device}, "opening the arena")
        self._solution(
            {
                "op": "load",
                "entry_file": self.solution.entry_file,
                "entry_function": self.solution.entry_function,
                "dps": self.solution.destination_passing_style,
                "compiled": self.solution.compiled,
                "sources": [src.path for src in self.solution.sources],
                "compile_options": self.solution.compile_options,
            },
            "loading the solution",
        )
        if self.shared:
            slots = self.round_slots
            # The reference goes first, in the rounds and the warm-up: a reference that cannot run here (an
            # exception, a device it hard-codes, its memory) fails as itself, before a solution that copies
            # it could take the blame. Its rounds run once per case and call: later solutions get the same
            # inputs (a copy each) and are checked against the same outputs.
            self._reference_rounds(slots)
            self.report(ProgressEvent(number, total, uuid, "rounds", 0, opts.rounds))
            self._hand_inputs(slots)
            self._solution(self._batch_message(slots, False), "correctness rounds")
            self._check_inputs(slots)
            self._check_outputs([(r, f"round-{r}") for r in slots])
            # the reference's warm-up leaves the outputs the next solution is checked against: where it
            # writes its inputs, no slot runs twice, so each output is still its on the pristine inputs
            calls = min(opts.warmup, len(slots)) if self.in_place else opts.warmup
            warm = [slots[i % len(slots)] for i in range(max(1, calls))]
            self._restore_rounds(slots)
        else:
            self.s.rounds.clear()  # the timed batches reuse these slots: nothing of the rounds outlives the case
            slots = self.round_slots
            for first in range(0, opts.rounds, len(slots)):
                self.report(ProgressEvent(number, total, uuid, "rounds", first, opts.rounds))
                chunk = [(slots[j], first + j) for j in range(min(len(slots), opts.rounds - first))]
                self._make_inputs([(slot, "round", r) for slot, r in chunk])
                used = [slot for slot, _ in chunk]
                self._reference(self._batch_message(used, False))  # first, as above
                self._learn_in_place(used)
                self._hand_inputs(used)
                self._solution(self._batch_message(used, False), "correctness rounds")
                self._check_inputs(used)
                self._check_outputs([(slot, f"round-{r}") for slot, r in chunk])
            warm = [slots[i % len(slots)] for i in range(max(1, opts.warmup))]
        if self.sampling is not None:
            self._sampling()
        self.report(ProgressEvent(number, total, uuid, "warmup", 0, opts.warmup))
        _, ref_warm = self._reference(self._batch_message(warm, False))
        self._hand_inputs(slots)
        _, sol_warm = self._solution(self._batch_message(warm, False), "warm-up")
        size = self._batch_size((sol_warm, ref_warm), len(warm))
        timed = self.timed_slots[:size]
        self._fit_to_batch(timed)
        pairs = opts.pairs_for(len(timed))
        started = time.monotonic()
        for pair in range(pairs):
            eta = (time.monotonic() - started) / pair * (pairs - pair) if pair else None
            self.report(ProgressEvent(number, total, uuid, "timing", pair, pairs, eta))
            for attempt in range(1 + NOISY_RETRIES):
                first = self.s.timed.attempt(size, first_of_solution=pair == attempt == 0)
                timing = self._timed_pair(pair, timed, first, attempt == NOISY_RETRIES)
                if timing.disturbance is None:
                    break
                if attempt < NOISY_RETRIES:
                    again = f"again ({timing.disturbance})"
                    self.report(ProgressEvent(number, total, uuid, "timing", pair, pairs, eta, note=again))
            self.pairs.append(timing)
        self.seen.timing_problem = timing_problem(self.pairs)


def _flags(result: CaseResult) -> list[str]:
    flags = []
    if result.passed and result.latency and result.reference_latency:
        too_wide = result.speedup is not None and result.speedup.relative_width > UNSTABLE_INTERVAL
        noisy = any(p.noisy for p in result.pairs)  # what other load did to a pair, even after its reruns
        too_spread = spread(result.latency) > UNSTABLE_SPREAD or spread(result.reference_latency) > UNSTABLE_SPREAD
        if too_wide or too_spread or noisy:
            flags.append("unstable")
        score = result.score
        if score and score.t_sol_ms is not None and result.latency.median / 1e6 < score.t_sol_ms:
            flags.append("below_speed_of_light")
        if score and score.speedup and score.speedup > IMPLAUSIBLE_SPEEDUP:
            flags.append("implausible_speedup")
    if result.passed and result.strict_refused:
        # the benchmark's verdict stands (it is what its leaderboard claims), but an output our rule refuses
        # (a non-finite value, an outlier past the bound) is not ranked: the flag keeps it out of every group
        flags.append(STRICT_RULE_FLAG)
    return flags


class _Reporter:
    def __init__(self, progress, number: int, total: int, solution: int = 0):
        self.progress, self.number, self.total, self.solution = progress, number, total, solution

    def __call__(self, event: ProgressEvent) -> None:
        if self.progress:
            event.solution = self.solution
            self.progress(event)


def evaluate(
    problem: Problem,
    solution: Solution,
    options: EvalOptions | None = None,
    progress: Callable[[ProgressEvent], None] | None = None,
) -> SuiteResult:
    """Run every selected case; never raises for what a solution does, only for bad arguments
    (or, with sandbox="required", when no sandbox can be made, or `EnvironmentChanged`)."""
    return evaluate_many(problem, [solution], options, progress)[0]


def evaluate_many(
    problem: Problem,
    solutions: list[Solution],
    options: EvalOptions | None = None,
    progress: Callable[[ProgressEvent], None] | None = None,
) -> list[SuiteResult]:
    """Run several solutions on one problem in one call: a suite result of its own for each (its own
    processes and scratch per case, a wiped arena, its own verdicts), one snapshot, reference process and
    nonce for all. Case by case, every solution runs a case before the next case starts, so the
    reference makes a case's checked rounds once (`_Rounds`) and only one case's state is ever held
    (a single evaluation's memory plan holds for the call). Raises as `evaluate` does."""
    options = options or EvalOptions()
    cases = _chosen(problem, options)
    environment = read_environment(options.device)
    mode = _sandbox_mode(options)
    if mode[0] or len(solutions) == 1:
        return _run_session(_Session(problem, options, cases, mode), solutions, cases, environment, progress)
    # Without a sandbox a solution can rewrite the problem or harness files, and one session's one
    # baseline would then blame every later solution for it: each gets a session (and baseline) of its own.
    return [
        _run_session(_Session(problem, options, cases, mode), [solution], cases, environment, progress, index)[0]
        for index, solution in enumerate(solutions)
    ]


def _run_session(
    session: _Session,
    solutions: list[Solution],
    cases: list[WorkloadCase],
    environment: dict,
    progress: Callable[[ProgressEvent], None] | None,
    first: int = 0,
) -> list[SuiteResult]:
    """Every case for every solution in one session, case by case; `first` numbers the solutions."""
    problem = session.problem
    started = utc_now()
    results: list[list[CaseResult]] = [[] for _ in solutions]
    try:
        with _one_thread():
            for number, case in enumerate(cases):
                for index, solution in enumerate(solutions):
                    reporter = _Reporter(progress, number, len(cases), first + index)
                    result = _scored(session.run_case(number, case, reporter, solution), problem, environment)
                    results[index].append(result)
                    memory.release_freed()  # what this run freed is not held through the next one's
                    reporter(ProgressEvent(number, len(cases), case.uuid, "done", 1, 1, 0.0, result))
    finally:
        session.close()
    finished = utc_now()
    return [
        _suite(session, solution, mine, environment, started, finished) for solution, mine in zip(solutions, results)
    ]


def _suite(
    session: _Session, solution: Solution, results: list[CaseResult], environment: dict, started: str, finished: str
) -> SuiteResult:
    paired = [([[p.reference_ns] for p in r.pairs], [[p.solution_ns] for p in r.pairs]) for r in results if r.passed]
    return SuiteResult(
        problem_root=str(session.problem.root),
        definition_name=session.problem.definition.name,
        solution=solution,
        problem=session.problem,
        options=session.options,
        environment=environment,
        cases=results,
        score=suite_score([r.score for r in results if r.score], [r.passed for r in results if r.score]),
        started_at=started,
        finished_at=finished,
        nonce=session.nonce,
        sandboxed=session.sandboxed,
        sandbox_note=session.sandbox_note,
        speedup=suite_speedup_interval(paired) if paired and len(paired) == len(results) else None,
        blob_digests=session.blob_digests,
    )


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """The parent's own tensor work (making pristine copies, checking every call) on one intra-op
    thread while a suite runs. Its children sit pinned on the other CPUs, and on a loaded two-core
    machine a second OpenMP thread waits for a core at every parallel region: a check of a 2 MiB
    output took 10-60 ms with two threads against 1.5 ms with one. The caller's setting comes back."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _scored(result: CaseResult, problem: Problem, environment: dict) -> CaseResult:
    """The case's score and flags, from what the parent measured."""
    case = result.case
    result.score = case_score(
        case,
        problem.definition,
        problem.definition.resolve_axes(case.axes),
        result.passed,
        result.latency.median / 1e6 if result.latency else None,
        result.reference_latency.median / 1e6 if result.reference_latency else None,
        environment["hardware"]["product"],
    )
    result.flags = _flags(result)
    return result


def _correctness(result: CaseResult) -> Correctness | None:
    """The worst of the case's checked outputs, for its trace line."""
    if not result.outputs:
        return None
    return Correctness(
        max_relative_error=max(o.max_relative_error for o in result.outputs),
        max_absolute_error=max(o.max_absolute_error for o in result.outputs),
        has_nan=any(o.has_nan for o in result.outputs),
        has_inf=any(o.has_inf for o in result.outputs),
    )


def _performance(result: CaseResult) -> Performance | None:
    """The case's medians and speedup, for its trace line: only a passed case has any."""
    if not (result.passed and result.latency):
        return None
    return Performance(
        latency_ms=result.latency.median / 1e6,
        reference_latency_ms=result.reference_latency.median / 1e6 if result.reference_latency else None,
        speedup_factor=result.score.speedup if result.score else None,
    )


def write_traces(suite: SuiteResult, path: str | Path, append: bool = False) -> None:
    with open(path, "a" if append else "w", encoding="utf-8") as f:
        for line in suite.trace_lines():
            f.write(json.dumps(line, allow_nan=False) + "\n")
