"""The store's tables: typed columns to filter and rank on, the full records beside them as JSON.

Every table keeps ``export_row``: the row exactly as a catalog export writes it (key order kept,
unknown columns kept), with the record itself left out (``"manifest": null``) because it lives
once, in ``manifest``. An export is therefore a plain read, and nothing a source said is lost.

Rows are append-only. The one update the store allows is filling a *pending link*: a run keeps
the digests of the workload and implementation it refers to, and ``workload_id`` /
``implementation_id`` (and the keys that need the workload) are filled when those records
arrive. ``seq`` keeps arrival order so an export lists rows in the order they came.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

ID = String(36)  # UUIDv7 text, as the public exports write it
DIGEST = String(71)  # "sha256:" + 64 hex
TIME = String(32)  # UTC ISO-8601 text ("2026-05-27T05:56:21.957Z"); sorts as time does


def _seq() -> Column:
    return Column("seq", Integer, primary_key=True, autoincrement=True)


sources = Table(
    "sources",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("slug", String(200), nullable=False, unique=True),
    Column("kind", String(40), nullable=False),  # leaderboard, dataset, controlled, ...
    Column("name", Text, nullable=False),
    Column("policy", JSON),
    Column("created_at", TIME),
    Column("export_row", JSON, nullable=False),
)

projects = Table(
    "projects",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("slug", String(300), nullable=False, unique=True),
    Column("name", Text),
    Column("manifest", JSON, nullable=False),
    Column("created_at", TIME),
    Column("export_row", JSON, nullable=False),
)

operations = Table(
    "operations",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("semantic_digest", DIGEST, nullable=False, unique=True),
    Column("slug", String(300), nullable=False, index=True),
    Column("family", String(200), index=True),
    Column("name", Text),
    Column("tags", JSON),
    Column("supersedes_id", ID),
    Column("manifest", JSON, nullable=False),
    Column("created_at", TIME),
    Column("export_row", JSON, nullable=False),
)

operation_aliases = Table(
    "operation_aliases",
    metadata,
    _seq(),
    Column("operation_id", ID, ForeignKey("operations.id"), nullable=False),
    Column("alias", String(300), nullable=False, index=True),
    Column("export_row", JSON, nullable=False),
    UniqueConstraint("operation_id", "alias"),
)

workloads = Table(
    "workloads",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("workload_digest", DIGEST, nullable=False, unique=True),
    Column("kind", String(40), nullable=False),  # WorkloadCase or WorkloadSuite
    Column("operation_id", ID, ForeignKey("operations.id"), index=True),
    Column("operation_digest", DIGEST),  # spec.operationSpecDigest, the operation's semanticDigest
    Column("correctness_key", DIGEST, nullable=False),
    Column("name", String(300)),
    Column("shape_summary", Text),
    Column("dtypes", JSON),
    Column("manifest", JSON, nullable=False),
    Column("created_at", TIME),
    Column("export_row", JSON, nullable=False),
)

implementations = Table(
    "implementations",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("implementation_digest", DIGEST, nullable=False, unique=True),
    Column("project_id", ID, ForeignKey("projects.id"), index=True),
    Column("operation_id", ID, ForeignKey("operations.id"), index=True),
    Column("slug", String(300), index=True),
    Column("title", Text),
    Column("language", String(60)),
    Column("supersedes_id", ID),
    Column("manifest", JSON, nullable=False),
    Column("created_at", TIME),
    Column("export_row", JSON, nullable=False),
)

protocols = Table(
    "protocols",
    metadata,
    _seq(),
    Column("protocol_digest", DIGEST, nullable=False, unique=True),
    Column("name", String(300)),
    Column("family", String(200)),  # spec.comparability.family
    Column("manifest", JSON, nullable=False),
)

environments = Table(
    "environments",
    metadata,
    _seq(),
    Column("environment_digest", DIGEST, nullable=False, unique=True),
    Column("name", String(300)),
    Column("hardware_vendor", String(60)),
    Column("hardware_model", String(200)),
    Column("hardware_architecture", String(60)),
    Column("manifest", JSON, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("run_digest", DIGEST, nullable=False, unique=True),
    Column("source_id", ID, ForeignKey("sources.id"), index=True),
    Column("source_slug", String(200), index=True),  # spec.sourceNative.source; links source_id
    Column("implementation_digest", DIGEST, nullable=False, index=True),
    Column("implementation_id", ID, ForeignKey("implementations.id"), index=True),  # pending: NULL
    Column("workload_digest", DIGEST, nullable=False, index=True),
    Column("workload_id", ID, ForeignKey("workloads.id"), index=True),  # pending: NULL
    Column("operation_digest", DIGEST, index=True),  # from the workload; NULL while pending
    Column("protocol_key", DIGEST, ForeignKey("protocols.protocol_digest"), nullable=False),
    Column("environment_key", DIGEST, ForeignKey("environments.environment_digest"), nullable=False),
    Column("correctness_key", DIGEST),  # needs the workload; NULL while pending
    Column("comparison_key", DIGEST, index=True),  # needs the workload; NULL while pending
    Column("status", String(40), nullable=False, index=True),
    Column("observed_at", TIME),
    Column("published_at", TIME),
    Column("primary_metric", String(60)),
    Column("primary_statistic", String(60)),
    Column("primary_unit", String(20)),
    Column("primary_value", Float),
    Column("sample_count", Integer),
    Column("hardware_vendor", String(60)),
    Column("hardware_model", String(200), index=True),
    Column("hardware_architecture", String(60)),
    Column("supersedes_id", ID, index=True),
    Column("runner_id", String(200), index=True),  # public-key fingerprint of a controlled runner
    Column("runner_host", String(300)),
    Column("has_raw_evidence", Boolean, nullable=False, default=False),
    Column("manifest", JSON, nullable=False),  # {run, protocol, environment}, exactly as received
    Column("export_row", JSON, nullable=False),
)

measurements = Table(
    "measurements",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("run_id", ID, ForeignKey("runs.id"), nullable=False, index=True),
    Column("metric", String(60), nullable=False),
    Column("statistic", String(60), nullable=False),
    Column("unit", String(20), nullable=False),
    Column("value", Float, nullable=False),
    Column("sample_count", Integer),
    Column("export_row", JSON, nullable=False),
    UniqueConstraint("run_id", "metric", "statistic", "unit"),
)

artifacts = Table(
    "artifacts",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("content_digest", DIGEST, nullable=False, unique=True),
    Column("kind", String(60), nullable=False),  # source, raw_samples, log, ...
    Column("media_type", String(120)),
    Column("size_bytes", Integer),
    Column("storage", String(40)),  # inline (content here) or external (uri)
    Column("uri", Text),
    Column("license", Text),
    Column("content", LargeBinary),  # the bytes themselves when we hold them (raw timing samples)
    Column("created_at", TIME),
    Column("export_row", JSON, nullable=False),
)

run_artifacts = Table(
    "run_artifacts",
    metadata,
    _seq(),
    Column("run_id", ID, ForeignKey("runs.id"), nullable=False, index=True),
    Column("artifact_id", ID, ForeignKey("artifacts.id"), nullable=False, index=True),
    Column("role", String(60), nullable=False),  # evidence role: rawSamples, logs, harness, ...
    UniqueConstraint("run_id", "artifact_id", "role"),
)

record_events = Table(
    "record_events",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("comparison_key", DIGEST, index=True),
    Column("run_id", ID, ForeignKey("runs.id"), index=True),
    Column("previous_run_id", ID, ForeignKey("runs.id")),
    Column("policy_version", String(60)),
    Column("cause", String(60), nullable=False),  # new_run, retracted, superseded, ...
    Column("reason", Text),
    Column("at", TIME, nullable=False),
    Column("created_at", TIME),
    Column("export_row", JSON, nullable=False),
)

foreign_rows = Table(
    "foreign_rows",
    metadata,
    _seq(),
    Column("table_name", String(120), nullable=False),
    Column("row_digest", DIGEST, nullable=False),  # of the row's canonical JSON: idempotency
    Column("row", JSON, nullable=False),
    UniqueConstraint("table_name", "row_digest"),
)  # rows of export tables this store does not model (serving tables, newer tables), kept to re-export

Index("ix_runs_cohort_rank", runs.c.comparison_key, runs.c.primary_value)
# Ranking reads every run of a comparison group; this index holds every column they need, so the
# read never touches the wide rows (manifest, export_row). Added by migration 0200_rank_indexes;
# 0300_one_retraction dropped retracted_at from it (a retraction is a ``retracted`` event).
Index(
    "ix_runs_rank_cover",
    runs.c.comparison_key,
    runs.c.status,
    runs.c.primary_value,
    runs.c.primary_metric,
    runs.c.primary_statistic,
    runs.c.primary_unit,
    runs.c.observed_at,
    runs.c.has_raw_evidence,
    runs.c.id,
    runs.c.run_digest,
)
# A workload's comparison groups: (workload_id, comparison_key) answers "which keys" from the index alone;
# the rest (migration 0800_search_indexes) lets a search count runs per group, hardware and source from it.
Index(
    "ix_runs_workload_key",
    runs.c.workload_id,
    runs.c.comparison_key,
    runs.c.hardware_model,
    runs.c.hardware_architecture,
    runs.c.source_slug,
    runs.c.status,
)
# Retractions are few and read on every ranking (as ``retracted`` events): this finds them without
# scanning every event. Added by migration 0700_store_generation.
Index("ix_record_events_cause", record_events.c.cause)
# A GPU-only search counts runs per operation under some environments (and sources), and an
# operation page's sweep groups a case's passed runs by hardware, metric and implementation: both
# reads are index-only with these. Added by migration 0800_search_indexes.
Index("ix_runs_environment_workload", runs.c.environment_key, runs.c.source_slug, runs.c.workload_id)
Index(
    "ix_runs_case_sweep",
    runs.c.workload_id,
    runs.c.hardware_model,
    runs.c.primary_metric,
    runs.c.primary_statistic,
    runs.c.primary_unit,
    runs.c.implementation_digest,
    runs.c.implementation_id,
    runs.c.status,
    runs.c.primary_value,
    runs.c.id,
)
