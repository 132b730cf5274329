"""Correction requests, one by id."""

from __future__ import annotations

from sqlalchemy import Connection, Row, select

from kernelindex.store.evidence.tables import correction_requests


def correction_request(conn: Connection, request_id: str) -> Row | None:
    return conn.execute(select(correction_requests).where(correction_requests.c.id == request_id)).first()
