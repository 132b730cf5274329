"""Covering indexes for ranking reads: a group's runs, and a workload's comparison keys
(models in kernelindex/store/tables.py). Measured with EXPLAIN QUERY PLAN: both reads become
index-only (COVERING INDEX) instead of one table row lookup per run.

Revision ID: 0200_rank_indexes
Revises: 0100_evidence
"""

from alembic import op

revision = "0200_rank_indexes"
down_revision = "0100_evidence"
branch_labels = None
depends_on = None

RANK_COVER = [
    "comparison_key",
    "status",
    "primary_value",
    "primary_metric",
    "primary_statistic",
    "primary_unit",
    "observed_at",
    "retracted_at",
    "has_raw_evidence",
    "id",
    "run_digest",
]


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_rank_cover", RANK_COVER, unique=False)
        batch_op.create_index("ix_runs_workload_key", ["workload_id", "comparison_key"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_workload_key")
        batch_op.drop_index("ix_runs_rank_cover")
