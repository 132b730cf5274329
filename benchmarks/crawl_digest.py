"""Crawl every page and API document of the web tests' store and digest each answer, so a refactor
can prove it changed no byte a visitor or a client sees.

The store is built once (the web tests' fill with a fixed seed) into ``--store`` and reused, so the
data never differs between two crawls; the app's clocks and secrets are pinned (cursor clock, CSRF
secret and cookie), so the answers do not either. Each answer is recorded as
``{path: {"status", "type", "sha256"}}``; ``--compare OLD.json`` prints what differs and exits 1.

    python benchmarks/crawl_digest.py --store /tmp/crawl.db --out /tmp/crawl-before.json
    python benchmarks/crawl_digest.py --store /tmp/crawl.db --out /tmp/crawl-after.json --compare /tmp/crawl-before.json
    python benchmarks/crawl_digest.py --data search --store /tmp/crawl-search.db --out /tmp/crawl-search.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from collections import deque
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "web"))  # web_storefill: the web tests' store
sys.path.insert(0, str(REPO / "tests"))

SEED = 20260401
CLOCK = 1_775_000_000.0  # the cursors' clock: a cursor handed out is the same string every crawl
CSRF_NONCE = "n" * 43  # a cookie nonce of the right length, so no fresh random one is minted
STARTS = (
    "/",
    "/api/v1/",
    "/api/v1/openapi.json",
    "/llms.txt",
    "/robots.txt",
    "/sitemap.xml",
    "/search?q=softmax",
    "/search?q=H200+verified",
    "/api/v1/search?q=softmax",
    "/api/v1/search?q=synthetic_softmax_rows+rows%3D2048",
    "/api/v1/search?q=ac4k",
    "/api/v1/rankings?target=synthetic-softmax-rows",
    "/api/v1/rankings?target=synthetic-softmax-rows&limit=1",
    "/api/v1/runs?limit=3",
    "/api/v1/runs?status=failed",
    "/runs?limit=3",
    "/api/v1/workloads?limit=1",
    "/api/v1/operations?limit=1",
    "/serving/resolve.svg",
    "/models",
    "/api/v1/models",
)
EMPTY_FEED_UPDATED = re.compile(rb"<updated>[^<]*</updated>")
RUN_JSON = re.compile(r"/api/v1/runs/[0-9a-f-]{36}")
HREF = re.compile(r"""(?:href|src|action)\s*=\s*["']([^"']+)["']""")


def build_store(path: Path, data: str) -> None:
    """The web tests' store (``web``), the search tests' (``search``: problem packs, sweeps) or the serving
    tests' (``serving``: models, serving runs), filled once with a fixed seed."""
    from kernelindex.store.database import open_store

    store = open_store(str(path))
    try:
        if data == "serving":
            from kernelindex.ingest.catalog import import_catalog
            from serving_kit import serving_lines, write_lines

            import_catalog(store, write_lines(path.parent / "serving.jsonl.zst", serving_lines(SEED)))
        elif data == "search":
            from search_storefill import fill_search

            fill_search(store, SEED, None, path.parent)
        else:
            from web_storefill import fill

            fill(store, SEED)
            queue_one(store)
    finally:
        store.close()


def queue_one(store) -> None:
    """One rerun request with a lease, so the queue pages and their JSON have something to show."""
    sys.path.insert(0, str(REPO / "tests" / "queue"))
    from queue_kit import register, vector_add_submission

    from kernelindex.services import queue as service

    service.submit(store, vector_add_submission())
    register(store, "crawl")
    service.submit(store, vector_add_submission(replicas=2))


def local(url: str) -> str | None:
    """``url`` as a path on this site, or None for another site, a fragment or a script URL."""
    url = urldefrag(url.replace("&amp;", "&"))[0]
    parts = urlsplit(url)
    if parts.scheme and parts.scheme not in ("http", "https"):
        return None
    if parts.netloc and parts.netloc not in ("testserver", "127.0.0.1:8000"):
        return None
    if not parts.path.startswith("/"):
        return None
    return parts.path + (f"?{parts.query}" if parts.query else "")


def json_links(doc) -> list[str]:
    """Every string under a ``links`` key, and every string that looks like a path of this site."""
    found: list[str] = []

    def walk(value, under_links: bool) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, under_links or key in ("links", "href", "url", "permalink", "self", "next"))
        elif isinstance(value, list):
            for item in value:
                walk(item, under_links)
        elif isinstance(value, str) and (under_links or value.startswith(("/api/", "/runs/"))):
            found.append(value)

    walk(doc, False)
    return found


def crawl(store_path: Path, limit: int, bodies: Path | None = None) -> dict[str, dict[str, object]]:
    os.environ["KERNELINDEX_CSRF_SECRET"] = "crawl-digest"
    from fastapi.testclient import TestClient

    from kernelindex.store.database import open_store
    from kernelindex.web.app import create_app

    store = open_store(str(store_path))
    app = create_app(store=store)
    # the app's own cursor class, wherever the code under test keeps it
    app.state.cursors = type(app.state.cursors)(b"crawl-digest", clock=lambda: CLOCK)
    seen: dict[str, dict[str, object]] = {}
    queue = deque(STARTS)
    queued = set(STARTS)
    with TestClient(app, raise_server_exceptions=False, cookies={"ki_csrf": CSRF_NONCE}) as client:
        while queue and len(seen) < limit:
            path = queue.popleft()
            reply = client.get(path, follow_redirects=False)
            kind = reply.headers.get("content-type", "")
            body = reply.content
            if kind.startswith("application/atom+xml") and b"<entry>" not in body:
                body = EMPTY_FEED_UPDATED.sub(b"<updated />", body)  # an empty feed is updated "now"
            seen[path] = {
                "status": reply.status_code,
                "type": kind,
                "sha256": hashlib.sha256(body).hexdigest(),
            }
            if bodies is not None:  # each body under the sha256 of its path, to diff two crawls' answers
                (bodies / hashlib.sha256(path.encode()).hexdigest()[:16]).write_bytes(body)
            links: list[str] = []
            if "location" in reply.headers:
                links.append(reply.headers["location"])
            if kind.startswith("text/html"):
                links += HREF.findall(reply.text)
            elif "json" in kind:
                try:
                    doc = reply.json()
                except ValueError:
                    doc = None
                links += json_links(doc)
                if RUN_JSON.fullmatch(path) and reply.status_code == 200:  # reads no page links to
                    links += [f"{path}/evidence", f"/api/v1/records/{doc['digest']}/signatures"]
            for link in links:
                target = local(link)
                if target and target not in queued:
                    queued.add(target)
                    queue.append(target)
    store.close()
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="SQLite file; built on first use")
    parser.add_argument(
        "--data", choices=("web", "search", "serving"), default="web", help="which tests' store to build"
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare", type=Path, help="an earlier crawl's JSON: print what differs, exit 1 if any")
    parser.add_argument("--bodies", type=Path, help="a folder to write each body to (named by its path's sha256)")
    parser.add_argument("--limit", type=int, default=4000, help="at most this many answers")
    args = parser.parse_args()
    if not args.store.exists():
        build_store(args.store, args.data)
    if args.bodies is not None:
        args.bodies.mkdir(parents=True, exist_ok=True)
    seen = crawl(args.store, args.limit, args.bodies)
    args.out.write_text(json.dumps(seen, indent=1, sort_keys=True))
    print(f"{len(seen)} answers -> {args.out}")
    if args.compare is None:
        return 0
    old = json.loads(args.compare.read_text())
    differ = sorted(p for p in set(old) | set(seen) if old.get(p) != seen.get(p))
    for path in differ:
        print(f"differs: {path}: {old.get(path)} -> {seen.get(path)}")
    print(f"{len(differ)} of {len(set(old) | set(seen))} answers differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
