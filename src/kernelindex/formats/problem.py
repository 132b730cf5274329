"""A problem folder: definition.json and workload.jsonl, read together."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelindex.formats import trace_set
from kernelindex.formats.definition import Definition, load_definition
from kernelindex.formats.errors import FormatError
from kernelindex.formats.workload import WorkloadCase, load_workload

FORMATS = ("kernelindex", "sol_execbench", "flashinfer_bench")
_SOL_ONLY = ("custom_inputs_entrypoint", "hf_id")


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
    return Problem(root=root, definition=definition, cases=load_workload(root / "workload.jsonl", definition))
