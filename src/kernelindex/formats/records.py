"""KernelIndex records of an upstream problem folder and solution: pure (no store, no I/O beyond
reading the folder), so that the harness and the importers build the same records, digest for digest.

A problem folder becomes an OperationSpec, one WorkloadCase per workload line and a WorkloadSuite;
a solution an ImplementationRevision identified by the digest of its sources. Every record is
validated with `kernelindex.records.models.parse_record` before it is returned.
"""

from __future__ import annotations

import platform
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelindex import API_VERSION
from kernelindex.formats import blobs
from kernelindex.formats.definition import Definition, TensorSpec
from kernelindex.formats.dtypes import DTYPES
from kernelindex.formats.errors import FormatError
from kernelindex.formats.problem import Problem, load_problem
from kernelindex.formats.solution import Solution, load_solution
from kernelindex.formats.workload import WorkloadCase
from kernelindex.records.canonical import canonical_json, digest, sha256_digest
from kernelindex.records.errors import RecordError
from kernelindex.records.fields import IDENTIFIER_PATTERN

COMPARATOR = "elementwise_close"

_ARCHITECTURES = {
    "b200": "sm_100",
    "gb200": "sm_100",
    "b100": "sm_100",
    "h200": "sm_90",
    "h100": "sm_90",
    "h20": "sm_90",
    "a100": "sm_80",
    "l40s": "sm_89",
    "l4": "sm_89",
    "rtx4090": "sm_89",
}


def slug(text: str, limit: int = 120) -> str:
    value = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return (value or "unnamed")[:limit]


def token(text: str) -> str:
    """A value for the `^[a-z][a-z0-9_]*$` fields."""
    value = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
    return value if value[:1].isalpha() else f"x_{value}"


def _validated(record: dict, where: str) -> dict:
    from kernelindex.records.models import dump_record, parse_record

    return dump_record(parse_record(record, where=where))


def envelope(kind: str, name: str, spec: dict, title: str | None = None, **metadata: Any) -> dict:
    meta = {"name": slug(name, 200)}
    if title:
        meta["title"] = title[:200]
    meta.update({k: v for k, v in metadata.items() if v})
    return _validated(
        {"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec}, f"{kind} {meta['name']}"
    )


def record_names(definition: Definition) -> dict[str, str]:
    """The identifier each axis, input and output has in records. Upstream names (``M``,
    ``A_cumsum``) stay as given in the problem; only a name a record field cannot hold is mapped
    (``M`` -> ``m``), to one no other name of the definition has (``_2``, ``_3``... on a clash)."""
    names = [*definition.axes, *definition.inputs, *definition.outputs]
    used = {n for n in names if re.fullmatch(IDENTIFIER_PATTERN, n)}
    mapped = {n: n for n in used}
    for name in names:
        if name in mapped:
            continue
        base = candidate = token(name)
        number = 1
        while candidate in used:
            number += 1
            candidate = f"{base}_{number}"
        used.add(candidate)
        mapped[name] = candidate
    return mapped


def _dim(d: str, names: dict[str, str]) -> int | str:
    return int(d) if d.isdigit() else names[d]


def _tensor_entry(spec: TensorSpec, names: dict[str, str]) -> dict:
    if spec.shape is None:
        return {"name": names[spec.name], "scalar": {"dtype": DTYPES[spec.dtype].record_name}}
    # The record schema needs at least one dimension: a 0-d tensor is written as [1] (the
    # WorkloadCase says rank 0 in its data parameters).
    return {
        "name": names[spec.name],
        "tensor": {"dtype": DTYPES[spec.dtype].record_name, "shape": [_dim(d, names) for d in spec.shape] or [1]},
    }


def operation_spec(definition: Definition) -> dict:
    """Mirrors how KernelIndex writes SOL-ExecBench operations, so the same definition gets the same digest."""
    names = record_names(definition)
    axes: dict[str, dict[str, Any]] = {}
    for axis in definition.axes.values():
        if axis.type == "const":
            axes[names[axis.name]] = {"role": "constant", "type": "integer", "value": axis.value}
        elif axis.type == "var":
            axes[names[axis.name]] = {"role": "variable", "type": "integer"}
        else:
            entry: dict[str, Any] = {"role": "derived", "type": "integer"}
            if axis.expression is not None and re.fullmatch(r"[a-z0-9_+\-*%/() ]+", axis.expression):
                entry["expression"] = axis.expression
            axes[names[axis.name]] = entry
    spec = {
        "family": slug(definition.op_type or "other").replace(".", "-").replace("_", "-"),
        "axes": axes,
        "inputs": [_tensor_entry(s, names) for s in definition.inputs.values()],
        "outputs": [_tensor_entry(s, names) for s in definition.outputs.values()],
        "semantics": {"mutation": "none", "determinism": "unspecified"},
    }
    return envelope(
        "OperationSpec", definition.name, spec, definition.name, description=(definition.description or "")[:2000]
    )


def _correctness(case: WorkloadCase) -> dict:
    tol = case.tolerance
    return {
        "comparator": COMPARATOR,
        "maxAbsoluteError": tol.max_atol,
        "maxRelativeError": tol.max_rtol,
        "requiredMatchedRatio": tol.required_matched_ratio,
        "nanPolicy": "reject",
        "infinityPolicy": "exact_match" if tol.allow_negative_inf else "reject",
    }


def _given_axes(definition: Definition, case: WorkloadCase) -> dict[str, int]:
    values = definition.resolve_axes(case.axes)
    names = record_names(definition)
    return {names[n]: values[n] for n, a in definition.axes.items() if a.type != "expr"}


def workload_case(
    definition: Definition, case: WorkloadCase, operation_digest: str, blob_digests: Mapping[str, str]
) -> dict:
    """The case's record; ``blob_digests``: each safetensors path it names -> its file's digest
    (`blobs.content_digests`), so a case is identified by the data it is given, not only its shapes."""
    values = definition.resolve_axes(case.axes)
    names = record_names(definition)
    tensors, scalars = {}, {}
    for name, spec in definition.inputs.items():
        given = case.inputs[name]
        if spec.is_scalar:
            if given.type == "custom":  # made by the definition's generator: nothing given to record
                continue
            value = given.value
            scalars[names[name]] = {
                "dtype": DTYPES[spec.dtype].record_name,
                "value": int(value) if isinstance(value, bool) else value,
            }
            continue
        data: dict[str, Any] = {
            "generator": {"random": "seeded_random", "scalar": "constant"}.get(given.type, given.type)
        }
        if given.type == "safetensors" and given.path is not None:
            # the file by its bytes, and which of its tensors (a fragment): one file may hold several cases' data
            uri = given.path if given.tensor_key is None else f"{given.path}#{given.tensor_key}"
            data["artifact"] = {"uri": uri, "digest": blob_digests[given.path]}
        if given.type == "scalar":
            data["parameters"] = {"value": float(given.value)}
        if spec.shape == ():
            data.setdefault("parameters", {})["rank"] = 0
        tensors[names[name]] = {
            "shape": list(definition.shape(spec, values) or ()) or [1],
            "dtype": DTYPES[spec.dtype].record_name,
            "data": data,
        }
    case_spec: dict[str, Any] = {
        "operationSpecDigest": operation_digest,
        "axes": _given_axes(definition, case),
        "tensors": tensors,
        "correctness": _correctness(case),
    }
    if scalars:
        case_spec["scalars"] = scalars
    axes_text = ", ".join(f"{k}={v}" for k, v in case.axes.items())
    title = f"{definition.name} · {axes_text}"
    return envelope("WorkloadCase", f"{definition.name}-{case.uuid[:8]}", case_spec, title)


def workload_suite(
    definition: Definition, cases: list[WorkloadCase], operation_digest: str, total: int | None = None
) -> dict:
    """The suite of exactly these cases; a subset of a problem's cases is its own suite (own name and digest)."""
    spec = {
        "operationSpecDigest": operation_digest,
        "cases": [{"externalId": c.uuid, "axes": _given_axes(definition, c)} for c in cases],
        "correctness": {"comparator": COMPARATOR, "description": "every case within its own workload tolerance"},
        "aggregation": {"metric": "latency", "statistic": "geomean"},
    }
    if total is None or total == len(cases):
        return envelope(
            "WorkloadSuite", f"{definition.name}-suite-{len(cases)}", spec, f"{definition.name} · {len(cases)} cases"
        )
    picked = sha256_digest(canonical_json(sorted(c.uuid for c in cases)))[7:15]
    return envelope(
        "WorkloadSuite",
        f"{definition.name}-suite-{len(cases)}-of-{total}-{picked}",
        spec,
        f"{definition.name} · {len(cases)} of {total} cases",
    )


@dataclass
class ProblemRecords:
    operation: dict
    cases: dict[str, dict]  # uuid -> WorkloadCase
    suite: dict

    def all(self) -> list[dict]:
        return [self.operation, *self.cases.values(), self.suite]


@contextmanager
def as_format_error(file: str | Path, line: int | None = None) -> Iterator[None]:
    """A value the problem and solution formats let through but a record bounds (an axis past
    2**53, a 300-character uuid or GPU name) is refused like any other format error: by file."""
    try:
        yield
    except RecordError as exc:
        raise FormatError(file, line, exc.path or None, exc.reason) from None


def records_for(
    problem: Problem, blob_root: str | Path | None = None, blob_digests: Mapping[str, str] | None = None
) -> ProblemRecords:
    """The problem's records; its safetensors inputs are found as the harness finds them (``blob_root``,
    else KERNELINDEX_BLOB_ROOT, then the problem folder), and a case whose file is nowhere is refused by
    its line: without the file its record could not tell it from a case given other data. ``blob_digests``:
    paths already hashed (a run's, of the copies it read), neither looked for nor read again."""
    definition_file, workload_file = problem.root / "definition.json", problem.root / "workload.jsonl"
    with as_format_error(definition_file):
        operation = operation_spec(problem.definition)
    op_digest = digest(operation)
    root = blobs.blob_root(blob_root)
    digests = dict(blob_digests or {})  # each file read once, however many cases name it
    cases = {}
    for case in problem.cases:
        if not blobs.paths_of(case) <= digests.keys():
            try:
                found = blobs.locate_all([case], problem.root, root)
            except blobs.BlobMissing as exc:
                raise FormatError(workload_file, case.line, "inputs", str(exc)) from None
            digests.update(blobs.content_digests({p: f for p, f in found.items() if p not in digests}))
        with as_format_error(workload_file, case.line):
            cases[case.uuid] = workload_case(problem.definition, case, op_digest, digests)
    with as_format_error(workload_file):
        suite = workload_suite(problem.definition, problem.cases, op_digest)
    return ProblemRecords(operation, cases, suite)


def problem_records(problem_dir: str | Path, blob_root: str | Path | None = None) -> list[dict]:
    """OperationSpec, one WorkloadCase per workload line, one WorkloadSuite."""
    return records_for(load_problem(problem_dir), blob_root).all()


@dataclass
class TraceLinks:
    """What a trace import needs to name the workload and implementation its lines measured."""

    records: list[dict]  # the problem's records, stored with the trace
    definition_name: str
    case_digests: dict[str, str]  # uuid -> WorkloadCase digest
    implementation: dict | None
    solution_name: str | None


def trace_links(
    problem_dir: str | Path, solution_path: str | Path | None = None, blob_root: str | Path | None = None
) -> TraceLinks:
    """Read a problem folder (and a solution.json) for `ingest.traces.import_traces`; raises FormatError.
    A solution naming no target hardware supports this machine's architecture, as a harness run on
    its CPU would say."""
    problem = load_problem(problem_dir)
    records = records_for(problem, blob_root)
    implementation, solution_name = None, None
    if solution_path is not None:
        solution = load_solution(solution_path)
        solution_name = solution.name
        implementation = implementation_revision(
            solution, problem.definition, digest(records.operation), {"hardware": {"architecture": host_architecture()}}
        )
    return TraceLinks(
        records.all(),
        problem.definition.name,
        {u: digest(c) for u, c in records.cases.items()},
        implementation,
        solution_name,
    )


def host_architecture() -> str:
    """This machine's CPU architecture as an ExecutionEnvironment writes it (x86_64, aarch64)."""
    return platform.machine().lower().replace("-", "_")


def sources_bundle(solution: Solution) -> bytes:
    """The solution's sources as canonical JSON: the bytes its ImplementationRevision is identified by."""
    return canonical_json(
        {
            "name": solution.name,
            "entryPoint": solution.entry_point,
            "sources": [{"path": s.path, "content": s.content} for s in sorted(solution.sources, key=lambda s: s.path)],
        }
    )


def _architectures(solution: Solution, environment: dict) -> list[str]:
    found = set()
    for target in solution.target_hardware:
        key = re.sub(r"[^a-z0-9]", "", str(target).lower())
        arch = next((a for name, a in _ARCHITECTURES.items() if name in key), None)
        found.add(arch or token(str(target)))
    if not found:
        found.add(environment["hardware"]["architecture"])
    return sorted(found)


def implementation_revision(
    solution: Solution, definition: Definition, operation_digest: str, environment: dict
) -> dict:
    files = [
        {"path": s.path, "digest": sha256_digest(s.content.encode())}
        for s in sorted(solution.sources, key=lambda s: s.path)
    ]
    bundle = sources_bundle(solution)
    dtypes = sorted({DTYPES[s.dtype].record_name for s in [*definition.inputs.values(), *definition.outputs.values()]})
    spec: dict[str, Any] = {
        "projectRevision": {"treeDigest": sha256_digest(canonical_json({"files": files}))},
        "operation": {"specDigest": operation_digest},
        "callable": {
            "language": token(solution.languages[0]),
            "path": solution.entry_file,
            "symbol": solution.entry_function,
            "interface": "destination_passing" if solution.destination_passing_style else "value_returning",
        },
        "support": {"hardwareArchitectures": _architectures(solution, environment), "dtypes": dtypes},
        "source": {
            "contentDigest": sha256_digest(bundle),
            "fileName": f"{slug(solution.name)}.sources.json",
            "sizeBytes": len(bundle),
        },
        "licensing": {},
    }
    if solution.target_hardware:
        spec["support"]["productsTested"] = [str(t) for t in solution.target_hardware]
    authors = [{"name": solution.author[:200]}] if solution.author else None
    with as_format_error(solution.path or "solution.json"):
        return envelope(
            "ImplementationRevision",
            f"{solution.name}-{files and spec['projectRevision']['treeDigest'][7:15]}",
            spec,
            f"{solution.name} · {definition.name}",
            authors=authors,
            description=(solution.description or "")[:2000],
        )
