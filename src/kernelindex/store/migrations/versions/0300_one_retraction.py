"""A retraction is one fact: a ``retracted`` row in record_events. The runs.retracted_at and
runs.retraction_reason columns (which only a catalog import ever filled) become events and go.

Revision ID: 0300_one_retraction
Revises: 0400_serving_tables (merged first; the ids only name the change)
"""

import sqlalchemy as sa
from alembic import op

from kernelindex.store.ids import uuid7

revision = "0300_one_retraction"
down_revision = "0400_serving_tables"
branch_labels = None
depends_on = None

DERIVED_FROM_RUN_ROW = "benchmark_runs.retractedAt"  # as kernelindex.store.writer marks such events
RANK_COVER_WITH = [
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
RANK_COVER = [c for c in RANK_COVER_WITH if c != "retracted_at"]


def _events_table() -> sa.TableClause:
    return sa.table(
        "record_events",
        sa.column("id"),
        sa.column("comparison_key"),
        sa.column("run_id"),
        sa.column("previous_run_id"),
        sa.column("policy_version"),
        sa.column("cause"),
        sa.column("reason"),
        sa.column("at"),
        sa.column("created_at"),
        sa.column("export_row", sa.JSON),
    )


def upgrade() -> None:
    conn = op.get_bind()
    runs = sa.table(
        "runs", sa.column("id"), sa.column("comparison_key"), sa.column("retracted_at"), sa.column("retraction_reason")
    )
    events = _events_table()
    already = set(conn.scalars(sa.select(events.c.run_id).where(events.c.cause == "retracted")))
    rows = []
    for run in conn.execute(sa.select(runs).where(runs.c.retracted_at.is_not(None))):
        if run.id in already:
            continue
        event_id = uuid7()
        export = {
            "id": event_id,
            "comparisonKey": run.comparison_key,
            "runId": run.id,
            "previousRunId": None,
            "policyVersion": None,
            "cause": "retracted",
            "reason": run.retraction_reason,
            "at": run.retracted_at,
            "createdAt": run.retracted_at,
            "derivedFrom": DERIVED_FROM_RUN_ROW,
        }
        rows.append(
            {
                "id": event_id,
                "comparison_key": run.comparison_key,
                "run_id": run.id,
                "previous_run_id": None,
                "policy_version": None,
                "cause": "retracted",
                "reason": run.retraction_reason,
                "at": run.retracted_at,
                "created_at": run.retracted_at,
                "export_row": export,
            }
        )
    if rows:
        op.bulk_insert(events, rows)
    # plain ALTERs (SQLite 3.35+ drops a column in place): a batch copy of ``runs`` would trip the
    # foreign keys that point at it
    op.drop_index("ix_runs_rank_cover", table_name="runs")
    op.drop_column("runs", "retraction_reason")
    op.drop_column("runs", "retracted_at")
    op.create_index("ix_runs_rank_cover", "runs", RANK_COVER, unique=False)


def downgrade() -> None:
    op.drop_index("ix_runs_rank_cover", table_name="runs")
    op.add_column("runs", sa.Column("retracted_at", sa.String(length=32), nullable=True))
    op.add_column("runs", sa.Column("retraction_reason", sa.Text(), nullable=True))
    op.create_index("ix_runs_rank_cover", "runs", RANK_COVER_WITH, unique=False)
    conn = op.get_bind()
    events = _events_table()
    runs = sa.table("runs", sa.column("id"), sa.column("retracted_at"), sa.column("retraction_reason"))
    derived = [
        e
        for e in conn.execute(sa.select(events).where(events.c.cause == "retracted"))
        if (e.export_row or {}).get("derivedFrom") == DERIVED_FROM_RUN_ROW
    ]
    for event in derived:
        conn.execute(
            runs.update().where(runs.c.id == event.run_id).values(retracted_at=event.at, retraction_reason=event.reason)
        )
    if derived:
        conn.execute(events.delete().where(events.c.id.in_([e.id for e in derived])))
