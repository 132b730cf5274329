"""From serving export rows to the serving tables' columns, every digest and key recomputed.

Like :mod:`kernelindex.store.rows`: each function checks one row (the record against the published
schema, the stated digest against the record, the columns the export derives from the record
against the record) and raises :class:`RowError` naming the field. A serving run's keys also need
its model and workload records: :func:`serving_run_columns` takes them as arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernelindex.records.serving_keys import run_keys
from kernelindex.store.rows import RowError, check_record, export_row, optional, require, same_digest


def _record(row: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    return check_record(row.get("manifest"), "manifest", (kind,))


def _same(field: str, stated: Any, derived: Any) -> Any:
    """A summary column must say what the record says (null where the record says nothing)."""
    if stated != derived:
        raise RowError(field, f"says {stated!r} but its record says {derived!r}")
    return derived


def model_revision_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    manifest = _record(row, "ModelRevision")
    spec = manifest["spec"]
    return {
        "id": require(row, "id"),
        "slug": require(row, "slug"),
        "model_digest": same_digest("modelDigest", row.get("modelDigest"), manifest),
        "name": optional(row, "name"),
        "parameter_count": _same("parameterCount", row.get("parameterCount"), spec.get("parameterCount")),
        "context_length": _same("contextLength", row.get("contextLength"), spec.get("contextLength")),
        "tokenizer": optional(row, "tokenizer"),
        "license": optional(row, "license"),
        "manifest": manifest,
        "created_at": row.get("createdAt"),
        "export_row": export_row(row),
    }


def stack_revision_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    manifest = _record(row, "ServingStackRevision")
    return {
        "id": require(row, "id"),
        "project_id": optional(row, "projectId"),
        "slug": require(row, "slug"),
        "stack_digest": same_digest("stackDigest", row.get("stackDigest"), manifest),
        "name": optional(row, "name"),
        "version": optional(row, "version"),
        "manifest": manifest,
        "created_at": row.get("createdAt"),
        "export_row": export_row(row),
    }


def configuration_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    manifest = _record(row, "ServingConfiguration")
    spec = manifest["spec"]
    return {
        "id": require(row, "id"),
        "stack_revision_id": optional(row, "stackRevisionId"),
        "configuration_digest": same_digest("configurationDigest", row.get("configurationDigest"), manifest),
        "dtype": _same("dtype", row.get("dtype"), spec.get("dtype")),
        "quantization": optional(row, "quantization"),
        "tensor_parallel": _same(
            "tensorParallel", row.get("tensorParallel"), (spec.get("parallelism") or {}).get("tensor")
        ),
        "summary": optional(row, "summary"),
        "manifest": manifest,
        "created_at": row.get("createdAt"),
        "export_row": export_row(row),
    }


def serving_workload_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    manifest = _record(row, "ServingWorkload")
    spec = manifest["spec"]
    return {
        "id": require(row, "id"),
        "workload_digest": same_digest("workloadDigest", row.get("workloadDigest"), manifest),
        "slug": require(row, "slug"),
        "name": optional(row, "name"),
        "streaming": _same("streaming", row.get("streaming"), spec.get("streaming")),
        "load_generation": _same("loadGeneration", row.get("loadGeneration"), spec.get("loadGeneration")),
        "manifest": manifest,
        "created_at": row.get("createdAt"),
        "export_row": export_row(row),
    }


def check_serving_run(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The run's record, checked against the schema and its stated digest (keys come later)."""
    manifest = _record(row, "ServingRun")
    same_digest("runDigest", row.get("runDigest"), manifest)
    return manifest


def serving_run_columns(
    row: Mapping[str, Any], model: Mapping[str, Any], workload: Mapping[str, Any]
) -> dict[str, Any]:
    """Columns of a serving run; ``model`` and ``workload`` are the records its spec names."""
    manifest = check_serving_run(row)
    spec = manifest["spec"]
    keys = run_keys(spec, model["spec"], workload["spec"])
    for name in ("protocolKey", "metricSetKey", "cohortKey"):
        if row.get(name) != keys[name]:
            raise RowError(name, f"key mismatch: the file says {row.get(name)!r}, recomputed {keys[name]!r}")
    topology = spec["topology"]
    total = topology["acceleratorsPerNode"] * topology["nodeCount"]
    _same("status", row.get("status"), spec["status"])
    _same("qualityPolicy", row.get("qualityPolicy"), spec["qualityPolicy"])
    _same("acceleratorModel", row.get("acceleratorModel"), topology["acceleratorModel"])
    _same("totalAccelerators", row.get("totalAccelerators"), total)
    return {
        "id": require(row, "id"),
        "run_digest": row["runDigest"],
        "model_revision_id": optional(row, "modelRevisionId"),
        "configuration_id": optional(row, "configurationId"),
        "workload_id": optional(row, "workloadId"),
        "source_id": optional(row, "sourceId"),
        "status": spec["status"],
        "observed_at": optional(row, "observedAt"),
        "published_at": optional(row, "publishedAt"),
        "cohort_key": keys["cohortKey"],
        "protocol_key": keys["protocolKey"],
        "quality_policy": spec["qualityPolicy"],
        "metric_set_key": keys["metricSetKey"],
        "scenario": optional(row, "scenario"),
        "accelerator_vendor": topology.get("acceleratorVendor"),
        "accelerator_model": topology["acceleratorModel"],
        "accelerator_count": topology["acceleratorsPerNode"],
        "node_count": topology["nodeCount"],
        "total_accelerators": total,
        "supersedes_id": optional(row, "supersedesId"),
        "retracted_at": optional(row, "retractedAt"),
        "retraction_reason": optional(row, "retractionReason"),
        "manifest": manifest,
        "export_row": export_row(row),
    }


def serving_measurement_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": require(row, "id"),
        "run_id": require(row, "runId"),
        "metric": require(row, "metric"),
        "statistic": require(row, "statistic"),
        "unit": require(row, "unit"),
        "value": require(row, "value", (int, float)),
        "sample_count": row.get("sampleCount"),
        "export_row": export_row(row),
    }
