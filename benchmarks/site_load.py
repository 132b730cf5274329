"""The site's cost under concurrency, its cold start and its memory: issue 33's site targets, side by side.

Serves the catalog export with `kernelindex serve` (and, given ``--public DIR``, the public site's
production build, `next start` over a PostgreSQL copy of the same export), over HTTP on 127.0.0.1,
and measures on each, in this order, every path requested at most once in the whole run:

- cold start: process start to the first 200 of a run page (``--cold-starts`` fresh starts, median),
  and the CPU seconds the server had used by then (with ``--bytecode``, ours also with Python's
  bytecode cached, as an installed package has it: this environment sets PYTHONDONTWRITEBYTECODE,
  so each of our processes compiles our source as it starts);
- server CPU per never-requested run page at concurrency 1, 2, 4, 8 and 16 (user + system time of
  the whole server tree, over ``--pages`` run pages per level; with PostgreSQL's processes as well
  for the public site, printed apart), then once more at concurrency 1 to show any drift;
- mixed distinct pages at concurrency 16: five samples of the same mix (run pages, run JSON,
  implementation pages, operation pages, searches; fresh paths each sample), their requests per
  second and spread, (max - min) / median, and how many of the 16 connections each server process
  holds (``ss``) in each sample;
- RSS and PSS of the whole server after 2,500 distinct pages (master and workers; the public
  site's node tree, and its PostgreSQL apart).

Wall figures depend on what else runs on the machine; CPU per page is the figure to trust there.
The public site keeps each page it renders on disk (Next's ISR, under ``.next``): ``--public-build
COPY`` restores ``.next`` from a copy of the fresh build before it is measured, so its pages too are
never requested before.
``--before SRC`` measures a second `kernelindex serve` from another source tree (e.g. an archive of
main's ``src``) in the same run; a run prints ratios of ours to each other site. The servers are measured
one after the other, in an order that turns with ``--seed``.

    .venv/bin/python benchmarks/site_load.py [catalog.jsonl.zst] [--db store.db] [--workers N]
        [--before SRC] [--bytecode DIR] [--public apps/web --public-build COPY --public-db URL --postgres-data DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from web_load import DEFAULT_CATALOG, Client, free_port, tree_cpu, tree_memory  # noqa: E402

LEVELS = (1, 2, 4, 8, 16)
MIX = (("run", 4), ("api", 2), ("implementation", 2), ("operation", 1), ("search", 1))  # per 10 requests
SAMPLES = 5
MEMORY_AFTER = 2500
TARGETS = {"spread": 0.20, "mixed ratio": 4.0, "cold start": 0.6, "memory": 250.0}


def connections(port: int) -> list[int]:
    """How many established connections to ``port`` each server process holds, most first (``ss``)."""
    out = subprocess.run(
        ["ss", "-tnpH", "state", "established", f"( sport = :{port} )"], capture_output=True, text=True
    ).stdout
    held = Counter(re.findall(r"pid=(\d+)", out))
    return sorted(held.values(), reverse=True)


async def send(port: int, paths: list[str], concurrency: int, held: list | None = None) -> float:
    """Each path once over ``concurrency`` keep-alive connections; returns the seconds it took. Given
    ``held``, appends the connections each server process holds once every connection is open."""
    queue = list(reversed(paths))

    async def worker() -> None:
        client = Client(port)
        try:
            while queue:
                path = queue.pop()
                status, _ = await client.get(path)
                if status != 200:
                    raise SystemExit(f"GET {path} answered {status}")
        finally:
            client.close()

    async def look() -> None:
        while queue and len(queue) > len(paths) - 2 * concurrency:
            await asyncio.sleep(0.001)
        if held is not None and queue:
            held.append(await asyncio.to_thread(connections, port))

    began = time.perf_counter()
    await asyncio.gather(look(), *(worker() for _ in range(concurrency)))
    return time.perf_counter() - began


@dataclass
class Site:
    """How to start one server, and which processes besides its own tree work for it (a database)."""

    label: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path | None = None
    database_root: int | None = None  # the PostgreSQL postmaster, whose backends serve its reads
    bytecode: Path | None = None  # a folder for Python's bytecode cache (PYTHONPYCACHEPREFIX), for cold starts with it
    proc: subprocess.Popen | None = field(default=None, repr=False)
    port: int = 0

    def start(self, first_path: str) -> tuple[float, float]:
        """Start it; the seconds from the process start to the first 200 of ``first_path``, and the
        CPU seconds its processes had used by then."""
        self.port = free_port()
        argv = [part.replace("{port}", str(self.port)) for part in self.argv]
        began = time.perf_counter()
        self.proc = subprocess.Popen(
            argv,
            env={**os.environ, **self.env},
            cwd=self.cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

        async def first() -> int | None:
            client = Client(self.port)
            try:
                return (await client.get(first_path))[0]
            except (OSError, EOFError):  # not listening yet, or closed while starting
                return None
            finally:
                client.close()

        while (status := asyncio.run(first())) != 200:
            if status is not None or self.proc.poll() is not None or time.perf_counter() > began + 120:
                self.stop()
                stderr = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise SystemExit(f"{self.label}: no first page ({status}): {stderr[-2000:]}")
            time.sleep(0.005)
        return time.perf_counter() - began, tree_cpu(self.proc.pid)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def cpu(self) -> tuple[float, float]:
        """CPU seconds so far: (the server's tree, its database's processes)."""
        assert self.proc is not None
        database = tree_cpu(self.database_root) if self.database_root else 0.0
        return tree_cpu(self.proc.pid), database

    def memory(self) -> tuple[tuple[float, float], tuple[float, float]]:
        assert self.proc is not None
        database = tree_memory(self.database_root) if self.database_root else (0.0, 0.0)
        return tree_memory(self.proc.pid), database


class Paths:
    """Fresh paths of each kind, shuffled, each handed out once over the whole run."""

    def __init__(self, kinds: dict[str, list[str]], seed: int) -> None:
        rng = random.Random(seed)
        self.left = {kind: rng.sample(paths, len(paths)) for kind, paths in kinds.items()}
        self.given = 0

    def take(self, kind: str, count: int) -> list[str]:
        if len(self.left[kind]) < count:
            raise SystemExit(f"only {len(self.left[kind])} fresh {kind} paths left, {count} wanted")
        taken, self.left[kind] = self.left[kind][:count], self.left[kind][count:]
        self.given += count
        return taken

    def mixed(self, count: int, rng: random.Random) -> list[str]:
        weight = sum(w for _, w in MIX)
        chosen = [p for kind, w in MIX for p in self.take(kind, count * w // weight)]
        rng.shuffle(chosen)
        return chosen


def kinds_of(db: Path) -> dict[str, list[str]]:
    """The paths both sites answer: run pages and JSON, implementation and operation pages, searches."""
    from sqlalchemy import func, select

    from kernelindex.store.database import open_store
    from kernelindex.store.tables import implementations, operations, runs

    store = open_store(str(db), upgrade=False)
    with store.engine.connect() as conn:
        run_ids = list(conn.scalars(select(runs.c.id).order_by(runs.c.seq)))
        slugs = list(conn.scalars(select(operations.c.slug).order_by(operations.c.seq)))
        once = (
            select(implementations.c.slug)
            .group_by(implementations.c.slug)
            .having(func.count() == 1)
            .order_by(implementations.c.slug)
        )
        implementation_slugs = list(conn.scalars(once))
    store.close()
    half = len(run_ids) // 2  # run pages and run JSON over different runs: each a first request
    terms = sorted({s[i : i + 5] for s in slugs for i in range(0, max(1, len(s) - 4), 4) if s[i : i + 5].isalnum()})
    return {
        "run": [f"/runs/{i}" for i in run_ids[:half]],
        "api": [f"/api/v1/runs/{i}" for i in run_ids[half:]],
        "implementation": [f"/implementations/{s}" for s in implementation_slugs],
        "operation": [f"/operations/{s}" for s in slugs],
        "search": [f"/search?q={t}" for t in terms],
    }


def site_store(catalog: Path | None, folder: Path) -> Path:
    """A store in ``folder`` holding the catalog export ``catalog``, imported afresh."""
    from kernelindex.ingest.catalog import import_catalog
    from kernelindex.store.database import open_store

    if catalog is None or not catalog.exists():
        raise SystemExit("no catalog export: give its path (../shared/data/kernelindex-catalog-*.jsonl.zst)")
    db = folder / "site.db"
    store = open_store(str(db))
    import_catalog(store, catalog)
    store.close()
    return db


def measure(
    site: Site,
    kinds: dict[str, list[str]],
    pages: int,
    cold_starts: int,
    seed: int,
    levels: tuple[int, ...],
    samples: int,
) -> dict[str, object]:
    fresh = Paths(kinds, seed)
    Client.retries = 0
    colds, bytecode = [], []
    if site.bytecode:  # cold starts with Python's bytecode cache (the first fills it), then as the environment is
        plain = site.env
        site.env = {**plain, "PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(site.bytecode)}
        for _ in range(cold_starts):
            bytecode.append(site.start(fresh.take("run", 1)[0]))
            site.stop()
        site.env = plain
    for _ in range(cold_starts - 1):
        colds.append(site.start(fresh.take("run", 1)[0]))
        site.stop()
    colds.append(site.start(fresh.take("run", 1)[0]))
    figures: dict[str, object] = {"cold": colds, "cold, bytecode": bytecode, "load before": os.getloadavg()[0]}
    try:
        time.sleep(2.0)  # every worker up
        asyncio.run(send(site.port, fresh.mixed(50, random.Random(seed)), 4))  # each worker has loaded its code

        def level(concurrency: int, count: int) -> tuple[float, float, float]:
            paths = fresh.take("run", count)
            cpu0, db0 = site.cpu()
            seconds = asyncio.run(send(site.port, paths, concurrency))
            cpu1, db1 = site.cpu()
            return (cpu1 - cpu0) / count * 1000, (db1 - db0) / count * 1000, count / seconds

        figures["levels"] = {c: level(c, pages) for c in levels}
        rng = random.Random(seed + 1)
        mixed, held = [], []
        for _ in range(samples):
            paths = fresh.mixed(pages, rng)
            cpu0, db0 = site.cpu()
            seconds = asyncio.run(send(site.port, paths, 16, held))
            cpu1, db1 = site.cpu()
            mixed.append((len(paths) / seconds, (cpu1 - cpu0 + db1 - db0) / len(paths) * 1000))
        figures["mixed"] = mixed
        figures["held"] = held
        figures["c1 again"] = level(1, max(1, MEMORY_AFTER - fresh.given))
        figures["distinct"] = fresh.given
        figures["memory"] = site.memory()
        figures["load after"] = os.getloadavg()[0]
        figures["retries"] = Client.retries
        return figures
    finally:
        site.stop()


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values)


def report(results: dict[str, dict[str, object]], ours: str) -> None:
    labels = list(results)
    print(f"\n{'':44}" + "".join(f"{label:>26}" for label in labels))

    def row(name: str, cells: list[str]) -> None:
        print(f"{name:44}" + "".join(f"{cell:>26}" for cell in cells))

    row(
        "cold start to first page, median (all) s",
        [
            f"{statistics.median(c[0] for c in r['cold']):.2f} ({' '.join(f'{c[0]:.2f}' for c in r['cold'])})"
            for r in results.values()
        ],
    )
    row(
        "  its CPU seconds by then, median",
        [f"{statistics.median(c[1] for c in r['cold']):.2f}" for r in results.values()],
    )
    if any(r["cold, bytecode"] for r in results.values()):
        row(
            "  bytecode cached (1st fills it): s; CPU s",
            [" ".join(f"{c[0]:.1f};{c[1]:.1f}" for c in r["cold, bytecode"]) or "-" for r in results.values()],
        )
    levels = list(next(iter(results.values()))["levels"])
    for c in levels:
        row(
            f"never-requested run page c{c}: CPU ms (+db)",
            [
                f"{r['levels'][c][0]:.2f}"
                + (f" (+{r['levels'][c][1]:.2f})" if r["levels"][c][1] else "")
                + f" {r['levels'][c][2]:.0f}/s"
                for r in results.values()
            ],
        )
    row(
        "  again at c1 after the rest",
        [
            f"{r['c1 again'][0]:.2f}" + (f" (+{r['c1 again'][1]:.2f})" if r["c1 again"][1] else "")
            for r in results.values()
        ],
    )
    row(
        f"  CPU c{levels[-1]} / c{levels[0]}",
        [f"{r['levels'][levels[-1]][0] / r['levels'][levels[0]][0]:.2f}" for r in results.values()],
    )
    mixed = all(r["mixed"] for r in results.values())
    if mixed:
        row(
            "mixed distinct c16, req/s (5 samples)",
            [" ".join(f"{s[0]:.0f}" for s in r["mixed"]) for r in results.values()],
        )
        row(
            "  median req/s; spread (max-min)/median",
            [
                f"{statistics.median(s[0] for s in r['mixed']):.0f}; {spread([s[0] for s in r['mixed']]):.0%}"
                for r in results.values()
            ],
        )
        row(
            "  connections per process, each sample",
            [" ".join("/".join(map(str, h)) for h in r["held"]) for r in results.values()],
        )
        row(
            "  CPU ms per request (+db), median",
            [f"{statistics.median(s[1] for s in r['mixed']):.2f}" for r in results.values()],
        )
    row(
        f"RSS / PSS MiB after {MEMORY_AFTER} pages",
        [
            "{:.0f} / {:.0f}".format(*r["memory"][0])
            + (" (+db {:.0f} / {:.0f})".format(*r["memory"][1]) if r["memory"][1][0] else "")
            for r in results.values()
        ],
    )
    row("requests sent again (closed keep-alive)", [str(r.get("retries", 0)) for r in results.values()])
    row("load average before / after", [f"{r['load before']:.1f} / {r['load after']:.1f}" for r in results.values()])
    mine = results[ours]
    for label, other in results.items():
        if label == ours:
            continue
        ratio = (
            statistics.median(s[0] for s in mine["mixed"]) / statistics.median(s[0] for s in other["mixed"])
            if mixed
            else 0
        )
        cpu = [mine["levels"][c][0] / (other["levels"][c][0] + other["levels"][c][1]) for c in levels]
        print(
            f"{ours} / {label}: mixed c16 throughput x{ratio:.2f} (target >= {TARGETS['mixed ratio']}); "
            f"CPU per page (with its database) at c{levels} " + " ".join(f"{x:.2f}" for x in cpu) + "; cold start "
            f"{statistics.median(c[0] for c in mine['cold']) / statistics.median(c[0] for c in other['cold']):.2f}"
        )
    print(
        f"targets: CPU flat c1..c16; spread < {TARGETS['spread']:.0%}; cold start <= {TARGETS['cold start']} s; "
        f"RSS <= {TARGETS['memory']:.0f} MiB. cores {os.cpu_count()}"
    )


def ours(label: str, db: Path, workers: int, src: Path | None, bytecode: Path | None) -> Site:
    env = {"PYTHONPATH": str(src)} if src else {}
    argv = [sys.executable, "-m", "kernelindex.cli", "serve", "--db", str(db), "--port", "{port}"]
    return Site(label, argv + ["--workers", str(workers)], env, bytecode=bytecode / label if bytecode else None)


def public(folder: Path, url: str, postgres_data: Path | None) -> Site:
    node = os.environ.get("NODE", "node")
    root = int(postgres_data.joinpath("postmaster.pid").read_text().split()[0]) if postgres_data else None
    env = {"CATALOG_BACKEND": "postgres", "DATABASE_URL": url, "NODE_ENV": "production", "NEXT_TELEMETRY_DISABLED": "1"}
    argv = [node, "node_modules/next/dist/bin/next", "start", "-H", "127.0.0.1", "-p", "{port}"]
    return Site("public site", argv, env, cwd=folder, database_root=root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("catalog", nargs="?", type=Path, default=DEFAULT_CATALOG[-1] if DEFAULT_CATALOG else None)
    parser.add_argument("--db", type=Path, help="a store already holding the export (else imported afresh)")
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument(
        "--pages", type=int, default=200, help="run pages per concurrency level, paths per mixed sample"
    )
    parser.add_argument("--cold-starts", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--before", type=Path, help="another source tree's src/, served as 'before'")
    parser.add_argument("--public", type=Path, help="the public site's built apps/web folder")
    parser.add_argument("--public-build", type=Path, help="a copy of its fresh .next, restored before measuring it")
    parser.add_argument("--public-db", default="postgresql://kernelindex@127.0.0.1:55433/kernelindex")
    parser.add_argument("--postgres-data", type=Path, help="its PostgreSQL data folder (CPU and memory counted apart)")
    parser.add_argument("--levels", default=",".join(map(str, LEVELS)), help="concurrency levels, e.g. 1,16")
    parser.add_argument("--samples", type=int, default=SAMPLES, help="mixed samples at c16 (0: none)")
    parser.add_argument(
        "--bytecode",
        type=Path,
        help="also time our cold starts with Python's bytecode cached in this folder (as an installed package has it), "
        "where the environment sets PYTHONDONTWRITEBYTECODE and every start compiles our source",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--report", type=Path, help="print the report of figures written with --json, and stop")
    args = parser.parse_args()
    if args.report:
        results = json.loads(args.report.read_text())
        for figures in results.values():
            figures["levels"] = {int(c): v for c, v in figures["levels"].items()}
        report(results, "ours")
        return
    levels = tuple(int(c) for c in args.levels.split(","))
    with tempfile.TemporaryDirectory() as folder:
        db = args.db or site_store(args.catalog, Path(folder))
        kinds = kinds_of(db)
        sites = []
        if args.before:
            sites.append(ours("before", db, args.workers, args.before, args.bytecode))
        sites.append(ours("ours", db, args.workers, None, args.bytecode))
        if args.public:
            if args.public_build:
                shutil.rmtree(args.public / ".next", ignore_errors=True)
                shutil.copytree(args.public_build, args.public / ".next", symlinks=True)
            sites.append(public(args.public, args.public_db, args.postgres_data))
        # which server goes first turns with the seed: on a host whose load drifts, the first one measured is
        # not always the same (pairs of runs with consecutive seeds see each order once)
        turn = args.seed % len(sites)
        results = {}
        for site in sites[turn:] + sites[:turn]:
            print(f"measuring {site.label} ...", flush=True)
            results[site.label] = measure(site, kinds, args.pages, args.cold_starts, args.seed, levels, args.samples)
        report(results, "ours")
        if args.json:
            args.json.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
