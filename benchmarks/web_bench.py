"""Server time of the heaviest pages on SQLite, with the real export and with 10× its runs.

Imports the real catalog export plus the two seed bundles into a fresh SQLite file, then times
(median of --repeat requests through the ASGI app, in process) a seed run page, a run page in the
largest comparison group, and the largest workload leaderboard. Then it adds nine variants of
every real run (same workload, protocol and environment, so the same comparison groups; value
scaled by a seeded log-normal factor, later observation date, new digest), and times the same
pages again. Printed: each median, the 10×/1× ratio, and the targets (50 ms, 150 ms). Last, at
10×, it times the pages with and without the ranking indexes of migration 0200 (dropped and
recreated, three rounds each, alternated), so their effect is measured against a baseline from
the same run.

It also replays each group's leader history from the runs and compares it with the export's
``record_events``: a check that our ranking picks the leaders the public site picked.

    .venv/bin/python benchmarks/web_bench.py [path/to/catalog.jsonl.zst] [--repeat 25] [--seed N]
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

import zstandard
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from kernelindex.ingest.bundles import import_bundles
from kernelindex.ingest.catalog import import_catalog
from kernelindex.ranking.history import leader_timeline
from kernelindex.ranking.reads import rank_inputs
from kernelindex.records.canonical import digest
from kernelindex.store.database import open_store
from kernelindex.store.ids import uuid7
from kernelindex.store.tables import metadata, record_events, runs
from kernelindex.web.app import create_app

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CATALOG = sorted((REPO.parent / "shared" / "data").glob("kernelindex-catalog-*.jsonl.zst"))
VARIANTS = 9
RANK_INDEXES = ("ix_runs_rank_cover", "ix_runs_workload_key")  # migration 0200_rank_indexes


def read_catalog(path: Path) -> list[dict]:
    with open(path, "rb") as fh:
        return [json.loads(t) for t in io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(fh), "utf-8")]


def vary(row: dict, i: int, rng: random.Random) -> dict:
    """A plausible sibling of a real run: same cohort, scaled value, later date, new digest."""
    new = copy.deepcopy(row)
    factor = math.exp(rng.gauss(0.0, 0.08))
    spec = new["manifest"]["run"]["spec"]
    observed = datetime.strptime(spec["observedAt"], "%Y-%m-%dT%H:%M:%S.%fZ") + timedelta(
        days=i, minutes=rng.randrange(600)
    )
    spec["observedAt"] = observed.strftime("%Y-%m-%dT%H:%M:%S.") + f"{observed.microsecond // 1000:03d}Z"
    timing = spec.get("timing")
    if timing and timing.get("latencyNs"):
        stat = timing["primaryStatistic"]
        timing["latencyNs"][stat] = max(1, round(timing["latencyNs"][stat] * factor))
        value = timing["latencyNs"][stat]
    else:
        spec["measurements"][0]["value"] = spec["measurements"][0]["value"] * factor
        value = spec["measurements"][0]["value"]
    native = spec.get("sourceNative")
    if native:
        native["externalId"] = f"{native.get('externalId', '')}-variant{i}"
        if "latency_ms" in native.get("metrics", {}):
            native["metrics"]["latency_ms"] = value / 1e6
    new.update(
        id=uuid7(),
        runDigest=digest(new["manifest"]["run"]),
        primaryValue=value,
        observedAt=spec["observedAt"],
        supersedesId=None,
    )
    return new


def median_ms(client: TestClient, url: str, repeat: int) -> tuple[float, float]:
    """Median wall time and median CPU time (this process: server and in-process client) in ms."""
    assert client.get(url).status_code == 200, url  # warm-up, and a check the page works
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        response = client.get(url)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        assert response.status_code == 200
    return statistics.median(walls), statistics.median(cpus)


def index_effect(store, client: TestClient, pages: dict[str, str], repeat: int, rounds: int = 3):
    """Median (wall, cpu) ms of each page without and with the ranking indexes. The two states
    alternate ``rounds`` times each, so a change in machine load falls on both; ends with the indexes."""
    indexes = [i for i in metadata.tables["runs"].indexes if i.name in RANK_INDEXES]
    samples = {state: defaultdict(lambda: ([], [])) for state in (False, True)}
    for present in [False, True] * rounds:
        for index in indexes:
            (index.create if present else index.drop)(store.engine)
        for name, url in pages.items():
            client.get(url)
            for _ in range(repeat):
                wall, cpu = time.perf_counter(), time.process_time()
                assert client.get(url).status_code == 200
                samples[present][name][0].append((time.perf_counter() - wall) * 1000)
                samples[present][name][1].append((time.process_time() - cpu) * 1000)
    return {
        name: tuple(
            (statistics.median(samples[s][name][0]), statistics.median(samples[s][name][1])) for s in (False, True)
        )
        for name in pages
    }


def targets(store) -> dict[str, str]:
    with store.engine.connect() as conn:
        seed = conn.execute(select(runs.c.id).where(runs.c.run_digest.like("sha256:149b7c1a%"))).scalar_one()
        key, _ = conn.execute(
            select(runs.c.comparison_key, func.count()).group_by(runs.c.comparison_key).order_by(func.count().desc())
        ).first()
        in_big = conn.execute(select(runs.c.id).where(runs.c.comparison_key == key).order_by(runs.c.seq)).first()[0]
        workload, n = conn.execute(
            select(runs.c.workload_id, func.count()).group_by(runs.c.workload_id).order_by(func.count().desc())
        ).first()
    return {
        "seed run page": f"/runs/{seed}",
        "run page, largest group": f"/runs/{in_big}",
        f"largest leaderboard ({n} runs)": f"/workloads/{workload}",
    }


def history_agreement(store) -> tuple[int, int]:
    with store.engine.connect() as conn:
        recorded = defaultdict(list)
        for e in conn.execute(select(record_events).order_by(record_events.c.at, record_events.c.seq)):
            recorded[e.comparison_key].append(e.run_id)
        groups = defaultdict(list)
        for run in rank_inputs(conn, list(recorded)):
            groups[run.comparison_key].append(run)
    same = sum(1 for k, ids in recorded.items() if [e.run_id for e in leader_timeline(groups[k])] == ids)
    return same, len(recorded)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("catalog", nargs="?", type=Path, default=DEFAULT_CATALOG[-1] if DEFAULT_CATALOG else None)
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--seed", type=int, default=random.randrange(2**32))
    args = parser.parse_args()
    if args.catalog is None or not args.catalog.exists():
        print("no catalog export found (pass its path; it lives in ../shared/data)", file=sys.stderr)
        return 2
    print(f"catalog {args.catalog.name}; variant seed {args.seed}; median of {args.repeat} requests per page")
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(str(Path(tmp) / "bench.db"))
        start = time.perf_counter()
        import_catalog(store, args.catalog)
        import_bundles(store, sorted((REPO / "src" / "kernelindex" / "sample").glob("*.json")))
        print(f"imported the export + 2 seed bundles in {time.perf_counter() - start:.1f} s")
        same, total = history_agreement(store)
        print(
            f"leader history replayed from the runs equals the export's record_events in {same}/{total} groups"
            " (the seed run, absent from the export, led one group before the export's first event)"
        )

        pages = targets(store)
        client = TestClient(create_app(store=store))
        base = {name: median_ms(client, url, args.repeat) for name, url in pages.items()}

        real_runs = [line["row"] for line in read_catalog(args.catalog) if line["table"] == "benchmark_runs"]
        variants = Path(tmp) / "variants.jsonl"
        with open(variants, "w", encoding="utf-8") as out:
            for row in real_runs:
                for i in range(1, VARIANTS + 1):
                    out.write(json.dumps({"table": "benchmark_runs", "row": vary(row, i, rng)}) + "\n")
        start = time.perf_counter()
        import_catalog(store, variants)
        with store.engine.connect() as conn:
            count = conn.scalar(select(func.count()).select_from(runs))
        print(
            f"added {len(real_runs) * VARIANTS} variant runs in {time.perf_counter() - start:.1f} s ({count} runs in all)"
        )
        pages10 = targets(store)
        grown = {name: median_ms(client, url, args.repeat) for name, url in pages10.items()}
        effect = index_effect(store, client, pages10, args.repeat)

    load = os.getloadavg()[0]
    print(
        f"\nload average while measuring: {load:.1f} on {os.cpu_count()} cores (wall times grow with it; CPU times less)"
    )
    print(
        f"{'page':<34} {'1× wall':>8} {'10× wall':>9} {'ratio':>6} {'1× cpu':>7} {'10× cpu':>8} {'ratio':>6}"
        "   targets (wall): 1× < 50 ms, 10× < 150 ms"
    )
    ok = True
    for (name, (w1, c1)), (name10, (w10, c10)) in zip(base.items(), grown.items()):
        good = w1 < 50 and w10 < 150
        ok &= good
        print(
            f"{name:<34} {w1:8.1f} {w10:9.1f} {w10 / w1:6.2f} {c1:7.1f} {c10:8.1f} {c10 / c1:6.2f}   "
            f"{'ok' if good else 'OVER'}" + (f"   (10×: {name10})" if name10 != name else "")
        )
    print(
        f"\nat 10×, with and without the indexes {', '.join(RANK_INDEXES)} (rounds alternated; ratio = with / without):"
    )
    print(f"{'page':<34} {'wall without':>12} {'with':>6} {'ratio':>6} {'cpu without':>12} {'with':>6} {'ratio':>6}")
    for name, ((w0, c0), (w1, c1)) in effect.items():
        print(f"{name:<34} {w0:12.1f} {w1:6.1f} {w1 / w0:6.2f} {c0:12.1f} {c1:6.1f} {c1 / c0:6.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
