"""Every link the site emits resolves, on the sample export (plus the seeds): no 404, no 409, no 5xx.

Upstream implementation slugs are shared (one project's submissions share one), so links carry the
public slug (``<slug>-<8 hex of the digest>`` when shared) and a bare shared slug answers 300 with
the candidates. The crawl walks every project page (where the shared slugs are linked) and a
seeded, bounded breadth-first walk from the home page, the GPU pages and the sitemap.
"""

from __future__ import annotations

import random
import re
from collections import deque
from urllib.parse import urldefrag, urlsplit

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from web_storefill import fill

from kernelindex.ingest.catalog import import_catalog
from kernelindex.store import tables as t
from kernelindex.store.database import open_store
from kernelindex.web.app import create_app

pytestmark = pytest.mark.xdist_group("export")

HREF = re.compile(r"""(?:href|src)\s*=\s*["']([^"'#]+)""")
LOC = re.compile(r"<loc>([^<]+)</loc>")
SUFFIXED = re.compile(r"-[0-9a-f]{8}$")
WALK_BUDGET = 300  # pages past the project pages: the walk stays well inside CI's time
PLAIN_SAMPLE = 150  # implementation links with an unshared slug, checked as a seeded sample
SEED = 20261202


@pytest.fixture(scope="module")
def export_client(catalog_path, tmp_path_factory):
    store = open_store(str(tmp_path_factory.mktemp("links") / "export.db"))
    import_catalog(store, catalog_path)
    fill(store, SEED)
    with TestClient(create_app(store=store), raise_server_exceptions=False) as client:
        yield store, client
    store.close()


def local(link: str) -> str | None:
    parts = urlsplit(urldefrag(link)[0])
    if parts.scheme not in ("", "http") or (parts.netloc not in ("", "testserver")) or not parts.path.startswith("/"):
        return None
    if parts.path.startswith(("/static/", "/api/v1/export")) or parts.path.endswith((".zst", ".md")):
        return None  # files, not pages: their own tests read them
    return parts.path + (f"?{parts.query}" if parts.query else "")


def emitted(reply) -> list[str]:
    kind = reply.headers.get("content-type", "")
    if kind.startswith("text/html"):
        return HREF.findall(reply.text)
    if "xml" in kind:
        return LOC.findall(reply.text)
    return []


def test_a_shared_slug_answers_with_its_candidates(export_client):
    store, client = export_client
    with store.engine.connect() as conn:
        shared = conn.scalars(
            select(t.implementations.c.slug).group_by(t.implementations.c.slug).having(func.count() > 1).limit(1)
        ).first()
    assert shared, "the sample export has shared implementation slugs"
    page = client.get(f"/implementations/{shared}")
    api = client.get(f"/api/v1/implementations/{shared}")
    assert page.status_code == api.status_code == 300
    candidates = api.json()["candidates"]
    assert len(candidates) >= 2 and len({c["slug"] for c in candidates}) == len(candidates)
    for c in candidates:
        assert c["slug"].startswith(shared + "-") and c["links"]["self"] in page.text
        one = client.get(c["links"]["json"])
        assert one.status_code == 200 and one.json()["digest"] == c["digest"] and one.json()["slug"] == c["slug"]


def test_badges_of_shared_and_unique_slugs(export_client):
    """A badge embedded by a bare shared slug is an image too: 300 with each candidate's badge linked."""
    store, client = export_client
    rng = random.Random(SEED)
    with store.engine.connect() as conn:
        counts = conn.execute(select(t.implementations.c.slug, func.count()).group_by(t.implementations.c.slug)).all()
    shared = sorted(slug for slug, n in counts if slug and n > 1)
    unique = sorted(slug for slug, n in counts if slug and n == 1)
    assert shared and unique
    for slug in shared:
        reply = client.get(f"/badges/implementations/{slug}.svg")
        assert reply.status_code == 300 and reply.headers["content-type"].startswith("image/svg+xml")
        assert "share this slug" in reply.text
        badges = re.findall(r'<(/badges/implementations/[^>]+\.svg)>; rel="alternate"', reply.headers["link"])
        assert len(badges) >= 2 and all(SUFFIXED.search(b.removesuffix(".svg")) for b in badges)
        for badge in badges:
            one = client.get(badge)
            assert one.status_code == 200 and one.headers["content-type"].startswith("image/svg+xml")
            assert "kernelindex: " in one.text and "share this slug" not in one.text
    for slug in rng.sample(unique, min(20, len(unique))):
        reply = client.get(f"/badges/implementations/{slug}.svg")
        assert reply.status_code == 200 and reply.headers["content-type"].startswith("image/svg+xml")
        page = client.get(f"/implementations/{slug}")
        assert page.status_code == 200 and f'src="/badges/implementations/{slug}.svg"' in page.text


def test_every_emitted_link_resolves(export_client):
    store, client = export_client
    rng = random.Random(SEED)
    with store.engine.connect() as conn:
        projects = list(conn.scalars(select(t.projects.c.slug).order_by(t.projects.c.seq)))
    bad: dict[str, tuple[int, str]] = {}
    checked: set[str] = set()

    def check(path: str, came_from: str) -> object:
        checked.add(path)
        reply = client.get(path, follow_redirects=False)
        if reply.status_code in (404, 409) or reply.status_code >= 500:
            bad[path] = (reply.status_code, came_from)
        return reply

    # every project page, and every implementation link on it whose slug is shared (the links that
    # answered 409), with a seeded sample of the others
    plain: list[tuple[str, str]] = []
    for slug in projects:
        reply = check(f"/projects/{slug}", "the project list")
        for link in emitted(reply):
            if (target := local(link)) and target.startswith("/implementations/") and target not in checked:
                if SUFFIXED.search(target):
                    check(target, f"/projects/{slug}")
                else:
                    plain.append((target, f"/projects/{slug}"))
    suffixed = len(checked) - len(projects)
    assert suffixed >= 100, "the export's shared slugs are linked with their digest suffix"
    for target, came_from in rng.sample(plain, min(PLAIN_SAMPLE, len(plain))):
        check(target, came_from)
    # a bounded, seeded walk from the entry pages; the sitemap's links go in shuffled
    queue = deque(["/", "/gpus", "/runs", "/models", "/records", "/docs", "/sitemap.xml"])
    walked = 0
    while queue and walked < WALK_BUDGET:
        path = queue.popleft()
        if path in checked:
            continue
        walked += 1
        reply = check(path, "the walk")
        links = [target for link in emitted(reply) if (target := local(link)) and target not in checked]
        rng.shuffle(links)
        queue.extend(links)
    assert len(checked) > len(projects) + suffixed + 300
    assert bad == {}, f"{len(bad)} links fail, e.g. {sorted(bad.items())[:5]}"
