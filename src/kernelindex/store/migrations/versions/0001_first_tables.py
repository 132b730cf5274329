"""First tables: sources, projects, operations (+ aliases), workloads, implementations, protocols,
environments, runs, measurements, artifacts (+ run links), record events, foreign rows
(models in kernelindex/store/tables.py).

Revision ID: 0001
Revises: (none)
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "artifacts",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("content_digest", sa.String(length=71), nullable=False),
        sa.Column("kind", sa.String(length=60), nullable=False),
        sa.Column("media_type", sa.String(length=120), nullable=True),
        sa.Column("size_bytes", sa.Integer(), nullable=True),
        sa.Column("storage", sa.String(length=40), nullable=True),
        sa.Column("uri", sa.Text(), nullable=True),
        sa.Column("license", sa.Text(), nullable=True),
        sa.Column("content", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", sa.String(length=32), nullable=True),
        sa.Column("export_row", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_artifacts")),
        sa.UniqueConstraint("content_digest", name=op.f("uq_artifacts_content_digest")),
        sa.UniqueConstraint("id", name=op.f("uq_artifacts_id")),
    )
    op.create_table(
        "environments",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("environment_digest", sa.String(length=71), nullable=False),
        sa.Column("name", sa.String(length=300), nullable=True),
        sa.Column("hardware_vendor", sa.String(length=60), nullable=True),
        sa.Column("hardware_model", sa.String(length=200), nullable=True),
        sa.Column("hardware_architecture", sa.String(length=60), nullable=True),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_environments")),
        sa.UniqueConstraint("environment_digest", name=op.f("uq_environments_environment_digest")),
    )
    op.create_table(
        "foreign_rows",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("table_name", sa.String(length=120), nullable=False),
        sa.Column("row_digest", sa.String(length=71), nullable=False),
        sa.Column("row", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_foreign_rows")),
        sa.UniqueConstraint("table_name", "row_digest", name=op.f("uq_foreign_rows_table_name_row_digest")),
    )
    op.create_table(
        "operations",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("semantic_digest", sa.String(length=71), nullable=False),
        sa.Column("slug", sa.String(length=300), nullable=False),
        sa.Column("family", sa.String(length=200), nullable=True),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=True),
        sa.Column("supersedes_id", sa.String(length=36), nullable=True),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=True),
        sa.Column("export_row", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_operations")),
        sa.UniqueConstraint("id", name=op.f("uq_operations_id")),
        sa.UniqueConstraint("semantic_digest", name=op.f("uq_operations_semantic_digest")),
    )
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_operations_family"), ["family"], unique=False)
        batch_op.create_index(batch_op.f("ix_operations_slug"), ["slug"], unique=False)

    op.create_table(
        "projects",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("slug", sa.String(length=300), nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=True),
        sa.Column("export_row", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_projects")),
        sa.UniqueConstraint("id", name=op.f("uq_projects_id")),
        sa.UniqueConstraint("slug", name=op.f("uq_projects_slug")),
    )
    op.create_table(
        "protocols",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("protocol_digest", sa.String(length=71), nullable=False),
        sa.Column("name", sa.String(length=300), nullable=True),
        sa.Column("family", sa.String(length=200), nullable=True),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_protocols")),
        sa.UniqueConstraint("protocol_digest", name=op.f("uq_protocols_protocol_digest")),
    )
    op.create_table(
        "sources",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("slug", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("policy", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.String(length=32), nullable=True),
        sa.Column("export_row", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_sources")),
        sa.UniqueConstraint("id", name=op.f("uq_sources_id")),
        sa.UniqueConstraint("slug", name=op.f("uq_sources_slug")),
    )
    op.create_table(
        "implementations",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("implementation_digest", sa.String(length=71), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=True),
        sa.Column("operation_id", sa.String(length=36), nullable=True),
        sa.Column("slug", sa.String(length=300), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("language", sa.String(length=60), nullable=True),
        sa.Column("supersedes_id", sa.String(length=36), nullable=True),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=True),
        sa.Column("export_row", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"], name=op.f("fk_implementations_operation_id_operations")
        ),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], name=op.f("fk_implementations_project_id_projects")),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_implementations")),
        sa.UniqueConstraint("id", name=op.f("uq_implementations_id")),
        sa.UniqueConstraint("implementation_digest", name=op.f("uq_implementations_implementation_digest")),
    )
    with op.batch_alter_table("implementations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_implementations_operation_id"), ["operation_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_implementations_project_id"), ["project_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_implementations_slug"), ["slug"], unique=False)

    op.create_table(
        "operation_aliases",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("operation_id", sa.String(length=36), nullable=False),
        sa.Column("alias", sa.String(length=300), nullable=False),
        sa.Column("export_row", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"], name=op.f("fk_operation_aliases_operation_id_operations")
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_operation_aliases")),
        sa.UniqueConstraint("operation_id", "alias", name=op.f("uq_operation_aliases_operation_id_alias")),
    )
    with op.batch_alter_table("operation_aliases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_operation_aliases_alias"), ["alias"], unique=False)

    op.create_table(
        "workloads",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workload_digest", sa.String(length=71), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("operation_id", sa.String(length=36), nullable=True),
        sa.Column("operation_digest", sa.String(length=71), nullable=True),
        sa.Column("correctness_key", sa.String(length=71), nullable=False),
        sa.Column("name", sa.String(length=300), nullable=True),
        sa.Column("shape_summary", sa.Text(), nullable=True),
        sa.Column("dtypes", sa.JSON(), nullable=True),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=True),
        sa.Column("export_row", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["operation_id"], ["operations.id"], name=op.f("fk_workloads_operation_id_operations")),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_workloads")),
        sa.UniqueConstraint("id", name=op.f("uq_workloads_id")),
        sa.UniqueConstraint("workload_digest", name=op.f("uq_workloads_workload_digest")),
    )
    with op.batch_alter_table("workloads", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_workloads_operation_id"), ["operation_id"], unique=False)

    op.create_table(
        "runs",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("run_digest", sa.String(length=71), nullable=False),
        sa.Column("source_id", sa.String(length=36), nullable=True),
        sa.Column("source_slug", sa.String(length=200), nullable=True),
        sa.Column("implementation_digest", sa.String(length=71), nullable=False),
        sa.Column("implementation_id", sa.String(length=36), nullable=True),
        sa.Column("workload_digest", sa.String(length=71), nullable=False),
        sa.Column("workload_id", sa.String(length=36), nullable=True),
        sa.Column("operation_digest", sa.String(length=71), nullable=True),
        sa.Column("protocol_key", sa.String(length=71), nullable=False),
        sa.Column("environment_key", sa.String(length=71), nullable=False),
        sa.Column("correctness_key", sa.String(length=71), nullable=True),
        sa.Column("comparison_key", sa.String(length=71), nullable=True),
        sa.Column("status", sa.String(length=40), nullable=False),
        sa.Column("observed_at", sa.String(length=32), nullable=True),
        sa.Column("published_at", sa.String(length=32), nullable=True),
        sa.Column("primary_metric", sa.String(length=60), nullable=True),
        sa.Column("primary_statistic", sa.String(length=60), nullable=True),
        sa.Column("primary_unit", sa.String(length=20), nullable=True),
        sa.Column("primary_value", sa.Float(), nullable=True),
        sa.Column("sample_count", sa.Integer(), nullable=True),
        sa.Column("hardware_vendor", sa.String(length=60), nullable=True),
        sa.Column("hardware_model", sa.String(length=200), nullable=True),
        sa.Column("hardware_architecture", sa.String(length=60), nullable=True),
        sa.Column("supersedes_id", sa.String(length=36), nullable=True),
        sa.Column("retracted_at", sa.String(length=32), nullable=True),
        sa.Column("retraction_reason", sa.Text(), nullable=True),
        sa.Column("runner_id", sa.String(length=200), nullable=True),
        sa.Column("runner_host", sa.String(length=300), nullable=True),
        sa.Column("has_raw_evidence", sa.Boolean(), nullable=False),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.Column("export_row", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["environment_key"], ["environments.environment_digest"], name=op.f("fk_runs_environment_key_environments")
        ),
        sa.ForeignKeyConstraint(
            ["implementation_id"], ["implementations.id"], name=op.f("fk_runs_implementation_id_implementations")
        ),
        sa.ForeignKeyConstraint(
            ["protocol_key"], ["protocols.protocol_digest"], name=op.f("fk_runs_protocol_key_protocols")
        ),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"], name=op.f("fk_runs_source_id_sources")),
        sa.ForeignKeyConstraint(["workload_id"], ["workloads.id"], name=op.f("fk_runs_workload_id_workloads")),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_runs")),
        sa.UniqueConstraint("id", name=op.f("uq_runs_id")),
        sa.UniqueConstraint("run_digest", name=op.f("uq_runs_run_digest")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_cohort_rank", ["comparison_key", "primary_value"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_comparison_key"), ["comparison_key"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_hardware_model"), ["hardware_model"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_implementation_digest"), ["implementation_digest"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_implementation_id"), ["implementation_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_operation_digest"), ["operation_digest"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_runner_id"), ["runner_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_source_id"), ["source_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_source_slug"), ["source_slug"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_supersedes_id"), ["supersedes_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_workload_digest"), ["workload_digest"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_workload_id"), ["workload_id"], unique=False)

    op.create_table(
        "measurements",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("metric", sa.String(length=60), nullable=False),
        sa.Column("statistic", sa.String(length=60), nullable=False),
        sa.Column("unit", sa.String(length=20), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("sample_count", sa.Integer(), nullable=True),
        sa.Column("export_row", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_measurements_run_id_runs")),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_measurements")),
        sa.UniqueConstraint("id", name=op.f("uq_measurements_id")),
        sa.UniqueConstraint(
            "run_id", "metric", "statistic", "unit", name=op.f("uq_measurements_run_id_metric_statistic_unit")
        ),
    )
    with op.batch_alter_table("measurements", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_measurements_run_id"), ["run_id"], unique=False)

    op.create_table(
        "record_events",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("comparison_key", sa.String(length=71), nullable=True),
        sa.Column("run_id", sa.String(length=36), nullable=True),
        sa.Column("previous_run_id", sa.String(length=36), nullable=True),
        sa.Column("policy_version", sa.String(length=60), nullable=True),
        sa.Column("cause", sa.String(length=60), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("at", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=True),
        sa.Column("export_row", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["previous_run_id"], ["runs.id"], name=op.f("fk_record_events_previous_run_id_runs")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_record_events_run_id_runs")),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_record_events")),
        sa.UniqueConstraint("id", name=op.f("uq_record_events_id")),
    )
    with op.batch_alter_table("record_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_record_events_comparison_key"), ["comparison_key"], unique=False)
        batch_op.create_index(batch_op.f("ix_record_events_run_id"), ["run_id"], unique=False)

    op.create_table(
        "run_artifacts",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("artifact_id", sa.String(length=36), nullable=False),
        sa.Column("role", sa.String(length=60), nullable=False),
        sa.ForeignKeyConstraint(["artifact_id"], ["artifacts.id"], name=op.f("fk_run_artifacts_artifact_id_artifacts")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_run_artifacts_run_id_runs")),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_run_artifacts")),
        sa.UniqueConstraint("run_id", "artifact_id", "role", name=op.f("uq_run_artifacts_run_id_artifact_id_role")),
    )
    with op.batch_alter_table("run_artifacts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_run_artifacts_artifact_id"), ["artifact_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_run_artifacts_run_id"), ["run_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("run_artifacts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_artifacts_run_id"))
        batch_op.drop_index(batch_op.f("ix_run_artifacts_artifact_id"))

    op.drop_table("run_artifacts")
    with op.batch_alter_table("record_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_record_events_run_id"))
        batch_op.drop_index(batch_op.f("ix_record_events_comparison_key"))

    op.drop_table("record_events")
    with op.batch_alter_table("measurements", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_measurements_run_id"))

    op.drop_table("measurements")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_workload_id"))
        batch_op.drop_index(batch_op.f("ix_runs_workload_digest"))
        batch_op.drop_index(batch_op.f("ix_runs_supersedes_id"))
        batch_op.drop_index(batch_op.f("ix_runs_status"))
        batch_op.drop_index(batch_op.f("ix_runs_source_slug"))
        batch_op.drop_index(batch_op.f("ix_runs_source_id"))
        batch_op.drop_index(batch_op.f("ix_runs_runner_id"))
        batch_op.drop_index(batch_op.f("ix_runs_operation_digest"))
        batch_op.drop_index(batch_op.f("ix_runs_implementation_id"))
        batch_op.drop_index(batch_op.f("ix_runs_implementation_digest"))
        batch_op.drop_index(batch_op.f("ix_runs_hardware_model"))
        batch_op.drop_index(batch_op.f("ix_runs_comparison_key"))
        batch_op.drop_index("ix_runs_cohort_rank")

    op.drop_table("runs")
    with op.batch_alter_table("workloads", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workloads_operation_id"))

    op.drop_table("workloads")
    with op.batch_alter_table("operation_aliases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_operation_aliases_alias"))

    op.drop_table("operation_aliases")
    with op.batch_alter_table("implementations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_implementations_slug"))
        batch_op.drop_index(batch_op.f("ix_implementations_project_id"))
        batch_op.drop_index(batch_op.f("ix_implementations_operation_id"))

    op.drop_table("implementations")
    op.drop_table("sources")
    op.drop_table("protocols")
    op.drop_table("projects")
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_operations_slug"))
        batch_op.drop_index(batch_op.f("ix_operations_family"))

    op.drop_table("operations")
    op.drop_table("foreign_rows")
    op.drop_table("environments")
    op.drop_table("artifacts")
