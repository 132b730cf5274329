"""Server time of search answers and operation pages, on SQLite, at 1× and 10× the real export.

Imports the real catalog export and the built-in sample (seed bundles, both problem packs) into a
fresh SQLite file, then times through the ASGI app, in process, a fixed set of searches (the
newcomer queries of issue 12, a digest, an author, a GPU-only query, and the operation with the
most runs, pinned and unpinned) and operation pages (042, 009 and the busiest). Then it adds nine
variants of every real run (the web benchmark's generator: same comparison groups, seeded values,
new digests) and times the same requests again. Printed: median and p95 per request at 1× and 10×,
against the targets (median ≤ 50 ms at 1×, ≤ 150 ms at 10×). The page cache is off
($KERNELINDEX_WEB_CACHE=off): every request is rendered, as the first view of an answer is (a cached
answer costs a few ms whatever the store holds); ranked groups stay memoised per store generation.

    .venv/bin/python benchmarks/search_bench.py [path/to/catalog.jsonl.zst] [--repeat 20] [--seed N]
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
from urllib.parse import quote

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from kernelindex.ingest.catalog import import_catalog
from kernelindex.sample import sample_paths
from kernelindex.services.imports import import_paths
from kernelindex.store.database import open_store
from kernelindex.store.tables import operations, runs, workloads
from kernelindex.web.app import FAST_ENV, create_app

sys.path.insert(0, str(Path(__file__).resolve().parent))
from web_bench import DEFAULT_CATALOG, VARIANTS, read_catalog, vary  # noqa: E402  (the same generator)


def busiest(store) -> tuple[str, str, str]:
    """The operation with most runs: its slug, and one axis=value of its busiest case (for a pinned query)."""
    with store.engine.connect() as conn:
        slug, op_id = conn.execute(
            select(operations.c.slug, operations.c.id)
            .join(workloads, workloads.c.operation_id == operations.c.id)
            .join(runs, runs.c.workload_id == workloads.c.id)
            .group_by(operations.c.slug, operations.c.id)
            .order_by(func.count().desc())
        ).first()
        axes = (
            conn.execute(
                select(workloads.c.manifest["spec"]["axes"])
                .join(runs, runs.c.workload_id == workloads.c.id)
                .where(workloads.c.operation_id == op_id, workloads.c.kind == "WorkloadCase")
                .group_by(workloads.c.id)
                .order_by(func.count().desc())
            ).scalar()
            or {}
        )
    numeric = [(k, v) for k, v in axes.items() if isinstance(v, (int, float))]
    pin = f"{numeric[0][0]}={numeric[0][1] + 1}" if numeric else ""
    return slug, pin, op_id


def requests(store) -> dict[str, str]:
    slug, pin, _ = busiest(store)
    searches = {
        "042 H200 verified": "042 H200 verified",
        "moe_token_scatter_bwd N=300": "moe_token_scatter_bwd N=300",
        "009 … N=2048 bf16 H200 verified": "009 moe backward N=2048 bf16 H200 verified",
        "ac4k (author)": "ac4k",
        "149b7c1a (digest)": "149b7c1a",
        "H100 (GPU only)": "H100",
        f"busiest op: {slug[:18]}": slug,
        f"busiest op pinned: {pin}": f"{slug} {pin}",
    }
    out = {f"search {name}": f"/api/v1/search?q={quote(q)}" for name, q in searches.items()}
    out.update(
        {
            "page /?q=042 H200 verified": "/?q=" + quote("042 H200 verified"),
            "operation 042": "/operations/042-moe-expert-load-balancing-and-token-capacity-backward",
            "operation 009": "/operations/009-expert-token-scatter-with-weighted-forward-backward",
            f"operation busiest ({slug[:14]})": f"/operations/{slug}",
        }
    )
    return out


def timed(client: TestClient, url: str, repeat: int) -> tuple[float, float, float]:
    """Median and p95 wall time, and median CPU time of this process (server and in-process client),
    in ms, of ``repeat`` requests after one warm-up. CPU time moves less with the machine's load."""
    assert client.get(url).status_code == 200, url
    times, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        response = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        assert response.status_code == 200, url
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, round(0.95 * (len(times) - 1)))], statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("catalog", nargs="?", type=Path, default=DEFAULT_CATALOG[-1] if DEFAULT_CATALOG else None)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--seed", type=int, default=random.randrange(2**32))
    args = parser.parse_args()
    if args.catalog is None or not args.catalog.exists():
        print("no catalog export found (pass its path; it lives in ../shared/data)", file=sys.stderr)
        return 2
    print(f"catalog {args.catalog.name}; variant seed {args.seed}; {args.repeat} requests each (after a warm-up)")
    rng = random.Random(args.seed)
    os.environ[FAST_ENV] = "off"  # time the rendering, not the page cache
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(str(Path(tmp) / "bench.db"))
        start = time.perf_counter()
        import_paths(store, sample_paths())
        import_catalog(store, args.catalog)
        print(f"imported the sample and the export in {time.perf_counter() - start:.1f} s")
        client = TestClient(create_app(store=store))
        urls = requests(store)
        base = {name: timed(client, url, args.repeat) for name, url in urls.items()}

        real = [line["row"] for line in read_catalog(args.catalog) if line["table"] == "benchmark_runs"]
        variants = Path(tmp) / "variants.jsonl"
        with open(variants, "w", encoding="utf-8") as out:
            for row in real:
                for i in range(1, VARIANTS + 1):
                    out.write(json.dumps({"table": "benchmark_runs", "row": vary(row, i, rng)}) + "\n")
        import_catalog(store, variants)
        with store.engine.connect() as conn:
            print(
                f"added {len(real) * VARIANTS} variant runs ({conn.scalar(select(func.count()).select_from(runs))}"
                " runs in all)"
            )
        grown = {name: timed(client, url, args.repeat) for name, url in urls.items()}

    print(f"\nload average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"{'request (wall ms; cpu ms)':<44} {'1× med':>7} {'1× p95':>7} {'10× med':>8} {'10× p95':>8} {'ratio':>6}"
        f" {'1× cpu':>7} {'10× cpu':>8}   targets (median wall): 1× ≤ 50 ms, 10× ≤ 150 ms"
    )
    ok = True
    for name in urls:
        (m1, p1, c1), (m10, p10, c10) = base[name], grown[name]
        good = m1 <= 50 and m10 <= 150
        ok &= good
        print(
            f"{name:<44} {m1:7.1f} {p1:7.1f} {m10:8.1f} {p10:8.1f} {m10 / m1:6.2f} {c1:7.1f} {c10:8.1f}   "
            f"{'ok' if good else 'OVER'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
