"""Public implementation slugs: unique, so every link the site emits names one implementation.

Upstream slugs are not unique (one project's submissions share a slug across its solutions). A slug
held by one implementation is its public slug; a shared one gets a suffix from the digest
(``<slug>-<first 8 hex>``), the same every time it is made. The resolver reads both forms
(store/reads/lookup.resolve_implementation); a bare shared slug answers with the candidates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, Row, func, select

from kernelindex.store import tables as t

SUFFIX_HEX = 8
_impl = t.implementations


def shared_slugs(conn: Connection, slugs: Iterable[str | None]) -> set[str]:
    """Those of ``slugs`` that more than one implementation holds."""
    wanted = sorted({s for s in slugs if s})
    if not wanted:
        return set()
    query = select(_impl.c.slug).where(_impl.c.slug.in_(wanted)).group_by(_impl.c.slug).having(func.count() > 1)
    return set(conn.scalars(query))


def public_slug(slug: str | None, ident: str, digest: str, shared: set[str]) -> str:
    """The slug an implementation's links carry: its own, suffixed when shared; its id when it has none."""
    if not slug:
        return ident
    if slug in shared:
        return f"{slug}-{digest.removeprefix('sha256:')[:SUFFIX_HEX]}"
    return slug


def public_slugs(conn: Connection, rows: Iterable[tuple[str | None, str, str]]) -> dict[str, str]:
    """Digest -> public slug for (slug, id, digest) triples, with one query for the shared ones."""
    triples = list(rows)
    shared = shared_slugs(conn, (slug for slug, _, _ in triples))
    return {digest: public_slug(slug, ident, digest, shared) for slug, ident, digest in triples}


def candidates(conn: Connection, slug: str) -> Sequence[Row]:
    """Every implementation holding ``slug``, in arrival order (what a bare shared slug may mean)."""
    return conn.execute(select(_impl).where(_impl.c.slug == slug).order_by(_impl.c.seq)).all()


def all_public_slugs(conn: Connection, limit: int) -> list[str]:
    """Up to ``limit`` public slugs, ordered (the sitemap's implementations)."""
    rows = conn.execute(
        select(_impl.c.slug, _impl.c.id, _impl.c.implementation_digest)
        .where(_impl.c.slug.isnot(None))
        .order_by(_impl.c.slug, _impl.c.implementation_digest)
        .limit(limit)
    ).all()
    return sorted(public_slugs(conn, ((r.slug, r.id, r.implementation_digest) for r in rows)).values())
