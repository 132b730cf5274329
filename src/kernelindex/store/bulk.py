"""Bulk statements sent straight to the driver: one ``executemany`` per batch of rows, one
``IN (...)`` per chunk of keys.

An import writes tens of thousands of rows; through SQLAlchemy's statement layer every row and
every key costs a Python-level bind step that is most of the cost of writing it. Here the SQL
text is made once per table and columns, and values go to the driver as tuples, the JSON columns
written by the store's own serialiser exactly as SQLAlchemy's JSON type writes them (``None`` in a
JSON column is JSON ``null``); a JSON column's value given as ``bytes`` is its JSON text already
(UTF-8, from ``json_bytes``: JSON itself has no bytes, so the two cannot be mistaken), which lets a
row be encoded where it was converted (an import's worker process) and sent on as one object.
Statements still go through the connection (``exec_driver_sql``),
so its transaction, savepoints and events (the store generation) see them. On PostgreSQL new rows
go in by ``COPY ... FROM STDIN`` on the same connection (its transaction and savepoints), the
generation moved by hand.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from functools import cache
from itertools import chain
from operator import itemgetter
from typing import Any

from sqlalchemy import JSON, Connection, Float, Table
from sqlalchemy.exc import DBAPIError

from kernelindex.store.database import json_text
from kernelindex.store.generation import note_write

IN_CHUNK = 500  # values per IN (...) list: well under every backend's parameter limit
ROW_CHUNK = 100  # keys of several columns per OR list: also well under SQLite's expression depth limit


def in_chunks(values: Sequence, size: int = IN_CHUNK) -> Iterable[Sequence]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _marker(conn: Connection) -> str:
    return "?" if conn.dialect.paramstyle == "qmark" else "%s"


@cache
def json_columns(table: Table) -> frozenset[str]:
    return frozenset(c.name for c in table.c if isinstance(c.type, JSON))


@cache
def _float_columns(table: Table) -> frozenset[str]:
    return frozenset(c.name for c in table.c if isinstance(c.type, Float))


def insert_rows(conn: Connection, table: Table, rows: Sequence[dict[str, Any]], *, skip_clashes: bool = False) -> int:
    """Insert ``rows`` (dicts of column values; a column some rows lack is NULL in them) with one
    ``executemany`` (PostgreSQL: one ``COPY``); ``skip_clashes`` leaves out rows that clash with a
    unique key (``ON CONFLICT DO NOTHING``, an ``executemany`` on every backend). Returns how many
    rows went in."""
    if not rows:
        return 0
    first = rows[0].keys()
    if all(row.keys() == first for row in rows):  # the common case: rows from one converter
        names = list(first)
    else:
        names = list(dict.fromkeys(name for row in rows for name in row))
    json_at = [i for i, name in enumerate(names) if name in json_columns(table)]
    # an integer for a float column goes as a float, as SQLAlchemy's Float sends it (10**30 fits a
    # double, not SQLite's 64-bit integer)
    float_at = [i for i, name in enumerate(names) if name in _float_columns(table)]
    values_of = itemgetter(*names) if len(names) > 1 else lambda row: (row[names[0]],)
    # SQLite takes JSON already encoded as it comes, a blob its CAST makes text without a copy in
    # Python; PostgreSQL's drivers want text
    sqlite = conn.dialect.name == "sqlite"
    params: list[tuple] = []
    for row in rows:
        try:
            values = list(values_of(row))
        except KeyError:
            values = [row.get(name) for name in names]
        for i in json_at:
            value = values[i]
            if type(value) is not bytes:
                values[i] = json_text(value)
            elif not sqlite:
                values[i] = value.decode("utf-8")
        for i in float_at:
            if type(values[i]) is int:
                values[i] = float(values[i])
        params.append(tuple(values))
    return insert_values(conn, table, names, params, skip_clashes=skip_clashes)


def insert_values(
    conn: Connection,
    table: Table,
    names: Sequence[str],
    params: list[tuple],
    *,
    skip_clashes: bool = False,
    rows_per_statement: int = 1,
) -> int:
    """:func:`insert_rows` of rows given as tuples of driver values in the order of ``names`` (a
    JSON column's encoded): for a writer that makes its rows as tuples (the transparency log),
    no dict per row and no pass over them. ``rows_per_statement``: on SQLite, up to that many rows
    in each ``INSERT ... VALUES (...), (...)`` instead of one ``executemany`` step per row (for
    narrow rows, where that step weighs most: the log's leaves and nodes, benchmarks/RESULTS.md)."""
    if not params:
        return 0
    quote = conn.dialect.identifier_preparer.quote
    target = f"{quote(table.name)} ({', '.join(quote(n) for n in names)})"
    sqlite = conn.dialect.name == "sqlite"
    if conn.dialect.name == "postgresql" and not skip_clashes:
        _copy_rows(conn, target, params)
        return len(params)
    markers = [_marker(conn)] * len(names)
    json_at = [i for i, name in enumerate(names) if name in json_columns(table)]
    if sqlite:
        for i in json_at:
            markers[i] = "CAST(? AS TEXT)"
    row = f"({', '.join(markers)})"
    if sqlite and rows_per_statement > 1 and not skip_clashes:
        _insert_multirow(conn, target, row, params, min(rows_per_statement, _variable_limit(conn) // len(names)))
        return len(params)
    sql = f"INSERT INTO {target} VALUES {row}"
    if skip_clashes:
        sql += " ON CONFLICT DO NOTHING"
    result = conn.exec_driver_sql(sql, params)
    return result.rowcount if skip_clashes else len(params)


def _variable_limit(conn: Connection) -> int:
    """How many ``?`` one SQLite statement may hold (32,766 since SQLite 3.32; 999 before)."""
    raw: Any = conn.connection.dbapi_connection
    return raw.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)


def _insert_multirow(conn: Connection, target: str, row: str, params: list[tuple], per: int) -> None:
    """``params`` in statements of ``per`` rows each (SQLite)."""
    per = max(1, per)
    whole = f"INSERT INTO {target} VALUES {', '.join([row] * per)}"
    for start in range(0, len(params), per):
        chunk = params[start : start + per]
        sql = whole if len(chunk) == per else f"INSERT INTO {target} VALUES {', '.join([row] * len(chunk))}"
        conn.exec_driver_sql(sql, tuple(chain.from_iterable(chunk)))


def _copy_rows(conn: Connection, target: str, params: list[tuple]) -> None:
    """The rows by one ``COPY target FROM STDIN`` (PostgreSQL; ``target`` is the quoted table and
    columns): a stream instead of a statement per row, several times cheaper for both ends than
    pipelined INSERTs. A clash or a value the column refuses fails the COPY, and with it the
    transaction, as an INSERT would."""
    sql = f"COPY {target} FROM STDIN"
    note_write(conn)
    raw: Any = conn.connection.dbapi_connection  # psycopg's: COPY is its own API, not the DBAPI's
    driver_error = conn.dialect.loaded_dbapi.Error
    try:
        with raw.cursor() as cursor, cursor.copy(sql) as copy:
            for row in params:
                copy.write_row(row)
    except driver_error as exc:  # raised as SQLAlchemy raises a statement's (IntegrityError, ...)
        raise DBAPIError.instance(sql, None, exc, driver_error) from exc


def select_in(
    conn: Connection, table: Table, columns: Sequence[str], key: Sequence[str], values: Iterable[Any]
) -> list[tuple]:
    """``columns`` of the rows whose ``key`` (one column, or several: then each value is a tuple)
    is among ``values``; non-JSON columns only (values come back as the driver gives them)."""
    wanted = list(dict.fromkeys(values))
    quote = conn.dialect.identifier_preparer.quote
    marker = _marker(conn)
    head = f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(table.name)} WHERE "
    found: list[tuple] = []
    if len(key) == 1:
        for chunk in in_chunks(wanted):
            sql = f"{head}{quote(key[0])} IN ({', '.join([marker] * len(chunk))})"
            found.extend(tuple(r) for r in conn.exec_driver_sql(sql, tuple(chunk)))
        return found
    # several columns: an OR of equalities, which both backends answer from the key's index (a
    # row-value IN (VALUES ...) is a full scan on SQLite)
    term = f"({' AND '.join(f'{quote(k)} = {marker}' for k in key)})"
    for chunk in in_chunks(wanted, ROW_CHUNK):
        sql = head + " OR ".join([term] * len(chunk))
        found.extend(tuple(r) for r in conn.exec_driver_sql(sql, tuple(v for item in chunk for v in item)))
    return found
