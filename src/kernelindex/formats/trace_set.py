"""FlashInfer-Bench's dataset layout, a trace set: ``definitions/**/*.json``, ``workloads/**/*.jsonl`` (trace
lines, each naming its definition), ``blob/workloads/...`` for safetensors inputs, ``solutions/``, ``traces/``.

FlashInfer-Bench's own loader (``TraceSet.from_path``) reads every workload file and groups the lines by
the ``definition`` each names, whatever the file is called; so does `select`. `eval` runs a definition
of a trace set as a problem folder made of that definition's bytes and its workload lines, verbatim
(`harness.trace_sets`), with the set's root as the blob root its safetensors paths start from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelindex.formats.definition import load_definition
from kernelindex.formats.errors import FormatError
from kernelindex.formats.json_files import parse_json, read_text
from kernelindex.formats.workload import parse_case

DEFINITIONS, WORKLOADS = "definitions", "workloads"


def is_trace_set(path: Path) -> bool:
    return (path / DEFINITIONS).is_dir() and (path / WORKLOADS).is_dir()


def trace_set_of(definition_file: Path) -> Path | None:
    """The trace set a definition file lies in: the nearest folder above it with definitions/ and
    workloads/ whose definitions/ holds the file; None elsewhere."""
    real = definition_file.resolve()
    for folder in real.parents:
        if is_trace_set(folder) and real.is_relative_to(folder / DEFINITIONS):
            return folder
    return None


def definition_files(root: Path) -> list[Path]:
    return sorted((root / DEFINITIONS).rglob("*.json"))


@dataclass(frozen=True)
class Selected:
    root: Path  # the trace set
    definition_text: str
    workload_lines: list[str]  # verbatim, in file order (files sorted by path)


def select(definition_file: Path) -> Selected:
    """One definition of a trace set and every workload line naming it, each checked where it lies (an
    error names the set's own file and line)."""
    root = trace_set_of(definition_file)
    if root is None:
        raise FormatError(
            definition_file, None, None, "is neither a problem folder nor a definition in a FlashInfer-Bench trace set"
        )
    definition = load_definition(definition_file)
    lines: list[str] = []
    for workload_file in sorted((root / WORKLOADS).rglob("*.jsonl")):
        for number, text in enumerate(read_text(workload_file).splitlines(), start=1):
            if not text.strip():
                continue
            value = parse_json(text, workload_file, number)
            if isinstance(value, dict) and value.get("definition") == definition.name:
                parse_case(value, definition, workload_file, number)
                lines.append(text)
    if not lines:
        raise FormatError(
            definition_file, None, "name", f"no workload line under {root / WORKLOADS} names {definition.name!r}"
        )
    return Selected(root, read_text(definition_file), lines)
