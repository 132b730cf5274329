"""Import of the real catalog export by two checkouts in turn, for judging a change on a machine
whose speed drifts: each round runs the baseline, then both checkouts' import phase (in an order
that alternates), each into a fresh migrated store; the paired ratio is immune to slow drift.

    python benchmarks/import_ab.py OLD_CHECKOUT [NEW_CHECKOUT] [--rounds 10] [--phase import|reimport] [--postgres]

``--postgres`` imports into fresh databases of one throw-away PostgreSQL (tests/pgserver.py) instead
of SQLite files.

A checkout is a folder with ``src/kernelindex`` and ``benchmarks/import_bench.py`` (e.g. a ``git
worktree`` of an older commit); each runs with its own code on this interpreter.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _run(tree: Path, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, str(tree / "benchmarks" / "import_bench.py"), *args],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tree / "src"), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"{tree}: {out.stderr.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _import(tree: Path, export: Path, phase: str, new_database: Callable[[], str] | None) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        db = new_database() if new_database else f"sqlite:///{Path(folder) / 'ab.db'}"
        code = f"from kernelindex.store import open_store; open_store({db!r}).close()"
        subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": str(tree / "src")})
        if phase == "reimport":
            _run(tree, str(export), "--phase", "import", "--db", db)
        return _run(tree, str(export), "--phase", "import", "--db", db)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path, nargs="?", default=HERE)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--phase", choices=["import", "reimport"], default="import")
    parser.add_argument(
        "--export",
        type=Path,
        default=HERE.parent / "shared" / "data" / "kernelindex-catalog-2026-08-15-167a1d6d.jsonl.zst",
    )
    parser.add_argument("--postgres", action="store_true", help="import into a throw-away PostgreSQL")
    args = parser.parse_args()
    with ExitStack() as stack:
        new_database = None
        if args.postgres:
            sys.path.insert(0, str(HERE / "tests"))
            from pgserver import start_server

            server = start_server()
            stack.callback(server.stop)
            new_database = server.new_database
        _rounds(args, new_database)


def _rounds(args: argparse.Namespace, new_database: Callable[[], str] | None) -> None:
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    seconds: dict[str, list[float]] = {"baseline": [], "old": [], "new": []}
    cpu: dict[str, list[float]] = {"old": [], "new": []}
    for n in range(args.rounds):
        seconds["baseline"].append(_run(trees["new"], str(args.export), "--phase", "baseline", "--db", "-")["seconds"])
        for name in ("old", "new") if n % 2 == 0 else ("new", "old"):
            result = _import(trees[name], args.export, args.phase, new_database)
            seconds[name].append(result["seconds"])
            cpu[name].append(result["cpu_seconds"])
        print(f"round {n + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in seconds.items()), flush=True)
    for name in ("old", "new"):
        ratios = [s / b for s, b in zip(seconds[name], seconds["baseline"], strict=True)]
        print(
            f"{name} ({trees[name]}): median {statistics.median(seconds[name]):.2f} s, "
            f"{statistics.median(ratios):.2f}x the baseline of its round, CPU {statistics.median(cpu[name]):.2f} s"
        )
    paired = [n / o for o, n in zip(seconds["old"], seconds["new"], strict=True)]
    print(
        f"new/old, paired by round: median {statistics.median(paired):.3f} (range {min(paired):.2f}-{max(paired):.2f})"
    )


if __name__ == "__main__":
    main()
