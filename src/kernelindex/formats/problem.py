"""A problem folder: definition.json and workload.jsonl, read together."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from kernelindex.formats import trace_set
from kernelindex.formats.definition import Definition, load_definition
from kernelindex.formats.errors import FormatError
from kernelindex.formats.workload import Tolerance, WorkloadCase, load_workload

FORMATS = ("kernelindex", "sol_execbench", "flashinfer_bench")
_SOL_ONLY = ("custom_inputs_entrypoint", "hf_id")
# FlashInfer-Bench's LowBitEvaluator judges a definition whose name holds this, at this matched ratio
LOWBIT_DEFINITIONS = "moe_fp8_block_scale"
LOWBIT_MATCHED_RATIO = 0.95


def problem_format(definition: Definition, cases: list[WorkloadCase]) -> str:
    """Which benchmark a folder comes from, so it is judged by that benchmark's rule. Our own packs
    say ``"kernelindex_judge": "strict"`` (a key upstream loaders ignore). The two upstream formats share
    one definition format; FlashInfer-Bench's definitions carry ``tags`` and none of SOL-ExecBench's
    own keys (expr axes, ``custom_inputs_entrypoint``, ``hf_id``), and its workloads no tolerance."""
    raw = definition.raw
    if raw.get("kernelindex_judge") == "strict":  # our own packs: integers exact (../shared/spec/harness.md)
        return "kernelindex"
    flashinfer = (
        "tags" in raw
        and not any(key in raw for key in _SOL_ONLY)
        and all(axis.type != "expr" for axis in definition.axes.values())
        and not any("tolerance" in case.raw for case in cases)
    )
    return "flashinfer_bench" if flashinfer else "sol_execbench"


def flashinfer_bench_tolerance(definition: Definition) -> Tolerance:
    """FlashInfer-Bench's workloads carry no tolerance: its BenchmarkConfig's defaults judge every case
    (atol = rtol = 1e-2, every element), and its low-bit evaluator, picked by the definition's name,
    asks 95% of them."""
    ratio = LOWBIT_MATCHED_RATIO if LOWBIT_DEFINITIONS in definition.name else 1.0
    return Tolerance(max_atol=1e-2, max_rtol=1e-2, required_matched_ratio=ratio)


@dataclass(frozen=True)
class Problem:
    root: Path
    definition: Definition
    cases: list[WorkloadCase]

    @property
    def format(self) -> str:
        """``kernelindex``, ``sol_execbench`` or ``flashinfer_bench`` (`FORMATS`): whose rule judges its outputs."""
        return problem_format(self.definition, self.cases)

    @property
    def warnings(self) -> list[str]:
        """What the folder's documents hold that upstream's loaders ignore, and so do we."""
        return [warning for case in self.cases for warning in case.warnings]

    def case(self, uuid: str) -> WorkloadCase:
        """The case with this uuid, or the one case whose uuid starts with it (never a guess)."""
        found = [case for case in self.cases if case.uuid == uuid] or [
            case for case in self.cases if uuid and case.uuid.startswith(uuid)
        ]
        if len(found) > 1:
            raise KeyError(
                f"case prefix {uuid!r} matches {len(found)} cases in {self.root / 'workload.jsonl'}; "
                "give more characters"
            )
        if not found:
            raise KeyError(f"no case {uuid!r} in {self.root / 'workload.jsonl'}")
        return found[0]


def load_problem(root: str | Path) -> Problem:
    """A problem folder: definition.json and workload.jsonl."""
    root = Path(root)
    if not root.is_dir():
        raise FormatError(root, None, None, "is not a problem folder")
    if not (root / "definition.json").exists() and trace_set.is_trace_set(root):
        names = trace_set.definition_files(root)
        example = f", e.g. {names[0]}" if names else ""
        raise FormatError(
            root, None, None, f"is a FlashInfer-Bench trace set of {len(names)} definition(s): give one's file{example}"
        )
    definition = load_definition(root / "definition.json")
    cases = load_workload(root / "workload.jsonl", definition)
    if problem_format(definition, cases) == "flashinfer_bench":  # each case's tolerance is the one it is judged by
        cases = [replace(case, tolerance=flashinfer_bench_tolerance(definition)) for case in cases]
    return Problem(root=root, definition=definition, cases=cases)
