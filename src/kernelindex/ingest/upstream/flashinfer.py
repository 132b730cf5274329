"""A FlashInfer-Bench dataset folder (``flashinfer-ai/flashinfer-trace`` layout, or its files side by
side): definitions, solutions and trace JSONL into v1alpha1 records.

The definition and the workloads its traces measured become the same OperationSpec and
WorkloadCases our harness writes for that problem; each solution an ImplementationRevision; each
trace line a reported BenchmarkRun (lines read by ``formats.trace``, runs made by ``ingest.traces``).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from kernelindex.formats.errors import FormatError
from kernelindex.formats.records import trace_links
from kernelindex.formats.trace import TraceLine, parse_trace_line
from kernelindex.ingest.traces import Linker, trace_protocol, trace_run
from kernelindex.ingest.upstream.common import (
    Provenance,
    Records,
    UpstreamError,
    holds_none,
    read_json,
    read_json_lines,
    retrieved_at,
)
from kernelindex.ingest.whole_files import read_whole
from kernelindex.records.errors import RecordError

DATASET = "https://huggingface.co/datasets/flashinfer-ai/flashinfer-trace"
PROVENANCE = Provenance(
    slug="flashinfer-bench",
    kind="dataset",
    name="FlashInfer-Bench (flashinfer-trace dataset)",
    url=DATASET,
    license="Apache-2.0",
    terms="Apache-2.0: redistribution with the licence and notices retained.",
    attribution="FlashInfer-Bench, flashinfer-ai",
)


def _kind(path: Path) -> tuple[str, str] | None:
    """What a file of the folder holds: ("trace", ""), ("definition" or "solution", the name it
    gives itself: what trace lines refer to it by), or None (not a file of the dataset's)."""
    if path.suffix == ".jsonl":
        return "trace", ""
    if path.suffix != ".json" or path.name == "info.json":
        return None
    doc = read_json(path)
    if isinstance(doc, dict) and "reference" in doc and "axes" in doc:
        kind = "definition"
    elif isinstance(doc, dict) and "spec" in doc and "definition" in doc:
        kind = "solution"
    else:
        raise UpstreamError(
            path, None, None, "neither a definition (axes, reference) nor a solution (definition, spec)"
        )
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise UpstreamError(path, None, "name", "required string is missing")
    return kind, name


def read(path: Path, *, retrieved: str | None = None) -> Records:
    """A FlashInfer-Bench folder: its definitions, solutions and traces (problems and solutions read
    by `formats.records.trace_links`)."""
    if not path.is_dir():
        raise UpstreamError(path, None, None, "--from flashinfer reads a folder (definitions, solutions, traces)")
    files = sorted(p for p in path.rglob("*") if p.is_file())
    if not any(p.match("*.jsonl") for p in files):  # no trace file: nothing to import, not even the source
        raise holds_none(path, "*.jsonl")
    kinds = {p: kind for p in files if (kind := _kind(p)) is not None}
    definitions = {name: p for p, (k, name) in kinds.items() if k == "definition"}
    records = Records(
        Provenance(
            **{**PROVENANCE.__dict__, "retrieved_at": retrieved or retrieved_at(next(iter(definitions.values()), path))}
        )
    )
    # read (and checked) by trace_links
    solutions = {name: (p, None) for p, (k, name) in kinds.items() if k == "solution"}
    workloads: dict[str, tuple[Path, dict[str, dict]]] = {}  # definition -> (first file, uuid -> workload)
    with tempfile.TemporaryDirectory() as scratch:
        traces = [p for p, (k, _) in kinds.items() if k == "trace"]
        for index, trace_file in enumerate(traces):
            values = read_json_lines(trace_file)
            records.lines += len(values)
            lines = []
            for number, value in values:
                if _workload_trace(value):
                    _known(definitions, value["definition"], trace_file, number)
                    cases = workloads.setdefault(value["definition"], (trace_file, {}))[1]
                    cases.setdefault(value["workload"]["uuid"], value["workload"])
                else:
                    lines.append(_trace_line(value, trace_file, number))
            if not lines:
                continue
            definition = lines[0].definition
            _known(definitions, definition, trace_file, lines[0].line)
            problem_dir = _problem_dir(Path(scratch) / f"trace-{index}", definitions[definition])
            runs: dict[str, dict] = {}
            for line in lines:
                runs.setdefault(line.workload_uuid, line.workload)
            (problem_dir / "workload.jsonl").write_text("".join(json.dumps(w) + "\n" for w in runs.values()))
            _trace_runs(records, trace_file, lines, (problem_dir, definitions[definition], path), solutions)
        for number, (definition, (first, cases)) in enumerate(workloads.items()):  # its cases, no runs
            problem_dir = _problem_dir(Path(scratch) / f"workloads-{number}", definitions[definition])
            (problem_dir / "workload.jsonl").write_text("".join(json.dumps(w) + "\n" for w in cases.values()))
            for record in _links((problem_dir, definitions[definition], path), first, None).records:
                records.parent(None, record)
    return records


def _workload_trace(value) -> bool:
    """FlashInfer-Bench's workload trace (its ``Trace.is_workload_trace``): a workload of a definition with no
    solution and no evaluation, what its ``workloads/`` files hold; a case to know, not a run."""
    return (
        isinstance(value, dict)
        and value.get("solution") is None
        and value.get("evaluation") is None
        and isinstance(value.get("definition"), str)
        and isinstance(value.get("workload"), dict)
        and isinstance(value["workload"].get("uuid"), str)
    )


def _known(definitions: dict[str, Path], name: str, trace_file: Path, line: int) -> None:
    if name not in definitions:
        known = sorted(map(str, definitions))
        raise UpstreamError(trace_file, line, "definition", f"no definition {name!r} in the folder (known: {known})")


def _problem_dir(folder: Path, definition_file: Path) -> Path:
    folder.mkdir()
    (folder / "definition.json").write_bytes(read_whole(definition_file))
    return folder


def _trace_line(value, trace_file: Path, number: int) -> TraceLine:
    try:
        return parse_trace_line(value, trace_file, number)
    except FormatError as exc:
        raise UpstreamError(trace_file, number, exc.field, exc.reason) from None


def _links(problem: tuple[Path, Path, Path], trace_file: Path, solution_path: Path | None):
    """`trace_links` of a scratch problem folder made from ``trace_file``'s lines, its safetensors inputs
    found under the trace set's root as FlashInfer-Bench finds them; its errors named in the originals
    (the definition file, the trace file)."""
    problem_dir, definition_file, root = problem
    try:
        return trace_links(problem_dir, solution_path, root)
    except FormatError as exc:
        if exc.file == str(problem_dir / "definition.json"):  # a byte-for-byte copy: same lines
            raise UpstreamError(definition_file, exc.line, exc.field, exc.reason) from None
        if exc.file == str(problem_dir / "workload.jsonl"):  # made from the trace lines' workloads
            # a blob is looked for in the scratch folder too, where nothing is: that place means nothing here
            reason = f"a workload of its lines: {exc.reason}".replace(f" or {problem_dir}", "")
            raise UpstreamError(trace_file, None, f"workload.{exc.field}" if exc.field else None, reason) from None
        raise UpstreamError(Path(exc.file), exc.line, exc.field, exc.reason) from None


def _trace_runs(
    records: Records, trace_file: Path, lines: list[TraceLine], problem: tuple[Path, Path, Path], solutions: dict
) -> None:
    """The runs of one trace file; ``problem``: the scratch problem folder made for it, the definition
    file it was made from (errors in its copies are reported against the originals) and the trace set's root."""
    solution_path = next((solutions[line.solution][0] for line in lines if line.solution in solutions), None)
    links = _links(problem, trace_file, solution_path)
    for record in links.records:
        records.parent(None, record)
    linker = Linker(links)
    if linker.implementation is not None:
        records.parent(None, linker.implementation)
    protocol = trace_protocol()
    for line in lines:
        try:
            run, environment = trace_run(line, linker, protocol, PROVENANCE.slug)
        except FormatError as exc:
            raise UpstreamError(trace_file, line.line, exc.field, exc.reason) from None
        except RecordError as exc:
            field_, reason = exc.problems[0] if exc.problems else (None, str(exc))
            raise UpstreamError(trace_file, line.line, field_, reason) from None
        records.run(line.line, run, protocol, environment)
