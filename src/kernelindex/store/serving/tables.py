"""Tables of the serving side (LLM serving results), apart from kernel runs (revision 0400_serving).

Same shape as the kernel tables: typed columns to filter and rank on, the record in ``manifest``,
the export row as it came in ``export_row`` (so an export is a plain read), ``seq`` for arrival
order. Serving runs keep the cohort key the public site computes (``records.serving_keys``).
"""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Column, Float, ForeignKey, Integer, String, Table, Text, UniqueConstraint

from kernelindex.store.tables import DIGEST, ID, TIME, metadata


def _seq() -> Column:
    return Column("seq", Integer, primary_key=True, autoincrement=True)


def _record_columns() -> list[Column]:
    return [
        Column("manifest", JSON, nullable=False),
        Column("created_at", TIME),
        Column("export_row", JSON, nullable=False),
    ]


model_revisions = Table(
    "model_revisions",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("slug", String(200), nullable=False, index=True),
    Column("model_digest", DIGEST, nullable=False, unique=True),
    Column("name", Text),
    Column("parameter_count", Integer),
    Column("context_length", Integer),
    Column("tokenizer", Text),
    Column("license", Text),
    *_record_columns(),
)

serving_stack_revisions = Table(
    "serving_stack_revisions",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("project_id", ID, ForeignKey("projects.id"), index=True),
    Column("slug", String(300), nullable=False),
    Column("stack_digest", DIGEST, nullable=False, unique=True),
    Column("name", Text),
    Column("version", Text),
    *_record_columns(),
)

serving_configurations = Table(
    "serving_configurations",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("stack_revision_id", ID, ForeignKey("serving_stack_revisions.id"), index=True),
    Column("configuration_digest", DIGEST, nullable=False, unique=True),
    Column("dtype", String(60)),
    Column("quantization", String(120)),
    Column("tensor_parallel", Integer),
    Column("summary", Text),
    *_record_columns(),
)

serving_workloads = Table(
    "serving_workloads",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("workload_digest", DIGEST, nullable=False, unique=True),
    Column("slug", String(200), nullable=False, index=True),
    Column("name", Text),
    Column("streaming", Boolean),
    Column("load_generation", String(60)),
    *_record_columns(),
)

serving_runs = Table(
    "serving_runs",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("run_digest", DIGEST, nullable=False, unique=True),
    Column("model_revision_id", ID, ForeignKey("model_revisions.id"), index=True),
    Column("configuration_id", ID, ForeignKey("serving_configurations.id"), index=True),
    Column("workload_id", ID, ForeignKey("serving_workloads.id"), index=True),
    Column("source_id", ID, ForeignKey("sources.id"), index=True),
    Column("status", String(40), nullable=False),
    Column("observed_at", TIME),
    Column("published_at", TIME),
    Column("cohort_key", DIGEST, nullable=False, index=True),
    Column("protocol_key", Text, nullable=False),
    Column("quality_policy", String(120)),
    Column("metric_set_key", Text, nullable=False),
    Column("scenario", String(60)),
    Column("accelerator_vendor", String(60)),
    Column("accelerator_model", String(300), index=True),
    Column("accelerator_count", Integer),
    Column("node_count", Integer),
    Column("total_accelerators", Integer),
    Column("supersedes_id", ID),
    Column("retracted_at", TIME),
    Column("retraction_reason", Text),
    Column("manifest", JSON, nullable=False),
    Column("export_row", JSON, nullable=False),
)

serving_measurements = Table(
    "serving_measurements",
    metadata,
    _seq(),
    Column("id", ID, nullable=False, unique=True),
    Column("run_id", ID, ForeignKey("serving_runs.id"), nullable=False, index=True),
    Column("metric", String(60), nullable=False),
    Column("statistic", String(60), nullable=False),
    Column("unit", String(40), nullable=False),
    Column("value", Float, nullable=False),
    Column("sample_count", Integer),
    Column("export_row", JSON, nullable=False),
    UniqueConstraint("run_id", "metric", "statistic", "unit"),
)

# export table name -> table, parents before children (the order a catalog export lists them)
SERVING_EXPORT_ORDER = [
    ("model_revisions", model_revisions),
    ("serving_stack_revisions", serving_stack_revisions),
    ("serving_configurations", serving_configurations),
    ("serving_workloads", serving_workloads),
    ("serving_runs", serving_runs),
    ("serving_measurements", serving_measurements),
]
