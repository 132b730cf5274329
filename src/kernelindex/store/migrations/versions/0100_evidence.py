"""Evidence tables: attestations, signatures, signing keys, API keys, correction requests
(models in kernelindex/store/evidence/tables.py).

Revision ID: 0100_evidence
Revises: 0001
Create Date: 2026-11-29 15:42:14.543130
"""

import sqlalchemy as sa
from alembic import op

revision = "0100_evidence"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key_id", sa.String(length=16), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("daily_limit", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.Column("revoked_at", sa.String(length=32), nullable=True),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_id", name=op.f("uq_api_keys_key_id")),
    )
    op.create_table(
        "signing_keys",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key_id", sa.String(length=71), nullable=False),
        sa.Column("public_key", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_signing_keys")),
        sa.UniqueConstraint("key_id", name=op.f("uq_signing_keys_key_id")),
    )
    op.create_table(
        "signatures",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("record_digest", sa.String(length=71), nullable=False),
        sa.Column("record_kind", sa.String(length=60), nullable=False),
        sa.Column("key_id", sa.String(length=71), nullable=False),
        sa.Column("envelope", sa.JSON(), nullable=False),
        sa.Column("signed_at", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["key_id"], ["signing_keys.key_id"], name=op.f("fk_signatures_key_id_signing_keys")),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_signatures")),
        sa.UniqueConstraint("record_digest", "key_id", name=op.f("uq_signatures_record_digest_key_id")),
    )
    with op.batch_alter_table("signatures", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_signatures_record_digest"), ["record_digest"], unique=False)

    op.create_table(
        "attestations",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("attestation_digest", sa.String(length=71), nullable=False),
        sa.Column("run_digest", sa.String(length=71), nullable=False),
        sa.Column("claim", sa.String(length=40), nullable=False),
        sa.Column("attester_name", sa.String(length=200), nullable=False),
        sa.Column("signer_key_id", sa.String(length=71), nullable=True),
        sa.Column("reproduction_run_digest", sa.String(length=71), nullable=True),
        sa.Column("api_key_id", sa.String(length=16), nullable=True),
        sa.Column("observed_at", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["api_key_id"], ["api_keys.key_id"], name=op.f("fk_attestations_api_key_id_api_keys")),
        sa.ForeignKeyConstraint(
            ["reproduction_run_digest"], ["runs.run_digest"], name=op.f("fk_attestations_reproduction_run_digest_runs")
        ),
        sa.ForeignKeyConstraint(["run_digest"], ["runs.run_digest"], name=op.f("fk_attestations_run_digest_runs")),
        sa.ForeignKeyConstraint(
            ["signer_key_id"], ["signing_keys.key_id"], name=op.f("fk_attestations_signer_key_id_signing_keys")
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_attestations")),
        sa.UniqueConstraint("attestation_digest", name=op.f("uq_attestations_attestation_digest")),
        sa.UniqueConstraint("id", name=op.f("uq_attestations_id")),
    )
    with op.batch_alter_table("attestations", schema=None) as batch_op:
        batch_op.create_index("ix_attestations_key_created", ["api_key_id", "created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_attestations_run_digest"), ["run_digest"], unique=False)

    op.create_table(
        "correction_requests",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("run_digest", sa.String(length=71), nullable=False),
        sa.Column("problem", sa.String(length=40), nullable=False),
        sa.Column("details", sa.Text(), nullable=False),
        sa.Column("requested_action", sa.String(length=20), nullable=False),
        sa.Column("api_key_id", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("resolution", sa.Text(), nullable=True),
        sa.Column("resolution_run_digest", sa.String(length=71), nullable=True),
        sa.Column("resolved_at", sa.String(length=32), nullable=True),
        sa.ForeignKeyConstraint(
            ["api_key_id"], ["api_keys.key_id"], name=op.f("fk_correction_requests_api_key_id_api_keys")
        ),
        sa.ForeignKeyConstraint(
            ["run_digest"], ["runs.run_digest"], name=op.f("fk_correction_requests_run_digest_runs")
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_correction_requests")),
        sa.UniqueConstraint("id", name=op.f("uq_correction_requests_id")),
    )
    with op.batch_alter_table("correction_requests", schema=None) as batch_op:
        batch_op.create_index("ix_correction_requests_key_created", ["api_key_id", "created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_correction_requests_run_digest"), ["run_digest"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("correction_requests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_correction_requests_run_digest"))
        batch_op.drop_index("ix_correction_requests_key_created")

    op.drop_table("correction_requests")
    with op.batch_alter_table("attestations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_attestations_run_digest"))
        batch_op.drop_index("ix_attestations_key_created")

    op.drop_table("attestations")
    with op.batch_alter_table("signatures", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_signatures_record_digest"))

    op.drop_table("signatures")
    op.drop_table("signing_keys")
    op.drop_table("api_keys")
