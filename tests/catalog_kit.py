"""Small hand-made catalogs: a few valid records of our own, written as export lines.

Tests change one thing in them (a digest, a field, a byte) and check how an import answers.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import zstandard

from kernelindex.records.canonical import comparison_key, correctness_key, digest, metric_key

API = "kernelindex.dev/v1alpha1"


def _record(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name, "title": name.replace("-", " ")}, "spec": spec}


def operation() -> dict[str, Any]:
    return _record(
        "OperationSpec",
        "toy-scale",
        {
            "family": "elementwise",
            "axes": {"n": {"role": "variable", "type": "integer"}},
            "inputs": [{"name": "x", "tensor": {"dtype": "fp32", "shape": ["n"]}}],
            "outputs": [{"name": "y", "tensor": {"dtype": "fp32", "shape": ["n"]}}],
            "semantics": {"mutation": "none", "determinism": "deterministic"},
        },
    )


def workload(op: dict[str, Any], n: int = 1024) -> dict[str, Any]:
    return _record(
        "WorkloadCase",
        f"toy-scale-n{n}",
        {
            "operationSpecDigest": digest(op),
            "axes": {"n": n},
            "tensors": {"x": {"dtype": "fp32", "shape": [n]}},
            "correctness": {"comparator": "allclose", "maxAbsoluteError": 1e-6},
        },
    )


def project() -> dict[str, Any]:
    return _record(
        "SoftwareProject", "toy-project", {"name": "Toy project", "host": {"id": "toy/toy", "kind": "other"}}
    )


def implementation(op: dict[str, Any], version: str = "v1") -> dict[str, Any]:
    return _record(
        "ImplementationRevision",
        f"toy-impl-{version}",
        {
            "source": {"fileName": "scale.py", "sizeBytes": 120, "contentDigest": "sha256:" + "ab" * 32},
            "support": {"dtypes": ["fp32"], "hardwareArchitectures": ["sm_90"]},
            "callable": {"language": "python"},
            "licensing": {},
            "operation": {"specDigest": digest(op)},
            "projectRevision": {"version": version},
        },
    )


def protocol() -> dict[str, Any]:
    return _record(
        "BenchmarkProtocol",
        "toy-protocol",
        {
            "harness": {"name": "toy harness", "version": "1"},
            "correctness": {"reference": "numpy", "comparator": "allclose"},
            "measurement": {"timer": "cuda_event", "primaryStatistic": "median"},
            "comparability": {"family": "toy", "notes": "hand-made for tests"},
        },
    )


def environment() -> dict[str, Any]:
    return _record(
        "ExecutionEnvironment",
        "toy-h100",
        {"hardware": {"vendor": "nvidia", "product": "NVIDIA H100", "architecture": "sm_90"}, "software": {}},
    )


def bundle(wl: dict, impl: dict, median_ns: int = 5000, name: str = "toy-run") -> dict[str, Any]:
    prot, env = protocol(), environment()
    run = _record(
        "BenchmarkRun",
        name,
        {
            "status": "passed",
            "observedAt": "2026-01-02T03:04:05.678Z",
            "timing": {
                "primaryStatistic": "median",
                "latencyNs": {"median": median_ns, "minimum": median_ns - 100},
                "samples": 50,
            },
            "sourceNative": {"source": "toy-source", "benchmark": "toy", "externalId": name, "metrics": {"x": 0.5}},
            "protocolDigest": digest(prot),
            "workloadDigest": digest(wl),
            "environmentDigest": digest(env),
            "implementationDigest": digest(impl),
        },
    )
    return {"run": run, "protocol": prot, "environment": env}


def catalog_lines() -> list[dict[str, Any]]:
    """``{"table", "row"}`` objects of a complete small catalog, parents first."""
    op, proj = operation(), project()
    wl = workload(op)
    impls = [implementation(op, "v1"), implementation(op, "v2")]
    ids = iter(f"01900000-0000-7000-8000-{i:012d}" for i in range(1, 1000))
    source_id, project_id, op_id, wl_id = next(ids), next(ids), next(ids), next(ids)
    lines: list[dict[str, Any]] = [
        {
            "table": "sources",
            "row": {
                "id": source_id,
                "slug": "toy-source",
                "kind": "leaderboard",
                "name": "Toy",
                "policy": None,
                "createdAt": "2026-01-01T00:00:00.000Z",
            },
        },
        {
            "table": "projects",
            "row": {
                "id": project_id,
                "slug": "toy-project",
                "name": "Toy project",
                "manifest": proj,
                "createdAt": "2026-01-01T00:00:00.000Z",
            },
        },
        {
            "table": "operations",
            "row": {
                "id": op_id,
                "slug": "toy-scale",
                "family": "elementwise",
                "name": "toy scale",
                "semanticDigest": digest(op),
                "manifest": op,
                "tags": ["toy"],
                "createdAt": "2026-01-01T00:00:00.000Z",
                "supersedesId": None,
            },
        },
        {"table": "operation_aliases", "row": {"operationId": op_id, "alias": "toy_scale"}},
        {
            "table": "workloads",
            "row": {
                "id": wl_id,
                "operationId": op_id,
                "workloadDigest": digest(wl),
                "manifest": wl,
                "shapeSummary": "[1024]",
                "dtypes": ["fp32"],
                "createdAt": "2026-01-01T00:00:00.000Z",
            },
        },
    ]
    impl_ids = []
    for impl in impls:
        impl_ids.append(next(ids))
        lines.append(
            {
                "table": "implementations",
                "row": {
                    "id": impl_ids[-1],
                    "projectId": project_id,
                    "operationId": op_id,
                    "implementationDigest": digest(impl),
                    "manifest": impl,
                    "title": impl["metadata"]["name"],
                    "createdAt": "2026-01-01T00:00:00.000Z",
                    "supersedesId": None,
                },
            }
        )
    run_rows, measurement_rows = [], []
    for number, (impl, impl_id) in enumerate(zip(impls, impl_ids, strict=True)):
        b = bundle(wl, impl, median_ns=5000 + 700 * number, name=f"toy-run-{number}")
        spec = b["run"]["spec"]
        key = comparison_key(
            operation=digest(op),
            workload=digest(wl),
            protocol=spec["protocolDigest"],
            environment=spec["environmentDigest"],
            correctness=correctness_key(wl["spec"]["correctness"]),
            metric=metric_key("latency", "median", "ns"),
        )
        run_id = next(ids)
        run_rows.append(
            {
                "table": "benchmark_runs",
                "row": {
                    "id": run_id,
                    "runDigest": digest(b["run"]),
                    "implementationId": impl_id,
                    "workloadId": wl_id,
                    "sourceId": source_id,
                    "status": "passed",
                    "observedAt": spec["observedAt"],
                    "publishedAt": "2026-01-03T00:00:00.000Z",
                    "hardwareVendor": "nvidia",
                    "hardwareModel": "NVIDIA H100",
                    "hardwareArchitecture": "sm_90",
                    "protocolKey": spec["protocolDigest"],
                    "environmentKey": spec["environmentDigest"],
                    "correctnessKey": correctness_key(wl["spec"]["correctness"]),
                    "comparisonKey": key,
                    "primaryMetric": "latency",
                    "primaryValue": spec["timing"]["latencyNs"]["median"],
                    "primaryUnit": "ns",
                    "sampleCount": 50,
                    "primaryStatistic": "median",
                    "manifest": b,
                    "supersedesId": None,
                    "retractedAt": None,
                    "retractionReason": None,
                },
            }
        )
        for statistic, name in (("median", "median"), ("min", "minimum")):
            measurement_rows.append(
                {
                    "table": "measurements",
                    "row": {
                        "id": next(ids),
                        "runId": run_id,
                        "metric": "latency",
                        "statistic": statistic,
                        "unit": "ns",
                        "value": spec["timing"]["latencyNs"][name],
                        "sampleCount": 50,
                    },
                }
            )
    lines += run_rows + measurement_rows
    lines.append(
        {
            "table": "record_events",
            "row": {
                "id": next(ids),
                "comparisonKey": run_rows[0]["row"]["comparisonKey"],
                "runId": run_rows[0]["row"]["id"],
                "previousRunId": None,
                "policyVersion": "ranking-v1",
                "cause": "new_run",
                "at": "2026-01-03T00:00:00.000Z",
                "createdAt": "2026-01-03T00:00:00.000Z",
            },
        }
    )
    lines.append(
        {
            "table": "artifacts",
            "row": {
                "id": next(ids),
                "contentDigest": "sha256:" + "ab" * 32,
                "kind": "source",
                "mediaType": "text/x-python",
                "sizeBytes": 120,
                "storage": "inline",
                "uri": "https://example.org/scale.py",
                "license": None,
                "createdAt": "2026-01-01T00:00:00.000Z",
            },
        }
    )
    return copy.deepcopy(lines)


def to_text(lines: list[dict[str, Any]]) -> str:
    return "".join(_line_text(line) + "\n" for line in lines)


def _line_text(line: dict[str, Any]) -> str:
    """A line as exports write it (UTF-8, not escaped); one holding a lone surrogate, which UTF-8
    cannot carry, as the JSON escape a hostile file would use."""
    text = json.dumps(line, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(line, separators=(",", ":"))
    return text


def write_catalog(path: Path, lines: list[dict[str, Any]] | None = None, *, text: str | None = None) -> Path:
    """Write lines (or raw text) as ``.jsonl.zst`` (or plain ``.jsonl`` when the name says so)."""
    data = (to_text(catalog_lines() if lines is None else lines) if text is None else text).encode("utf-8")
    path.write_bytes(zstandard.ZstdCompressor().compress(data) if path.name.endswith(".zst") else data)
    return path
