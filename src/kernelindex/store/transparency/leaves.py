"""Which rows are records, and the content digest each one's leaf holds.

A record kind with its own content digest (runs, operations, workloads, implementations,
protocols, environments, artifacts, attestations, the serving records) logs that digest, the same
``sha256:`` a reader computes from the record. A row with no digest of its own (a source, a
measurement, a record event such as a retraction or a leader change, a signature envelope, a
correction request) logs the SHA-256 of the RFC 8785 JSON of what it holds: its export row, its
envelope, or (a correction request, whose status later changes) the columns it was filed with.
Tables listed in the order leaves are appended within one transaction: parents first. A leaf is
stored as the digest's 32 raw bytes and its table as a small fixed number (``Logged.id``): less to
write per record than the ``sha256:`` text and the table's name (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, Table, Text, cast

from kernelindex.records import merkle
from kernelindex.records.canonical import canonical_json, digest
from kernelindex.store import tables as t
from kernelindex.store.bulk import json_columns
from kernelindex.store.database import json_bytes, json_value
from kernelindex.store.evidence import tables as et
from kernelindex.store.serving import tables as st


def _content_json(value: Any) -> bytes:
    """A stored value's RFC 8785 JSON; a value RFC 8785 cannot write (an integer past 2**53 in an
    export row) by sorted-key JSON instead, so every stored row has a leaf."""
    try:
        return canonical_json(value)
    except ValueError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def content_leaf(value: Any) -> bytes:
    """The leaf of a row logged by what it holds: the SHA-256 of its :func:`_content_json`, raw."""
    return hashlib.sha256(_content_json(value)).digest()


SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")


def raw_digest(text: str) -> bytes | None:
    """The 32 bytes a ``sha256:`` digest stands for (how ``log_blocks`` keeps a leaf), or None."""
    return bytes.fromhex(text[7:]) if SHA256.match(text) else None


_PREFIX = "sha256:"
_STATED = len(_PREFIX) + 64  # characters of one ``sha256:`` digest


def stated_leaves(values: Sequence[Any]) -> list[bytes]:
    """The leaves of rows that state their own digest: its 32 raw bytes (:func:`raw_digest`), or
    for a digest of another form (an artifact's) the :func:`content_leaf` of its text. A page
    whose every value is a ``sha256:`` digest (an import's) is checked and decoded whole, in a
    few calls over the joined text, instead of a match and a decode per row."""
    n = len(values)
    joined = "".join(values) if all(type(v) is str for v in values) else ""
    if n and len(joined) == _STATED * n and all(joined[k::_STATED] == c * n for k, c in enumerate(_PREFIX)):
        # the prefixes sit where they should; any other "sha256:" would make the rest shorter
        hexes = joined.replace(_PREFIX, "")
        try:
            raw = bytes.fromhex(hexes) if len(hexes) == 64 * n else b""
        except ValueError:
            raw = b""
        if len(raw) == 32 * n and raw.hex() == hexes:  # lowercase hex only, as SHA256 matches
            return [raw[i : i + 32] for i in range(0, 32 * n, 32)]
    return [raw_digest(v) or content_leaf(v) for v in values]


def stored_leaf(value: Any) -> bytes:
    """A ``digests`` or ``seqs`` value read from ``log_blocks`` as bytes, whatever was written there behind the
    store's back (SQLite keeps text in any column): a wrong leaf, for ``verify`` to report."""
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def digest_text(raw: bytes) -> str:
    """A stored leaf as the ``sha256:`` digest it holds (one of another length shows as its hex)."""
    return "sha256:" + stored_leaf(raw).hex()


def leaf_hash(leaf: bytes) -> bytes:
    """RFC 9162 leaf hash of a leaf's digest: of its 32 raw bytes."""
    return merkle.leaf_hash(leaf)


def leaf_hashes(leaves: Iterable[bytes]) -> list[bytes]:
    """:func:`leaf_hash` of each (an append's batch, in one loop)."""
    sha256, prefix = hashlib.sha256, merkle.LEAF_PREFIX
    return [sha256(prefix + leaf).digest() for leaf in leaves]


@dataclass(frozen=True)
class Logged:
    id: int  # ``log_blocks.table_id``: fixed once given (stored in every block), whatever the order below
    table: Table
    column: str | None = None  # the row's own content digest, stored with it
    record: str | None = None  # else a column holding a record: its content digest
    content: tuple[str, ...] = ()  # else the JSON of these columns (one: its value; several: an object)

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns :meth:`leaf_digests` reads."""
        return (self.column,) if self.column else (self.record,) if self.record else self.content

    def selected(self) -> list[ColumnElement[Any]]:
        """``seq`` and :attr:`columns`, as :meth:`leaf_digests` takes them: a JSON column as its
        text (read by :func:`json_value`, not SQLAlchemy's JSON type: most of reading it back)."""
        table = self.table
        return [table.c.seq] + [
            cast(table.c[name], Text) if name in json_columns(table) else table.c[name] for name in self.columns
        ]

    def new_rows_sql(self, dialect: str) -> str:
        """:meth:`selected` as driver SQL for the rows past a ``seq`` (one parameter), a page at a
        time, in ``seq`` order: what appending reads, as plain tuples. On SQLite a JSON column
        comes as the bytes it holds (no text decoded only to be encoded again for :func:`known_leaves`)."""
        marker, as_text = ("?", "BLOB") if dialect == "sqlite" else ("%s", "TEXT")
        columns = ", ".join(
            f"CAST({name} AS {as_text})" if name in json_columns(self.table) else name for name in self.columns
        )
        return f"SELECT seq, {columns} FROM {self.name} WHERE seq > {marker} ORDER BY seq LIMIT {PAGE}"

    @property
    def by_text(self) -> str | None:
        """The JSON column whose text alone decides this table's leaves (its one content column), if any."""
        return self.content[0] if len(self.content) == 1 and self.content[0] in json_columns(self.table) else None

    def leaf_digests(self, rows: Sequence[Sequence[Any]], known: Mapping[bytes, bytes] | None = None) -> list[bytes]:
        """The leaves (32 raw bytes each) of rows read by :meth:`selected` or :meth:`new_rows_sql`
        (their ``seq`` first); ``known``: leaves already computed for JSON texts
        (:func:`known_leaves`), looked up before computing. One pass per table, not a call per row."""
        if self.column:
            return stated_leaves([v for _, v in rows])
        if self.record:
            return [bytes.fromhex(digest(json_value(v))[7:]) for _, v in rows]
        if known is not None and self.by_text is not None:
            found = [known.get(v if type(v) is bytes else v.encode("utf-8")) for _, v in rows]
            return [leaf if leaf is not None else self._leaf(row) for leaf, row in zip(found, rows)]
        return [self._leaf(row) for row in rows]

    def _leaf(self, row: Sequence[Any]) -> bytes:
        values = [
            json_value(value) if name in json_columns(self.table) else value
            for name, value in zip(self.content, row[1:])
        ]
        if len(values) == 1:
            return content_leaf(values[0])
        return content_leaf(dict(zip(self.content, values)))

    def leaf_digest(self, row: Sequence[Any]) -> str:
        """The leaf of one row as its ``sha256:`` digest (what ``verify`` shows)."""
        return digest_text(self.leaf_digests([row])[0])


PAGE = 5000  # rows of a table read at a time by appending


def converted_leaf(table: str, columns: Mapping[str, Any]) -> bytes | None:
    """The leaf of a row about to be stored in ``table`` (its JSON columns not encoded yet), when
    its one JSON column decides it (:data:`TEXT_COLUMN`): computed where the row is converted
    (an import's workers) and handed on with it, for :func:`remember_leaf`."""
    name = TEXT_COLUMN.get(table)
    return None if name is None else content_leaf(columns[name])


def remember_leaf(known: dict[bytes, bytes], table: str, columns: Mapping[str, Any], leaf: bytes) -> None:
    """Note ``leaf`` (:func:`converted_leaf`) in ``known`` (:func:`known_leaves`) under the text
    of the row's column as the store writes it (``columns`` encoded: see
    :func:`~kernelindex.store.writer.with_json_encoded`)."""
    text = columns[TEXT_COLUMN[table]]
    known[text if type(text) is bytes else json_bytes(text)] = leaf


_KNOWN = "kernelindex.log.known_leaves"


def known_leaves(conn: Connection) -> dict[bytes, bytes]:
    """Leaves already computed for JSON texts that this connection's transaction stores, keyed by
    the text: the log's append looks a row up here before reading its text as JSON again (most
    of an import's log time). A leaf is a function of the text alone, so an entry is right for
    any row holding that text; :func:`forget_known_leaves` empties it when the transaction ends."""
    return conn.info.setdefault(_KNOWN, {})


def forget_known_leaves(conn: Connection) -> None:
    conn.info.pop(_KNOWN, None)


LOGGED: tuple[Logged, ...] = (
    Logged(1, t.sources, content=("export_row",)),
    Logged(2, t.projects, record="manifest"),
    Logged(3, t.operations, column="semantic_digest"),
    Logged(4, t.workloads, column="workload_digest"),
    Logged(5, t.implementations, column="implementation_digest"),
    Logged(6, t.protocols, column="protocol_digest"),
    Logged(7, t.environments, column="environment_digest"),
    Logged(8, t.runs, column="run_digest"),
    Logged(9, t.measurements, content=("export_row",)),
    Logged(10, t.artifacts, column="content_digest"),
    Logged(11, t.record_events, content=("export_row",)),
    Logged(12, t.foreign_rows, column="row_digest"),
    Logged(13, st.model_revisions, column="model_digest"),
    Logged(14, st.serving_stack_revisions, column="stack_digest"),
    Logged(15, st.serving_configurations, column="configuration_digest"),
    Logged(16, st.serving_workloads, column="workload_digest"),
    Logged(17, st.serving_runs, column="run_digest"),
    Logged(18, st.serving_measurements, content=("export_row",)),
    Logged(19, et.signatures, content=("envelope",)),
    Logged(20, et.attestations, column="attestation_digest"),
    Logged(
        21,
        et.correction_requests,
        content=("id", "run_digest", "problem", "details", "requested_action", "api_key_id", "created_at"),
    ),
)
BY_NAME = {logged.name: logged for logged in LOGGED}
BY_ID = {logged.id: logged for logged in LOGGED}
# table -> the JSON column whose text alone decides its leaves (Logged.by_text), for the tables with one
TEXT_COLUMN = {logged.name: name for logged in LOGGED if (name := logged.by_text) is not None}
