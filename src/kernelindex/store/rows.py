"""From an export row (or a run bundle) to the store's columns, recomputing every digest and key.

Each ``*_columns`` function checks one row and returns the column values to insert; a problem
raises :class:`RowError` naming the field, which the importer turns into file:line:field: reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from kernelindex.records.canonical import comparison_key, correctness_key, digest, metric_key
from kernelindex.records.models import RecordError, check_kind
from kernelindex.records.refusal import Refusal, RefusalKind

# latencyNs statistic names as runs write them -> the statistic names of measurement rows
_STATISTIC = {"minimum": "min", "maximum": "max"}


class RowError(Refusal, ValueError):
    """A row a catalog import refuses: the field and the reason."""

    kind = RefusalKind.INVALID

    def __init__(self, field: str | None, reason: str) -> None:
        self.field, self.reason = field, reason
        super().__init__(f"{field}: {reason}" if field else reason)


def check_record(record: Any, field: str, kinds: tuple[str, ...]) -> Mapping[str, Any]:
    """Validate a record against the published schema (unknown fields are refused); the record back."""
    if not isinstance(record, Mapping):
        raise RowError(field, "missing or not a JSON object")
    if record.get("kind") not in kinds:
        raise RowError(f"{field}.kind", f"expected {' or '.join(kinds)}, got {record.get('kind')!r}")
    try:
        check_kind(record)
    except RecordError as exc:
        path, reason = exc.problems[0] if exc.problems else ("", str(exc))
        raise RowError(f"{field}.{path}" if path else field, reason) from exc
    return record


def require(row: Mapping[str, Any], key: str, kind: type | tuple[type, ...] = str) -> Any:
    value = row.get(key)
    if not isinstance(value, kind):
        raise RowError(key, "missing" if value is None else f"expected {getattr(kind, '__name__', kind)}")
    return value


def optional(row: Mapping[str, Any], key: str, kind: type = str, default: Any = None) -> Any:
    """``row[key]`` if it is a ``kind``; ``default`` if absent or null."""
    value = row.get(key)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise RowError(key, f"expected {kind.__name__} or null, got {str(value)[:40]!r}")
    return value


def same_digest(field: str, stated: Any, record: Mapping[str, Any]) -> str:
    return stated_digest(field, stated, digest(record))


def stated_digest(field: str, stated: Any, actual: str) -> str:
    """``actual``, when the file states that digest; else a mismatch on ``field``."""
    if stated != actual:
        raise RowError(field, f"digest mismatch: the file says {stated}, the record hashes to {actual}")
    return actual


def export_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row as stored beside the columns: everything, with the record itself left out."""
    kept = dict(row)
    if "manifest" in kept:
        kept["manifest"] = None
    return kept


def source_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": require(row, "id"),
        "slug": require(row, "slug"),
        "kind": require(row, "kind"),
        "name": require(row, "name"),
        "policy": row.get("policy"),
        "created_at": row.get("createdAt"),
        "export_row": export_row(row),
    }


def project_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    manifest = check_record(row.get("manifest"), "manifest", ("SoftwareProject",))
    return {
        "id": require(row, "id"),
        "slug": require(row, "slug"),
        "name": row.get("name"),
        "manifest": manifest,
        "created_at": row.get("createdAt"),
        "export_row": export_row(row),
    }


def operation_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    manifest = check_record(row.get("manifest"), "manifest", ("OperationSpec",))
    return {
        "id": require(row, "id"),
        "semantic_digest": same_digest("semanticDigest", row.get("semanticDigest"), manifest),
        "slug": require(row, "slug"),
        "family": row.get("family"),
        "name": row.get("name"),
        "tags": row.get("tags"),
        "supersedes_id": row.get("supersedesId"),
        "manifest": manifest,
        "created_at": row.get("createdAt"),
        "export_row": export_row(row),
    }


def alias_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "operation_id": require(row, "operationId"),
        "alias": require(row, "alias"),
        "export_row": export_row(row),
    }


def workload_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    manifest = check_record(row.get("manifest"), "manifest", ("WorkloadCase", "WorkloadSuite"))
    spec = manifest["spec"]
    return {
        "id": require(row, "id"),
        "workload_digest": same_digest("workloadDigest", row.get("workloadDigest"), manifest),
        "kind": manifest["kind"],
        "operation_id": row.get("operationId"),
        "operation_digest": spec.get("operationSpecDigest"),
        "correctness_key": correctness_key(spec.get("correctness")),
        "name": manifest["metadata"].get("name"),
        "shape_summary": row.get("shapeSummary"),
        "dtypes": row.get("dtypes"),
        "manifest": manifest,
        "created_at": row.get("createdAt"),
        "export_row": export_row(row),
    }


def implementation_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    manifest = check_record(row.get("manifest"), "manifest", ("ImplementationRevision",))
    return {
        "id": require(row, "id"),
        "implementation_digest": same_digest("implementationDigest", row.get("implementationDigest"), manifest),
        # the operation the spec names, checked against operationId by the writer (not a column)
        "operation_spec_digest": (manifest["spec"].get("operation") or {}).get("specDigest"),
        "project_id": row.get("projectId"),
        "operation_id": row.get("operationId"),
        "slug": row.get("slug"),
        "title": row.get("title"),
        "language": row.get("language"),
        "supersedes_id": row.get("supersedesId"),
        "manifest": manifest,
        "created_at": row.get("createdAt"),
        "export_row": export_row(row),
    }


def artifact_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    content_digest = require(row, "contentDigest")
    return {
        "id": require(row, "id"),
        "content_digest": content_digest,
        "kind": require(row, "kind"),
        "media_type": row.get("mediaType"),
        "size_bytes": row.get("sizeBytes"),
        "storage": row.get("storage"),
        "uri": row.get("uri"),
        "license": row.get("license"),
        "created_at": row.get("createdAt"),
        "export_row": export_row(row),
    }


def measurement_columns(row: Mapping[str, Any]) -> dict[str, Any]:
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


def event_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": require(row, "id"),
        "comparison_key": row.get("comparisonKey"),
        "run_id": row.get("runId"),
        "previous_run_id": row.get("previousRunId"),
        "policy_version": row.get("policyVersion"),
        "cause": require(row, "cause"),
        "reason": row.get("reason"),
        "at": require(row, "at"),
        "created_at": row.get("createdAt"),
        "export_row": export_row(row),
    }


# ---- runs ---------------------------------------------------------------------------------


def check_bundle(bundle: Any, field: str = "manifest") -> tuple[Mapping[str, Any], Any, Any]:
    """Validate a ``{run, protocol, environment}`` bundle and its internal digests."""
    if not isinstance(bundle, Mapping):
        raise RowError(field, "missing or not a JSON object")
    unknown = sorted(set(bundle) - {"run", "protocol", "environment"})
    if unknown:
        raise RowError(f"{field}.{unknown[0]}", "unknown field (a run bundle holds run, protocol, environment)")
    protocol, environment = bundle.get("protocol"), bundle.get("environment")
    run = check_record(bundle.get("run"), f"{field}.run", ("BenchmarkRun",))
    protocol_digest = _checked_shared_part(protocol, f"{field}.protocol", "BenchmarkProtocol")
    environment_digest = _checked_shared_part(environment, f"{field}.environment", "ExecutionEnvironment")
    spec = run["spec"]
    stated_digest(f"{field}.run.spec.protocolDigest", spec.get("protocolDigest"), protocol_digest)
    stated_digest(f"{field}.run.spec.environmentDigest", spec.get("environmentDigest"), environment_digest)
    return run, protocol, environment


_SHARED_PARTS: dict[tuple[str, bytes], str] = {}  # (kind, a validated record's JSON) -> its digest
_SHARED_PARTS_MAX = 4096


def _checked_shared_part(record: Any, field: str, kind: str) -> str:
    """Validate a run's protocol or environment and return its digest, once per distinct record:
    a catalog's thousands of runs share a handful of each. Only records that passed are kept, keyed
    by their JSON text (equal text is an equal record; text with a null is not kept, as orjson
    writes NaN as null too), so a refusal is always worked out again."""
    try:
        key = (kind, orjson.dumps(record))
    except TypeError:  # not JSON (orjson.JSONEncodeError): the checks below say why
        key = None
    if key is not None and b"null" in key[1]:
        key = None
    if key is not None and (known := _SHARED_PARTS.get(key)) is not None:
        return known
    check_record(record, field, (kind,))
    actual = digest(record)
    if key is not None:
        if len(_SHARED_PARTS) >= _SHARED_PARTS_MAX:
            _SHARED_PARTS.clear()
        _SHARED_PARTS[key] = actual
    return actual


def primary_metric(spec: Mapping[str, Any]) -> tuple[str | None, str | None, str | None, Any]:
    """(metric, statistic, unit, value): the timing's primary statistic, else the first measurement.

    This is the rule the public export follows (checked on all its runs).
    """
    timing = spec.get("timing")
    if timing:
        statistic = timing.get("primaryStatistic")
        return "latency", statistic, "ns", timing.get("latencyNs", {}).get(statistic)
    for m in spec.get("measurements") or ():
        return m.get("metric"), m.get("statistic"), m.get("unit"), m.get("value")
    return None, None, None, None


def derived_measurements(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Measurement rows of a run: each latencyNs statistic, then ``spec.measurements``.

    The public export derives its measurement rows the same way (checked on all its runs).
    """
    timing = spec.get("timing") or {}
    samples = timing.get("samples")
    rows = [
        {
            "metric": "latency",
            "statistic": _STATISTIC.get(name, name),
            "unit": "ns",
            "value": value,
            "sampleCount": samples,
        }
        for name, value in (timing.get("latencyNs") or {}).items()
        if not isinstance(value, (list, tuple))  # confidence95 is an interval, not one measurement
    ]
    for m in spec.get("measurements") or ():
        rows.append(
            {
                "metric": m["metric"],
                "statistic": m["statistic"],
                "unit": m["unit"],
                "value": m["value"],
                "sampleCount": m.get("sampleCount", samples),
            }
        )
    return rows


def run_keys(columns: Mapping[str, Any], workload: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of a run that need its workload: operation, correctness and comparison key."""
    metric = metric_key(columns["primary_metric"], columns["primary_statistic"], columns["primary_unit"])
    key = comparison_key(
        operation=workload["operation_digest"],
        workload=columns["workload_digest"],
        protocol=columns["protocol_key"],
        environment=columns["environment_key"],
        correctness=workload["correctness_key"],
        metric=metric,
    )
    return {
        "workload_id": workload["id"],
        "operation_digest": workload["operation_digest"],
        "correctness_key": workload["correctness_key"],
        "comparison_key": key,
    }


def run_columns(bundle: Any, field: str = "manifest") -> dict[str, Any]:
    """Columns of a run from its bundle alone (links and workload keys are filled later)."""
    run, protocol, environment = check_bundle(bundle, field)
    spec = run["spec"]
    metric, statistic, unit, value = primary_metric(spec)
    hardware = environment["spec"].get("hardware") or {}
    evidence = spec.get("evidence") or {}
    return {
        "run_digest": digest(run),
        "source_slug": (spec.get("sourceNative") or {}).get("source"),
        "implementation_digest": spec["implementationDigest"],
        "workload_digest": spec["workloadDigest"],
        "protocol_key": spec["protocolDigest"],
        "environment_key": spec["environmentDigest"],
        "status": spec["status"],
        "observed_at": spec.get("observedAt"),
        "primary_metric": metric,
        "primary_statistic": statistic,
        "primary_unit": unit,
        "primary_value": value,
        "sample_count": (spec.get("timing") or {}).get("samples"),
        "hardware_vendor": hardware.get("vendor"),
        "hardware_model": hardware.get("product"),
        "hardware_architecture": hardware.get("architecture"),
        "has_raw_evidence": "rawSamples" in evidence,
        "manifest": bundle,
        # the rows of its protocol and environment (stored once each by the writer; not columns):
        # check_bundle proved their digests, so they are not hashed again
        "protocol_row": protocol_columns(protocol, spec["protocolDigest"]),
        "environment_row": environment_columns(environment, spec["environmentDigest"]),
    }


def protocol_columns(protocol: Mapping[str, Any], known_digest: str | None = None) -> dict[str, Any]:
    """``known_digest``: the protocol's digest when already checked (a run's protocolDigest)."""
    return {
        "protocol_digest": known_digest or digest(protocol),
        "name": protocol["metadata"].get("name"),
        "family": (protocol["spec"].get("comparability") or {}).get("family"),
        "manifest": protocol,
    }


def environment_columns(environment: Mapping[str, Any], known_digest: str | None = None) -> dict[str, Any]:
    hardware = environment["spec"].get("hardware") or {}
    return {
        "environment_digest": known_digest or digest(environment),
        "name": environment["metadata"].get("name"),
        "hardware_vendor": hardware.get("vendor"),
        "hardware_model": hardware.get("product"),
        "hardware_architecture": hardware.get("architecture"),
        "manifest": environment,
    }


# Export-row columns of a run that restate the manifest: each must agree with it on the way in.
_RUN_RESTATED = {
    "runDigest": "run_digest",
    "protocolKey": "protocol_key",
    "environmentKey": "environment_key",
    "status": "status",
    "observedAt": "observed_at",
    "primaryMetric": "primary_metric",
    "primaryStatistic": "primary_statistic",
    "primaryUnit": "primary_unit",
    "primaryValue": "primary_value",
    "sampleCount": "sample_count",
    "hardwareVendor": "hardware_vendor",
    "hardwareModel": "hardware_model",
    "hardwareArchitecture": "hardware_architecture",
}


# Summary columns whose absence the public exporter may also spell "none" (a run with no primary
# metric: failed runs and the like); the public schema allows both, so both mean the same fact.
_NONE_MEANS_ABSENT = frozenset({"primaryMetric", "primaryStatistic", "primaryUnit"})


def same_restated(key: str, stated: Any, recomputed: Any) -> bool:
    """Whether a row's restated value says what the manifest says: absent, null and (where the
    public export writes it) ``"none"`` are one fact; anything else must be equal."""
    if key in _NONE_MEANS_ABSENT:
        stated = None if stated == "none" else stated
        recomputed = None if recomputed == "none" else recomputed
    return stated == recomputed


def catalog_run_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    """Columns of a ``benchmark_runs`` row; every restated digest and value is checked."""
    columns = run_columns(row.get("manifest"))
    for key, column in _RUN_RESTATED.items():
        if key in row and not same_restated(key, row[key], columns[column]):
            what = "digest mismatch" if key.endswith(("Digest", "Key")) else "does not match the manifest"
            raise RowError(key, f"{what}: the file says {row[key]!r}, the manifest gives {columns[column]!r}")
    columns.update(
        id=require(row, "id"),
        source_id=row.get("sourceId"),
        published_at=row.get("publishedAt"),
        supersedes_id=row.get("supersedesId"),
        # a retraction the file states becomes a ``retracted`` event (see Writer._write_runs)
        stated_retraction=(row["retractedAt"], row.get("retractionReason")) if row.get("retractedAt") else None,
        has_raw_evidence=optional(row, "hasRawEvidence", bool, columns["has_raw_evidence"]),
        export_row=export_row(row),
        # stated links: checked against the digests once the rows they name are known
        stated_workload_id=optional(row, "workloadId"),
        stated_implementation_id=optional(row, "implementationId"),
        stated_keys={k: row.get(k) for k in ("correctnessKey", "comparisonKey")},
    )
    return columns
