"""A server worker's memory under many distinct requests: RSS before and after N of them.

Imports the catalog export into a fresh SQLite store, then serves it twice with `kernelindex serve
--workers W`, each time sending the same N distinct GET requests (run pages, run JSON, evidence
JSON, workload pages, rankings, operation pages, searches; each path once) at concurrency C:

- bounded: the default budgets (the answer cache's bytes, the ranked-group memo's bytes);
- baseline: both budgets lifted (1 TB), i.e. caches that keep whatever they are given, which is what
  a memo bounded by a count of groups amounts to on this export.

It prints the RSS and PSS (MiB) of the whole server (master and workers) idle, half way and at the
end, the growth, and the bounded growth as a fraction of the baseline's, measured in the same run.

    .venv/bin/python benchmarks/web_memory.py [catalog.jsonl.zst] [--requests N] [--concurrency C] [--workers W]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from web_load import DEFAULT_CATALOG, Client, start_server, stop_server, tree_memory  # noqa: E402

UNBOUNDED = str(10**12)


def paths(db: Path, count: int, seed: int) -> list[str]:
    """``count`` distinct GET paths over the store's runs, workloads, groups and operations, shuffled."""
    from sqlalchemy import select

    from kernelindex.store.database import open_store
    from kernelindex.store.tables import operations, runs, workloads

    store = open_store(str(db))
    with store.engine.connect() as conn:
        run_ids = list(conn.scalars(select(runs.c.id).order_by(runs.c.seq)))
        keys = sorted({k for k in conn.scalars(select(runs.c.comparison_key)) if k})
        workload_ids = list(conn.scalars(select(workloads.c.id).order_by(workloads.c.seq)))
        slugs = list(conn.scalars(select(operations.c.slug).order_by(operations.c.seq)))
    store.close()
    found = (
        [f"/runs/{i}" for i in run_ids]
        + [f"/api/v1/runs/{i}" for i in run_ids]
        + [f"/api/v1/runs/{i}/evidence" for i in run_ids]
        + [f"/workloads/{w}" for w in workload_ids]
        + [f"/api/v1/rankings/{k}" for k in keys]
        + [f"/operations/{s}" for s in slugs]
        + [f"/?q={s}" for s in slugs]
    )
    random.Random(seed).shuffle(found)
    return found[:count]


async def send(port: int, wanted: list[str], concurrency: int) -> dict[int, int]:
    """Each path once over ``concurrency`` keep-alive connections; the count of each status."""
    queue = list(reversed(wanted))
    statuses: dict[int, int] = {}

    async def worker() -> None:
        client = Client(port)
        try:
            while queue:
                status, _ = await client.get(queue.pop())
                statuses[status] = statuses.get(status, 0) + 1
        finally:
            client.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return statuses


def measure(db: Path, wanted: list[str], workers: int, concurrency: int, env: dict[str, str]) -> dict[str, object]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        proc, port, _ = start_server(db, workers, True)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        time.sleep(1.0)  # every worker started
        figures: dict[str, object] = {"idle": tree_memory(proc.pid)}
        half = len(wanted) // 2
        began = time.perf_counter()
        statuses = asyncio.run(send(port, wanted[:half], concurrency))
        figures["half"] = tree_memory(proc.pid)
        for status, n in asyncio.run(send(port, wanted[half:], concurrency)).items():
            statuses[status] = statuses.get(status, 0) + n
        figures["end"] = tree_memory(proc.pid)
        figures["seconds"] = time.perf_counter() - began
        figures["statuses"] = dict(sorted(statuses.items()))
        return figures
    finally:
        stop_server(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("catalog", nargs="?", type=Path, default=DEFAULT_CATALOG[-1] if DEFAULT_CATALOG else None)
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument(
        "--arenas",
        type=int,
        help="also measure the defaults with MALLOC_ARENA_MAX=N (glibc); serve sets 2 when it is unset, so the "
        "other figures have 2: give 8 x cores (glibc's own default) to compare",
    )
    args = parser.parse_args()
    if args.catalog is None or not args.catalog.exists():
        raise SystemExit("no catalog export: give its path (../shared/data/kernelindex-catalog-*.jsonl.zst)")
    from kernelindex.ingest.catalog import import_catalog
    from kernelindex.store.database import open_store

    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "memory.db"
        store = open_store(str(db))
        import_catalog(store, args.catalog)
        store.close()
        wanted = paths(db, args.requests, args.seed)
        print(
            f"{args.catalog.name}: {len(wanted)} distinct requests, concurrency {args.concurrency}, "
            f"{args.workers} worker(s)"
        )
        results = {
            "baseline (budgets lifted)": measure(
                db,
                wanted,
                args.workers,
                args.concurrency,
                {"KERNELINDEX_CACHE_BYTES": UNBOUNDED, "KERNELINDEX_RANK_CACHE_BYTES": UNBOUNDED},
            ),
            "bounded (defaults)": measure(db, wanted, args.workers, args.concurrency, {}),
        }
        if args.arenas:
            results[f"bounded, {args.arenas} arenas"] = measure(
                db, wanted, args.workers, args.concurrency, {"MALLOC_ARENA_MAX": str(args.arenas)}
            )
    print(f"{'':28}{'idle RSS':>10}{'half RSS':>10}{'end RSS':>10}{'end PSS':>10}{'growth':>10}{'s':>7}  statuses")
    growth = {}
    for label, f in results.items():
        idle, half, end = f["idle"], f["half"], f["end"]  # (RSS, PSS) in MiB
        growth[label] = end[0] - idle[0]  # type: ignore[index]
        print(
            f"{label:28}{idle[0]:10.0f}{half[0]:10.0f}{end[0]:10.0f}{end[1]:10.0f}"  # type: ignore[index]
            f"{growth[label]:10.0f}{f['seconds']:7.0f}  {f['statuses']}"
        )
    base, bounded = growth["baseline (budgets lifted)"], growth["bounded (defaults)"]
    if base > 0:
        print(f"bounded growth / baseline growth: {bounded / base:.2f}")


if __name__ == "__main__":
    main()
