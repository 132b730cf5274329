"""Indexes found by profiling search answers and operation pages at 10× the export (issue 12;
models in kernelindex/store/tables.py):

- ``ix_runs_environment_workload``: a GPU-only query (``H100``) counts the runs per operation under
  some environments (and sources); the index answers it without reading any run row.
- ``ix_runs_case_sweep``: an operation page's sweep chart takes, per case, hardware, metric and
  implementation, the lowest and highest value of the passed runs; the index holds every column,
  in the grouping's order, so the read is index-only and needs no sort.
- ``ix_runs_workload_key`` widened from (workload, comparison key) with hardware, architecture,
  source and status: a search counts an operation's runs per workload, group, hardware and source
  from it alone; the old prefix still answers "a workload's comparison keys".

Revision ID: 0800_search_indexes
Revises: 0700_store_generation
"""

from alembic import op

revision = "0800_search_indexes"
down_revision = "0700_store_generation"
branch_labels = None
depends_on = None

ENVIRONMENT_WORKLOAD = ["environment_key", "source_slug", "workload_id"]
CASE_SWEEP = [
    "workload_id",
    "hardware_model",
    "primary_metric",
    "primary_statistic",
    "primary_unit",
    "implementation_digest",
    "implementation_id",
    "status",
    "primary_value",
    "id",
]


WORKLOAD_KEY = ["workload_id", "comparison_key"]
WORKLOAD_GROUPS = [*WORKLOAD_KEY, "hardware_model", "hardware_architecture", "source_slug", "status"]


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_workload_key")
        batch_op.create_index("ix_runs_workload_key", WORKLOAD_GROUPS, unique=False)
        batch_op.create_index("ix_runs_environment_workload", ENVIRONMENT_WORKLOAD, unique=False)
        batch_op.create_index("ix_runs_case_sweep", CASE_SWEEP, unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_case_sweep")
        batch_op.drop_index("ix_runs_environment_workload")
        batch_op.drop_index("ix_runs_workload_key")
        batch_op.create_index("ix_runs_workload_key", WORKLOAD_KEY, unique=False)
