"""The transparency log's costs: the sample export's import with and without the log, and proof
and checkpoint times at a million leaves.

Import: paired rounds on fresh SQLite stores, with the log and without it (``log_new_records``
a no-op and no leaf computed by the import's workers: the baseline, measured in the same run,
alternating which goes first); printed: each side's median, the ratio of medians, and each
round's own ratio with their median (the target: with / without <= 1.10), in wall seconds and
in CPU seconds of the importing process and its workers. ``--whole-command`` times instead what a user
waits for: ``kernelindex import EXPORT --db NEW`` in a fresh interpreter each time, start to exit (the
interpreter, opening and migrating the new store, the import). Proofs: a store whose
log holds ``--leaves`` leaves (default 1,000,000; built straight into the log tables), then the
p50 and p95 of ``--proofs`` inclusion and consistency proofs at random places (targets: p50 <= 5
ms), each checked with RFC 9162's verifiers; and the cost of signing one checkpoint, which the
server does once per tree size off the request path.

    .venv/bin/python benchmarks/log_bench.py [catalog.jsonl.zst] [--rounds 5] [--leaves 1000000] [--proofs 500] [--seed N]
        [--skip-import | --skip-proofs] [--whole-command]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernelindex.ingest import catalog_lines  # noqa: E402
from kernelindex.ingest.catalog import import_catalog  # noqa: E402
from kernelindex.records import merkle  # noqa: E402
from kernelindex.records.signing import new_private_key  # noqa: E402
from kernelindex.services.log_checkpoints import CheckpointSigner  # noqa: E402
from kernelindex.store.bulk import insert_values  # noqa: E402
from kernelindex.store.database import open_store  # noqa: E402
from kernelindex.store.transparency import append, reads  # noqa: E402
from kernelindex.store.transparency.blocks import COLUMNS, block_rows  # noqa: E402
from kernelindex.store.transparency.leaves import leaf_hashes  # noqa: E402
from kernelindex.store.transparency.tables import KEPT_LEVEL, log_blocks, log_nodes, node_key  # noqa: E402
from web_bench import DEFAULT_CATALOG  # noqa: E402


def _percentiles(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return statistics.median(values), values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]


def _load() -> str:
    """The host's 1-minute load average: on a shared host, what the seconds below are worth."""
    return f"{os.getloadavg()[0]:.1f}"


def _cpu() -> float:
    """CPU seconds of this process and of its reaped children (an import's workers, once it ends)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def one_import(catalog: Path, folder: Path, name: str, with_log: bool) -> tuple[float, float]:
    """Wall and CPU seconds of one import into a new store."""
    real, real_leaf = append.log_new_records, catalog_lines.converted_leaf
    if not with_log:  # no log: nothing appended, and no leaf computed in the (forked) workers either
        append.log_new_records = lambda conn: 0
        catalog_lines.converted_leaf = lambda table, columns: None
    try:
        store = open_store(str(folder / f"{name}.db"))
        start, cpu = time.perf_counter(), _cpu()
        import_catalog(store, catalog)
        took, cpu = time.perf_counter() - start, _cpu() - cpu
        with store.read() as conn:
            size = reads.tree_size(conn)
        store.close()
    finally:
        append.log_new_records, catalog_lines.converted_leaf = real, real_leaf
    assert (size > 0) == with_log, (size, with_log)
    return took, cpu


# `kernelindex import` in a fresh interpreter, the log switched off as in `one_import` for the baseline
_COMMAND = """
import sys
if sys.argv[1] == "without":
    from kernelindex.ingest import catalog_lines
    from kernelindex.store.transparency import append
    append.log_new_records = lambda conn: 0
    catalog_lines.converted_leaf = lambda table, columns: None
from kernelindex.cli import app
sys.argv = ["kernelindex", "import", *sys.argv[2:]]
app()
"""


def one_command(catalog: Path, folder: Path, name: str, with_log: bool) -> tuple[float, float]:
    """Wall and CPU seconds of the whole command a user runs: ``kernelindex import EXPORT --db NEW``, from
    the interpreter's start (opening and migrating the new store included) to its exit."""
    db = folder / f"{name}.db"
    source = str(Path(importlib.util.find_spec("kernelindex").origin).parents[1])  # type: ignore[union-attr, arg-type]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}
    side = "with" if with_log else "without"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", _COMMAND, side, str(catalog), "--db", str(db)],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    with sqlite3.connect(db) as conn:
        size = conn.execute("SELECT count(*) FROM log_blocks").fetchone()[0]
    assert (size > 0) == with_log, (size, with_log)
    return took, cpu


def _summary(what: str, withs: list[float], withouts: list[float]) -> float:
    """Print each side's median, the ratio of medians and each round's own ratio; returns the
    median of those."""
    a, b = statistics.median(withs), statistics.median(withouts)
    paired = sorted(w / wo for w, wo in zip(withs, withouts))  # each round's two imports, back to back
    print(f"  {what}: with the log    median {a:6.3f} s   ({', '.join(f'{x:.3f}' for x in withs)})")
    print(f"  {what}: without the log median {b:6.3f} s   ({', '.join(f'{x:.3f}' for x in withouts)})")
    print(f"  {what}: ratio of medians {a / b:5.3f}; paired ratios median {statistics.median(paired):5.3f}")
    print(f"         ({', '.join(f'{x:.3f}' for x in paired)})")
    return statistics.median(paired)


def imports(catalog: Path, rounds: int, rng: random.Random, whole_command: bool) -> None:
    withs: list[tuple[float, float]] = []
    withouts: list[tuple[float, float]] = []
    load = _load()
    one = one_command if whole_command else one_import
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(rounds):
            order = [True, False] if rng.random() < 0.5 else [False, True]
            for with_log in order:
                (withs if with_log else withouts).append(one(catalog, Path(tmp), f"r{i}-{with_log}", with_log))
    what = "`kernelindex import`, the whole command" if whole_command else "import"
    print(f"{what} {catalog.name}, {rounds} paired rounds (fresh SQLite store each; load average {load} -> {_load()})")
    median = _summary("wall", [w for w, _ in withs], [w for w, _ in withouts])
    # CPU of the importing process and its workers: less moved by other work on the host than wall
    _summary("CPU ", [c for _, c in withs], [c for _, c in withouts])
    print(f"  target: median paired wall ratio <= 1.10: {'ok' if median <= 1.10 else 'OVER'}")


def big_log(store, leaves: int) -> None:
    """``leaves`` synthetic leaves written straight into the log tables, as appending writes them."""
    edge: list[tuple[int, bytes]] = []
    with store.begin() as conn:
        for first in range(0, leaves, 50_000):
            digests = [hashlib.sha256(i.to_bytes(8, "big")).digest() for i in range(first, min(leaves, first + 50_000))]
            seqs = list(range(first, first + len(digests)))
            insert_values(conn, log_blocks, COLUMNS, block_rows(first, 0, digests, seqs))  # table 0: none
            made = merkle.append(edge, leaf_hashes(digests), first, KEPT_LEVEL)
            insert_values(conn, log_nodes, append.NODE_COLUMNS, [(node_key(*node), h) for node, h in made])


def proofs(leaves: int, count: int, rng: random.Random) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(str(Path(tmp) / "big.db"))
        start = time.perf_counter()
        big_log(store, leaves)
        print(f"log of {leaves:,} leaves built in {time.perf_counter() - start:.1f} s")
        inclusion, consistency, roots, searches = [], [], [], []
        with store.read() as conn:
            size = reads.tree_size(conn)
            assert size == leaves
            root = reads.root_at(conn, size)
            for k in range(count):
                i = rng.randrange(size)
                t0 = time.perf_counter()
                proof = reads.inclusion_proof(conn, i, size)
                inclusion.append((time.perf_counter() - t0) * 1000)
                m = rng.randrange(1, size)
                t0 = time.perf_counter()
                cproof = reads.consistency_proof(conn, m, size)
                consistency.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                old_root = reads.root_at(conn, m)
                roots.append((time.perf_counter() - t0) * 1000)
                if k < 50:  # the proofs hold
                    leaf = reads.leaf_at(conn, i)
                    assert leaf is not None
                    merkle.verify_inclusion(i, size, leaf.hash, proof, root)
                    merkle.verify_consistency(m, size, old_root, root, cproof)
                    # a leaf found by its digest alone: no record table has it, so the blocks are searched
                    t0 = time.perf_counter()
                    found = reads.leaf_of(conn, leaf.digest)
                    searches.append((time.perf_counter() - t0) * 1000)
                    assert found is not None and found.index == i
        signer = CheckpointSigner(new_private_key(), "bench/log")
        signs = []
        for k in range(200):
            t0 = time.perf_counter()
            signer.sign(size + k, root)
            signs.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        for _ in range(200):
            signer.sign(size, root)  # a size already signed: the request path's case
        cached = (time.perf_counter() - t0) * 1000 / 200
        store.close()
    print(f"{count} proofs at {size:,} leaves (SQLite)        p50 ms   p95 ms   target p50 <= 5 ms")
    for name, values in (("inclusion proof", inclusion), ("consistency proof", consistency), ("root at a size", roots)):
        p50, p95 = _percentiles(values)
        print(f"  {name:<38} {p50:7.3f}  {p95:7.3f}   {'ok' if p50 <= 5 or name.startswith('root') else 'OVER'}")
    p50, p95 = _percentiles(searches)
    print(
        f"  a leaf found by its digest, blocks searched {p50:7.3f}  {p95:7.3f}   (a record's own digest: its table's index)"
    )
    p50, p95 = _percentiles(signs)
    print(f"  signing one new checkpoint             {p50:7.3f}  {p95:7.3f}   (once per tree size, by the watcher)")
    print(f"  a checkpoint already signed            {cached:7.4f}           (what a request costs)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("catalog", nargs="?", type=Path, default=DEFAULT_CATALOG[-1] if DEFAULT_CATALOG else None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--leaves", type=int, default=1_000_000)
    parser.add_argument("--proofs", type=int, default=500)
    parser.add_argument("--seed", type=int, default=random.randrange(2**32))
    parser.add_argument("--skip-import", action="store_true")
    parser.add_argument("--skip-proofs", action="store_true")
    parser.add_argument(
        "--whole-command",
        action="store_true",
        help="time `kernelindex import` as a user runs it (a fresh interpreter, a new store opened), not the import alone",
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"seed {args.seed}")
    if not args.skip_import:
        if args.catalog is None or not args.catalog.exists():
            print("no catalog export found (pass its path; it lives in ../shared/data)", file=sys.stderr)
            return 2
        imports(args.catalog, args.rounds, rng, args.whole_command)
    if not args.skip_proofs:
        proofs(args.leaves, args.proofs, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
