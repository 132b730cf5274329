"""Server time of the records ledger, its feed and API, and the entity pages, with the real export
and with 10x its runs (the web benchmark's generator: nine seeded variants of every real run).

Times each page through the ASGI app in process (median and p95 of --repeat requests, after one
warm-up) at 1x, adds the variants, and times the same URLs again. Printed: median and p95 at both
sizes, the 10x/1x ratio of medians, and the issue's targets (median under 50 ms at 1x, 150 ms at
10x) beside each.

    .venv/bin/python benchmarks/ledger_bench.py [path/to/catalog.jsonl.zst] [--repeat 25] [--seed N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernelindex.ingest.bundles import import_bundles  # noqa: E402
from kernelindex.ingest.catalog import import_catalog  # noqa: E402
from kernelindex.store.database import open_store  # noqa: E402
from kernelindex.store.tables import implementations, operations, projects, runs  # noqa: E402
from kernelindex.web.app import create_app  # noqa: E402
from web_bench import DEFAULT_CATALOG, REPO, VARIANTS, read_catalog, vary  # noqa: E402


def _median_p95(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return statistics.median(values), values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]


def timings(client: TestClient, url: str, repeat: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """((median, p95) wall ms, (median, p95) CPU ms of this process) over ``repeat`` requests.
    CPU time (server and in-process client) moves less than wall time when the machine is shared."""
    assert client.get(url).status_code == 200, url
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        response = client.get(url)
        walls.append((time.perf_counter() - start) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        assert response.status_code == 200, url
    return _median_p95(walls), _median_p95(cpus)


def urls(store) -> dict[str, str]:
    with store.engine.connect() as conn:
        op = conn.execute(
            select(operations.c.slug, func.count(runs.c.id))
            .join(runs, runs.c.operation_digest == operations.c.semantic_digest)
            .group_by(operations.c.slug)
            .order_by(func.count(runs.c.id).desc())
        ).first()[0]
        impl = conn.execute(
            select(implementations.c.slug, func.count(runs.c.id))
            .join(runs, runs.c.implementation_id == implementations.c.id)
            .group_by(implementations.c.slug)
            .order_by(func.count(runs.c.id).desc())
        ).first()[0]
        project = conn.execute(
            select(projects.c.slug, func.count(implementations.c.id))
            .join(implementations, implementations.c.project_id == projects.c.id)
            .group_by(projects.c.slug)
            .order_by(func.count(implementations.c.id).asc())
        ).first()[0]
    return {
        "ledger page": "/records",
        "ledger page, by GPU (B200)": "/records?gpu=nvidia-b200",
        f"ledger page, by operation ({op[:18]})": f"/records?operation={op}",
        "ledger page 5 (cursor)": None,
        "GET /api/v1/records?since=2026-06-01": "/api/v1/records?since=2026-06-01T00:00:00Z",
        "Atom feed": "/records/feed.xml",
        "implementation page": f"/implementations/{impl}",
        "project page (smallest)": f"/projects/{project}",
        "GPUs + coverage grid": "/gpus",
    }


def resolve(client: TestClient, pages: dict[str, str | None]) -> dict[str, str]:
    """Fill the cursor page: follow ``next`` four times from the first page of the API."""
    out = {}
    for name, url in pages.items():
        if url is None:
            nxt = "/api/v1/records?limit=50"
            for _ in range(4):
                nxt = client.get(nxt).json()["links"]["next"]
            url = nxt.replace("/api/v1/records", "/records")
        out[name] = url
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("catalog", nargs="?", type=Path, default=DEFAULT_CATALOG[-1] if DEFAULT_CATALOG else None)
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--seed", type=int, default=random.randrange(2**32))
    args = parser.parse_args()
    if args.catalog is None or not args.catalog.exists():
        print("no catalog export found (pass its path; it lives in ../shared/data)", file=sys.stderr)
        return 2
    print(f"catalog {args.catalog.name}; variant seed {args.seed}; {args.repeat} requests per page")
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(str(Path(tmp) / "bench.db"))
        import_catalog(store, args.catalog)
        import_bundles(store, sorted((REPO / "src" / "kernelindex" / "sample").glob("*.json")))
        client = TestClient(create_app(store=store))
        pages = resolve(client, urls(store))
        base = {name: timings(client, url, args.repeat) for name, url in pages.items()}
        real_runs = [line["row"] for line in read_catalog(args.catalog) if line["table"] == "benchmark_runs"]
        variants = Path(tmp) / "variants.jsonl"
        with open(variants, "w", encoding="utf-8") as out:
            for row in real_runs:
                for i in range(1, VARIANTS + 1):
                    out.write(json.dumps({"table": "benchmark_runs", "row": vary(row, i, rng)}) + "\n")
        import_catalog(store, variants)
        with store.engine.connect() as conn:
            count = conn.scalar(select(func.count()).select_from(runs))
        print(f"10x: {count} runs")
        pages10 = resolve(client, urls(store))
        grown = {name: timings(client, url, args.repeat) for name, url in pages10.items()}
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"{'page':<40} {'wall 1x med/p95':>16} {'10x med/p95':>14} {'ratio':>6}  "
        f"{'cpu 1x med/p95':>15} {'10x med/p95':>14}   targets (wall median): 50 / 150 ms"
    )
    ok = True
    for name in base:
        ((m1, p1), (c1, q1)), ((m10, p10), (c10, q10)) = base[name], grown[name]
        good = m1 < 50 and m10 < 150
        ok &= good
        print(
            f"{name[:40]:<40} {m1:7.1f}/{p1:<8.1f} {m10:6.1f}/{p10:<7.1f} {m10 / m1:6.2f}  "
            f"{c1:6.1f}/{q1:<8.1f} {c10:6.1f}/{q10:<7.1f}   {'ok' if good else 'OVER'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
