"""How `serve --workers N` ends when its workers cannot start: gunicorn's own master against ours.

Each round starts both masters (in turn, same options: `web/server/workers.gunicorn_args`, N workers, a
store URL naming no SQL dialect, so every worker fails as its app loads) and counts their exit
statuses. Status 3 is gunicorn's "worker failed to boot"; gunicorn's own master sometimes ended with
an uncaught exception instead (status 1) when a second worker failed while it stopped for the first,
a race whose odds depend on the machine's pace: hence both, in the same run. Since the masters preload
the app (2026-12-04) the app fails in the master, before any worker is forked: ours still ends with
status 3, gunicorn's own with 1 every time, and the race this measured is gone.

    .venv/bin/python benchmarks/boot_failure.py [--rounds 30] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import Counter

from kernelindex.store.database import URL_ENV
from kernelindex.web.server.workers import FAILED_TO_BOOT, MASTER, gunicorn_args

MASTERS = {"gunicorn (python -m gunicorn)": "gunicorn", f"ours (python -m {MASTER})": MASTER}


def exit_status(module: str, workers: int, attempt: int) -> int:
    argv = [sys.executable, "-m", module, *gunicorn_args("127.0.0.1", 0, workers)]  # port 0: never served
    env = {**os.environ, URL_ENV: f"nosuchdialect{attempt}://nowhere"}
    return subprocess.run(argv, env=env, capture_output=True, timeout=120).returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    statuses = {name: Counter() for name in MASTERS}
    seconds = Counter()
    for attempt in range(args.rounds):
        for name, module in MASTERS.items():
            start = time.monotonic()
            statuses[name][exit_status(module, args.workers, attempt)] += 1
            seconds[name] += time.monotonic() - start
    print(
        f"{args.rounds} starts each, {args.workers} workers that cannot boot; want status {FAILED_TO_BOOT} every time"
    )
    print(f"{'master':<40} {'status 3':>9} {'other':>6}  statuses seen       s per start")
    for name, seen in statuses.items():
        other = args.rounds - seen[FAILED_TO_BOOT]
        shown = ", ".join(f"{status}: {n}" for status, n in sorted(seen.items()))
        print(f"{name:<40} {seen[FAILED_TO_BOOT]:>9} {other:>6}  {shown:<18}  {seconds[name] / args.rounds:.2f}")


if __name__ == "__main__":
    main()
