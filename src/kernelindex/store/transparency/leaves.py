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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table

from kernelindex.records import merkle
from kernelindex.records.canonical import canonical_json, digest, sha256_digest
from kernelindex.store import tables as t
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
    return merkle.leaf_hash(bytes.fromhex(leaf[7:]))


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

    def leaf_digest(self, row: Mapping[Any, Any]) -> str:
        if self.column:  # a stated digest of another form (an artifact's) is logged by its text
            value = row[self.column]
            return value if SHA256.match(value) else content_digest(value)
        if self.record:
            return digest(row[self.record])
        if len(self.content) == 1:
            return content_digest(row[self.content[0]])
        return content_digest({name: row[name] for name in self.content})


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
