"""Which rows are records, and the content digest each one's leaf holds.

A record kind with its own content digest (runs, operations, workloads, implementations,
protocols, environments, artifacts, attestations, the serving records) logs that digest, the same
``sha256:`` a reader computes from the record. A row with no digest of its own (a source, a
measurement, a record event such as a retraction or a leader change, a signature envelope, a
correction request) logs the SHA-256 of the RFC 8785 JSON of what it holds: its export row, its
envelope, or (a correction request, whose status later changes) the columns it was filed with.
Tables listed in the order leaves are appended within one transaction: parents first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, Table, Text, cast

from kernelindex.records import merkle
from kernelindex.records.canonical import canonical_json, digest, sha256_digest
from kernelindex.store import tables as t
from kernelindex.store.bulk import json_columns
from kernelindex.store.database import json_bytes, json_value
from kernelindex.store.evidence import tables as et
from kernelindex.store.serving import tables as st


def content_digest(value: Any) -> str:
    """SHA-256 of a stored value's RFC 8785 JSON; a value RFC 8785 cannot write (an integer past
    2**53 in an export row) by sorted-key JSON instead, so every stored row has a leaf."""
    try:
        data = canonical_json(value)
    except ValueError:
        data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return sha256_digest(data)


SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")


def leaf_hash(leaf: str) -> bytes:
    """RFC 9162 leaf hash of a leaf's digest: of its 32 raw bytes."""
    return leaf_hashes([leaf])[0]


def leaf_hashes(leaves: Sequence[str]) -> list[bytes]:
    """:func:`leaf_hash` of each (an append's batch, in one loop)."""
    return [merkle.leaf_hash(bytes.fromhex(leaf[7:])) for leaf in leaves]


@dataclass(frozen=True)
class Logged:
    table: Table
    column: str | None = None  # the row's own content digest, stored with it
    record: str | None = None  # else a column holding a record: its content digest
    content: tuple[str, ...] = ()  # else the JSON of these columns (one: its value; several: an object)

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns :meth:`leaf_digest` reads."""
        return (self.column,) if self.column else (self.record,) if self.record else self.content

    def selected(self) -> list[ColumnElement[Any]]:
        """``seq`` and :attr:`columns`, as :meth:`leaf_digest` takes them: a JSON column as its
        text (read by :func:`json_value`, not SQLAlchemy's JSON type: most of reading it back)."""
        table = self.table
        return [table.c.seq] + [
            cast(table.c[name], Text) if name in json_columns(table) else table.c[name] for name in self.columns
        ]

    @property
    def by_text(self) -> str | None:
        """The JSON column whose text alone decides this table's leaves (its one content column), if any."""
        return self.content[0] if len(self.content) == 1 and self.content[0] in json_columns(self.table) else None

    def leaf_digest(self, row: Sequence[Any], known: Mapping[bytes, str] | None = None) -> str:
        """The leaf of a row read by :meth:`selected` (its ``seq`` first); ``known``: leaves
        already computed for JSON texts (:func:`known_leaves`), looked up before computing."""
        if self.column:  # a stated digest of another form (an artifact's) is logged by its text
            value = row[1]
            return value if SHA256.match(value) else content_digest(value)
        if self.record:
            return digest(json_value(row[1]))
        if known is not None and self.name in TEXT_COLUMN:
            text = row[1]
            found = known.get(text if type(text) is bytes else text.encode("utf-8"))
            if found is not None:
                return found
        values = [
            json_value(value) if name in json_columns(self.table) else value
            for name, value in zip(self.content, row[1:])
        ]
        if len(values) == 1:
            return content_digest(values[0])
        return content_digest(dict(zip(self.content, values)))


def converted_leaf(table: str, columns: Mapping[str, Any]) -> str | None:
    """The leaf of a row about to be stored in ``table`` (its JSON columns not encoded yet), when
    its one JSON column decides it (:data:`TEXT_COLUMN`): computed where the row is converted
    (an import's workers) and handed on with it, for :func:`remember_leaf`."""
    name = TEXT_COLUMN.get(table)
    return None if name is None else content_digest(columns[name])


def remember_leaf(known: dict[bytes, str], table: str, columns: Mapping[str, Any], leaf: str) -> None:
    """Note ``leaf`` (:func:`converted_leaf`) in ``known`` (:func:`known_leaves`) under the text
    of the row's column as the store writes it (``columns`` encoded: see
    :func:`~kernelindex.store.writer.with_json_encoded`)."""
    text = columns[TEXT_COLUMN[table]]
    known[text if type(text) is bytes else json_bytes(text)] = leaf


_KNOWN = "kernelindex.log.known_leaves"


def known_leaves(conn: Connection) -> dict[bytes, str]:
    """Leaves already computed for JSON texts that this connection's transaction stores, keyed by
    the text: the log's append looks a row up here before reading its text as JSON again (most
    of an import's log time). A leaf is a function of the text alone, so an entry is right for
    any row holding that text; :func:`forget_known_leaves` empties it when the transaction ends."""
    return conn.info.setdefault(_KNOWN, {})


def forget_known_leaves(conn: Connection) -> None:
    conn.info.pop(_KNOWN, None)


LOGGED: tuple[Logged, ...] = (
    Logged(t.sources, content=("export_row",)),
    Logged(t.projects, record="manifest"),
    Logged(t.operations, column="semantic_digest"),
    Logged(t.workloads, column="workload_digest"),
    Logged(t.implementations, column="implementation_digest"),
    Logged(t.protocols, column="protocol_digest"),
    Logged(t.environments, column="environment_digest"),
    Logged(t.runs, column="run_digest"),
    Logged(t.measurements, content=("export_row",)),
    Logged(t.artifacts, column="content_digest"),
    Logged(t.record_events, content=("export_row",)),
    Logged(t.foreign_rows, column="row_digest"),
    Logged(st.model_revisions, column="model_digest"),
    Logged(st.serving_stack_revisions, column="stack_digest"),
    Logged(st.serving_configurations, column="configuration_digest"),
    Logged(st.serving_workloads, column="workload_digest"),
    Logged(st.serving_runs, column="run_digest"),
    Logged(st.serving_measurements, content=("export_row",)),
    Logged(et.signatures, content=("envelope",)),
    Logged(et.attestations, column="attestation_digest"),
    Logged(
        et.correction_requests,
        content=("id", "run_digest", "problem", "details", "requested_action", "api_key_id", "created_at"),
    ),
)
BY_NAME = {logged.name: logged for logged in LOGGED}
# table -> the JSON column whose text alone decides its leaves (Logged.by_text), for the tables with one
TEXT_COLUMN = {logged.name: name for logged in LOGGED if (name := logged.by_text) is not None}
