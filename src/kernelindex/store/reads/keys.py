"""Signing keys this store knows."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, Row, select

from kernelindex.store.evidence.tables import signing_keys


def list_signing_keys(conn: Connection) -> Sequence[Row]:
    return conn.execute(select(signing_keys).order_by(signing_keys.c.seq)).all()
