"""The rerun queue: runner keys, rerun requests and their leases
(models in kernelindex/store/queue/tables.py).

Revision ID: 0500_rerun_queue
Revises: 0400_serving_tables
"""

import sqlalchemy as sa
from alembic import op

revision = "0500_rerun_queue"
down_revision = "0600_source_refresh"
branch_labels = None
depends_on = None

DIGEST = sa.String(length=71)
ID = sa.String(length=36)
TIME = sa.String(length=32)


def upgrade() -> None:
    op.create_table(
        "runner_keys",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key_id", DIGEST, nullable=False),
        sa.Column("public_key", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("machine", sa.String(length=300), nullable=False),
        sa.Column("hardware", sa.String(length=120), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("revoked_at", TIME, nullable=True),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_runner_keys")),
        sa.UniqueConstraint("key_id", name=op.f("uq_runner_keys_key_id")),
    )
    op.create_table(
        "rerun_requests",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", ID, nullable=False),
        sa.Column("problem_name", sa.String(length=300), nullable=False),
        sa.Column("problem_digest", DIGEST, nullable=False),
        sa.Column("solution_name", sa.String(length=300), nullable=False),
        sa.Column("solution_digest", DIGEST, nullable=False),
        sa.Column("document_digest", DIGEST, nullable=False),
        sa.Column("entry_point", sa.String(length=300), nullable=False),
        sa.Column("hardware", sa.String(length=120), nullable=False),
        sa.Column("replicas", sa.Integer(), nullable=False),
        sa.Column("protocol", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("submitted_by", sa.String(length=200), nullable=False),
        sa.Column("rerun_of", DIGEST, nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.Column("finished_at", TIME, nullable=True),
        sa.Column("failure", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_rerun_requests")),
        sa.UniqueConstraint("id", name=op.f("uq_rerun_requests_id")),
    )
    with op.batch_alter_table("rerun_requests", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rerun_requests_solution_digest"), ["solution_digest"], unique=False)
        batch_op.create_index("ix_rerun_requests_state_hardware", ["state", "hardware", "seq"], unique=False)
    op.create_table(
        "rerun_leases",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", ID, nullable=False),
        sa.Column("request_id", ID, nullable=False),
        sa.Column("runner_key_id", DIGEST, nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("leased_at", TIME, nullable=False),
        sa.Column("heartbeat_at", TIME, nullable=False),
        sa.Column("expires_at", TIME, nullable=False),
        sa.Column("finished_at", TIME, nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("suite_run_digest", DIGEST, nullable=True),
        sa.Column("run_digests", sa.JSON(), nullable=True),
        sa.Column("timings", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["request_id"], ["rerun_requests.id"], name=op.f("fk_rerun_leases_request_id_rerun_requests")
        ),
        sa.ForeignKeyConstraint(
            ["runner_key_id"], ["runner_keys.key_id"], name=op.f("fk_rerun_leases_runner_key_id_runner_keys")
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_rerun_leases")),
        sa.UniqueConstraint("id", name=op.f("uq_rerun_leases_id")),
    )
    with op.batch_alter_table("rerun_leases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rerun_leases_request_id"), ["request_id"], unique=False)
        batch_op.create_index("ix_rerun_leases_state_expires", ["state", "expires_at"], unique=False)


def downgrade() -> None:
    op.drop_table("rerun_leases")
    op.drop_table("rerun_requests")
    op.drop_table("runner_keys")
