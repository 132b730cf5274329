"""Server time of serving resolver answers, model pages and serving run JSON at 1x and 10x the
serving rows of the public slice (targets: <= 50 ms median at 1x, <= 150 ms at 10x).

Imports ``kernelindex-serving-slice-*.jsonl.zst`` into a fresh SQLite file and times (median and
p95 of --repeat requests through the ASGI app, in process) the resolver for the model/GPU pairs
with the most runs, the model page JSON and a serving run JSON. Then it adds nine variants of
every serving run (same cohort: same model, workload, topology and metric set; throughput scaled
by a seeded log-normal factor; new digest and id) and times the same requests again.

    .venv/bin/python benchmarks/serving_resolver_bench.py [SLICE] [--repeat 25] [--seed N]
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import zstandard
from fastapi.testclient import TestClient

from kernelindex.ingest.catalog import import_catalog
from kernelindex.ingest.jsonlines import js_dumps
from kernelindex.records.canonical import digest
from kernelindex.store.database import open_store
from kernelindex.store.ids import uuid7
from kernelindex.web.app import create_app

REPO = Path(__file__).resolve().parents[1]
DEFAULT = sorted((REPO.parent / "shared" / "data").glob("kernelindex-serving-slice-*.jsonl.zst"))
VARIANTS = 9


def read_lines(path: Path) -> list[dict]:
    with open(path, "rb") as fh:
        return [json.loads(t) for t in io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(fh), "utf-8")]


def write_lines(path: Path, lines: list[dict]) -> Path:
    text = "".join(js_dumps(line) + "\n" for line in lines)
    path.write_bytes(zstandard.ZstdCompressor().compress(text.encode()))
    return path


def variants(lines: list[dict], seed: int) -> list[dict]:
    """Nine more runs per serving run, in the same cohorts, with their measurements."""
    rng = random.Random(seed)
    out = []
    for line in lines:
        if line["table"] != "serving_runs":
            continue
        for i in range(VARIANTS):
            row = copy.deepcopy(line["row"])
            spec = row["manifest"]["spec"]
            for m in spec["measurements"]:
                m["value"] = round(m["value"] * rng.lognormvariate(0, 0.15), 2)
            spec["observedAt"] = spec["observedAt"][:4] + f"-{(i % 9) + 1:02d}" + spec["observedAt"][7:]
            row.update(id=uuid7(), runDigest=digest(row["manifest"]))
            out.append({"table": "serving_runs", "row": row})
            for m in spec["measurements"]:
                out.append(
                    {
                        "table": "serving_measurements",
                        "row": {"id": uuid7(), "runId": row["id"], **m, "sampleCount": None},
                    }
                )
    return out


def timed(client: TestClient, url: str, repeat: int) -> tuple[float, float]:
    assert client.get(url).status_code == 200, url
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        reply = client.get(url)
        samples.append((time.perf_counter() - start) * 1000)
        assert reply.status_code == 200
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def measure(db: str, lines: list[dict], repeat: int) -> dict[str, tuple[float, float]]:
    runs = [line["row"] for line in lines if line["table"] == "serving_runs"]
    models = {line["row"]["id"]: line["row"]["slug"] for line in lines if line["table"] == "model_revisions"}
    pairs = Counter((models[r["modelRevisionId"]], r["acceleratorModel"].split()[1].split("-")[0]) for r in runs)
    store = open_store(db)
    with TestClient(create_app(store=store)) as client:
        urls = {
            f"resolve {m} on {g}": f"/api/v1/resolve/serving?model={m}&gpu={g}" for (m, g), _ in pairs.most_common(2)
        }
        top_model = pairs.most_common(1)[0][0][0]
        urls[f"model {top_model} JSON"] = f"/api/v1/models/{top_model}"
        urls["serving run JSON"] = f"/api/v1/serving-runs/{runs[len(runs) // 2]['id']}"
        result = {name: timed(client, url, repeat) for name, url in urls.items()}
    store.close()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("slice", nargs="?", type=Path, default=DEFAULT[0] if DEFAULT else None)
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()
    if args.slice is None or not args.slice.is_file():
        print("no serving slice: pass its path (../shared/data/kernelindex-serving-slice-*.jsonl.zst)")
        return 2
    lines = read_lines(args.slice)
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{tmp}/serving.db"
        import_catalog(open_store(db), args.slice)
        one = measure(db, lines, args.repeat)
        more = variants(lines, args.seed)
        import_catalog(open_store(db), write_lines(Path(tmp) / "more.jsonl.zst", more))
        ten = measure(db, lines + more, args.repeat)
    runs = sum(line["table"] == "serving_runs" for line in lines)
    print(f"serving runs: {runs} (1x), {runs * (1 + VARIANTS)} (10x); median / p95 ms of {args.repeat} requests")
    print(f"{'request':48} {'1x median':>10} {'1x p95':>8} {'10x median':>11} {'10x p95':>8} {'ratio':>6}")
    for name in one:
        (m1, p1), (m10, p10) = one[name], ten[name]
        print(f"{name:48} {m1:10.1f} {p1:8.1f} {m10:11.1f} {p10:8.1f} {m10 / m1:6.2f}")
    worst1, worst10 = max(m for m, _ in one.values()), max(m for m, _ in ten.values())
    print(
        f"targets: 1x median <= 50 ms: {'met' if worst1 <= 50 else 'missed'} (worst {worst1:.1f}); "
        f"10x median <= 150 ms: {'met' if worst10 <= 150 else 'missed'} (worst {worst10:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
