"""An artifact's bytes by content digest, for `/artifacts/{digest}`."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, select

from kernelindex.store.tables import artifacts


@dataclass(frozen=True)
class StoredArtifact:
    digest: str
    media_type: str | None
    kind: str | None
    content: bytes | None  # None when the store keeps only a link (storage other than inline)
    uri: str | None


def artifact_by_digest(conn: Connection, digest: str) -> StoredArtifact | None:
    row = conn.execute(
        select(
            artifacts.c.content_digest, artifacts.c.media_type, artifacts.c.kind, artifacts.c.content, artifacts.c.uri
        )
        .where(artifacts.c.content_digest == digest)
        .limit(1)
    ).first()
    if row is None:
        return None
    content = bytes(row.content) if row.content is not None else None
    return StoredArtifact(row.content_digest, row.media_type, row.kind, content, row.uri)
