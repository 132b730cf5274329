"""The site under load, as a visitor sees it: `kernelindex serve` on the real export, over HTTP.

Imports the catalog export into a fresh SQLite store, then runs two configurations one after the
other on the same store, each as its own `kernelindex serve` on 127.0.0.1:

- before: one worker, no caching and no compression ($KERNELINDEX_WEB_CACHE=off);
- after:  --workers N (default: one per core), with the exact cache and compression.

For each it prints: cold start (process start to the first 200), sequential p50/p95/p99 for a
repeated run page, a never-requested run page (each run once), an operation page, search (each
query new) and the API's run JSON; then the run page at concurrency 8 (1,000 requests over eight
keep-alive connections, a bounded loop); RSS and PSS of the whole process tree, idle and after
load; and, for each sequential kind, the server's CPU time per request (all its processes), the
figure to trust when other work shares the machine. The client is a small HTTP/1.1 client on asyncio (keep-alive, `Accept-Encoding: gzip, br`,
keeps the cookie like a browser), so its own cost stays small. Targets are printed beside.

    .venv/bin/python benchmarks/web_load.py [catalog.jsonl.zst] [--workers N] [--seed N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from process_kit import process_tree  # noqa: E402  (the tests' reader of /proc)

DEFAULT_CATALOG = sorted((REPO.parent / "shared" / "data").glob("kernelindex-catalog-*.jsonl.zst"))
SEQUENTIAL = 300
LOAD_REQUESTS = 1000
CONCURRENCY = 8
TARGETS = {"run page, repeated": 2.5, "API run JSON": 1.5, "run page, never requested": 9.0}


class Client:
    """One keep-alive HTTP/1.1 connection, GET only, as a browser holds one: it keeps the cookie,
    reads Content-Length and chunked bodies, and sends a request again on a new connection when the
    server had closed the idle one before the request reached it (keep-alive timeout), counting each
    such resend in ``Client.retries``. Both load benchmarks (and web_memory.py) use it."""

    retries = 0

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookie: str | None = None
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> tuple[int, bytes]:
        """The status and the body (as sent: compressed where the server compressed it)."""
        fresh = self.writer is None
        try:
            return await self._get(path)
        except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError) as exc:
            partial = isinstance(exc, asyncio.IncompleteReadError) and exc.partial
            if fresh or partial:  # a new connection that failed, or an answer cut off: not an idle close
                raise
            self.close()
            Client.retries += 1
            return await self._get(path)

    async def _get(self, path: str) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, limit=1 << 22)
        assert self.reader is not None
        cookie = f"Cookie: {self.cookie}\r\n" if self.cookie else ""
        self.writer.write(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nAccept-Encoding: gzip, br\r\n{cookie}\r\n".encode()
        )
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status, length, chunked, closing = int(head[0].split()[1]), 0, False, False
        for line in head[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding":
                chunked = "chunked" in value.lower()
            elif name == "connection":
                closing = value.lower() == "close"
            elif name == "set-cookie":
                self.cookie = value.split(";")[0]
        if chunked:
            chunks = []
            while size := int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16):
                chunks.append((await self.reader.readexactly(size + 2))[:-2])
            await self.reader.readuntil(b"\r\n")  # the end: no trailers are sent
            body = b"".join(chunks)
        else:
            body = await self.reader.readexactly(length) if length else b""
        if closing:
            self.close()
        return status, body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return statistics.median(samples), cuts[94], cuts[98]


async def timed_sequence(client: Client, paths: list[str]) -> list[float]:
    times = []
    for path in paths:
        start = time.perf_counter()
        status, _ = await client.get(path)
        times.append((time.perf_counter() - start) * 1000)
        if status != 200:
            raise SystemExit(f"GET {path} answered {status}")
    return times


async def load(port: int, paths: list[str], total: int, concurrency: int) -> tuple[float, list[float]]:
    """``total`` requests over ``concurrency`` connections; returns (requests/s, latencies in ms)."""
    clients = [Client(port) for _ in range(concurrency)]
    for client in clients:  # connect and take the cookie first, as a browser would have
        await client.get(paths[0])
    latencies: list[float] = []
    issued = 0

    async def worker(client: Client) -> None:
        nonlocal issued
        while issued < total:
            path = paths[issued % len(paths)]
            issued += 1
            start = time.perf_counter()
            status, _ = await client.get(path)
            latencies.append((time.perf_counter() - start) * 1000)
            if status != 200:
                raise SystemExit(f"GET {path} answered {status} under load")

    began = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in clients))
    elapsed = time.perf_counter() - began
    for client in clients:
        client.close()
    return total / elapsed, latencies


def tree_cpu(root: int) -> float:
    """User + system CPU seconds of ``root`` and its (living) descendants."""
    total = 0
    for pid in process_tree(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def tree_memory(root: int) -> tuple[float, float]:
    """(RSS, PSS) in MiB summed over ``root`` and all its descendants."""
    rss = pss = 0
    for pid in process_tree(root):
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            continue
    return rss / 1024, pss / 1024


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(db: Path, workers: int, fast: bool) -> tuple[subprocess.Popen, int, float]:
    port = free_port()
    env = {**os.environ, "KERNELINDEX_WEB_CACHE": "on" if fast else "off"}
    began = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernelindex.cli",
            "serve",
            "--db",
            str(db),
            "--port",
            str(port),
            "--workers",
            str(workers),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = began + 60

    async def first_ok() -> bool:
        client = Client(port)
        try:
            return (await client.get("/api/v1/sources"))[0] == 200
        except (OSError, EOFError):  # not listening yet, or closed while starting
            return False
        finally:
            client.close()

    while not asyncio.run(first_ok()):
        if proc.poll() is not None or time.perf_counter() > deadline:
            raise SystemExit(f"server did not start: {proc.stderr.read().decode() if proc.stderr else ''}")
        time.sleep(0.01)
    return proc, port, (time.perf_counter() - began) * 1000


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def pick(db: Path, seed: int):
    """Run ids (shuffled), operation slugs and search terms from the store."""
    from sqlalchemy import select

    from kernelindex.store.database import open_store
    from kernelindex.store.tables import operations, runs

    store = open_store(str(db))
    with store.engine.connect() as conn:
        run_ids = list(conn.scalars(select(runs.c.id).order_by(runs.c.seq)))
        slugs = list(conn.scalars(select(operations.c.slug).order_by(operations.c.seq)))
    store.close()
    rng = random.Random(seed)
    rng.shuffle(run_ids)
    terms = sorted({slug[i : i + 4] for slug in slugs for i in range(0, max(1, len(slug) - 3), 3)})
    rng.shuffle(terms)
    return run_ids, slugs, terms


def measure(
    label: str, db: Path, workers: int, fast: bool, ids: list[str], slugs: list[str], terms: list[str]
) -> dict[str, object]:
    proc, port, cold_ms = start_server(db, workers, fast)
    Client.retries = 0
    try:
        time.sleep(1.0)  # let every worker finish starting before the idle figure
        idle = tree_memory(proc.pid)
        repeated = [f"/runs/{i}" for i in ids[:20]]
        api = [f"/api/v1/runs/{i}" for i in ids[:20]]
        ops = [f"/operations/{s}" for s in slugs[:20]]
        fresh = [f"/runs/{i}" for i in ids[20 : 20 + SEQUENTIAL]]
        searches = [f"/?q={t}" for t in terms[:SEQUENTIAL]]

        async def timed_with_cpu(client: Client, kind: str, paths: list[str]) -> list[float]:
            began = tree_cpu(proc.pid)
            times = await timed_sequence(client, paths)
            figures[kind + " cpu"] = (tree_cpu(proc.pid) - began) / len(paths) * 1000
            return times

        figures: dict[str, object] = {}

        async def run() -> None:
            client = Client(port)
            for _ in range(3 * workers):  # warm: each worker has seen each page (connections rotate)
                for path in repeated + api + ops:
                    fresh_client = Client(port)
                    await fresh_client.get(path)
                    fresh_client.close()
            await timed_sequence(client, repeated + api + ops)
            for kind, paths in (
                ("run page, repeated", (repeated * 15)[:SEQUENTIAL]),
                ("run page, never requested", fresh),
                ("operation page", (ops * 15)[:SEQUENTIAL]),
                ("search", searches),
                ("API run JSON", (api * 15)[:SEQUENTIAL]),
            ):
                figures[kind] = await timed_with_cpu(client, kind, paths)
            client.close()
            figures["load"] = await load(port, repeated, LOAD_REQUESTS, CONCURRENCY)

        asyncio.run(run())
        figures["after load"] = tree_memory(proc.pid)
        figures["idle"] = idle
        figures["cold start"] = cold_ms
        figures["retries"] = Client.retries
        return figures
    finally:
        stop_server(proc)


def cells(values: list[str]) -> str:
    return "".join(f"{value:>32}" for value in values)


def report(results: dict[str, dict[str, object]], workers: int) -> None:
    kinds = ("run page, repeated", "run page, never requested", "operation page", "search", "API run JSON")
    print(f"\n{'':34}" + cells(list(results)) + f"{'target':>14}")
    for kind in kinds:
        row = ["{:.2f} / {:.2f} / {:.2f}".format(*percentiles(r[kind])) for r in results.values()]
        target = f"<= {TARGETS[kind]} p50" if kind in TARGETS else ""
        print(f"{kind + ' ms p50/p95/p99':34}" + cells(row) + f"{target:>14}")
        print(f"{'  server CPU ms per request':34}" + cells([f"{r[kind + ' cpu']:.2f}" for r in results.values()]))
    row = [
        "{:.0f}/s, p50 {:.1f} p95 {:.1f} ms".format(r["load"][0], *percentiles(r["load"][1])[:2])
        for r in results.values()
    ]
    print(f"{'run page, concurrency 8':34}" + cells(row) + f"{'>= 550/s':>14}")
    for when in ("idle", "after load"):
        row = ["{:.0f} / {:.0f}".format(*r[when]) for r in results.values()]
        print(f"{'RSS / PSS MiB, ' + when:34}" + cells(row) + (f"{'<= 200 RSS':>14}" if when != "idle" else ""))
    print(f"{'cold start to first 200':34}" + cells(["{:.0f} ms".format(r["cold start"]) for r in results.values()]))
    print(f"{'requests sent again (idle closed)':34}" + cells([str(r["retries"]) for r in results.values()]))
    before, after = results.get("before"), results.get("after")
    if before and after:
        ratios = [f"{kind}: {percentiles(after[kind])[0] / percentiles(before[kind])[0]:.2f}" for kind in kinds]
        ratios.append(f"throughput x{after['load'][0] / before['load'][0]:.1f}")
        print("\nafter / before (p50): " + ", ".join(ratios))
    print(f"(workers after: {workers}; cores: {os.cpu_count()}; load average: {os.getloadavg()[0]:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("catalog", nargs="?", type=Path, default=DEFAULT_CATALOG[-1] if DEFAULT_CATALOG else None)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--seed", type=int, default=20260815)
    parser.add_argument("--only", choices=["before", "after"], help="measure one configuration only")
    args = parser.parse_args()
    if args.catalog is None or not args.catalog.exists():
        raise SystemExit("no catalog export: give its path (../shared/data/kernelindex-catalog-*.jsonl.zst)")
    from kernelindex.ingest.catalog import import_catalog
    from kernelindex.store.database import open_store

    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "load.db"
        began = time.perf_counter()
        store = open_store(str(db))
        import_catalog(store, args.catalog)
        store.close()
        print(f"imported {args.catalog.name} in {time.perf_counter() - began:.1f} s")
        ids, slugs, terms = pick(db, args.seed)
        half = len(ids) // 2  # each configuration gets runs the other never asked for
        results = {}
        if args.only != "after":
            results["before"] = measure("before", db, 1, False, ids[:half], slugs, terms[:SEQUENTIAL])
        if args.only != "before":
            results["after"] = measure(
                "after", db, args.workers, True, ids[half:], slugs, terms[SEQUENTIAL : 2 * SEQUENTIAL]
            )
        report(results, args.workers)


if __name__ == "__main__":
    main()
