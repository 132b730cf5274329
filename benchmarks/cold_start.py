"""Where `kernelindex serve`'s cold start goes, against the floor the libraries it stands on set (issue 33).

Three things, timed from process start, alternating over ``--rounds`` rounds (with Python's bytecode cached in
a folder of its own, as an installed package has it; a first round fills it and is not counted):

- **libraries alone**: a fresh interpreter importing exactly the third-party modules (FastAPI, Starlette,
  pydantic, SQLAlchemy, Jinja2, gunicorn, uvicorn, ...) the master holds once it has built the app, and
  nothing of ours: what no code of ours can take below;
- **master's work**: a fresh interpreter doing what `kernelindex serve --workers N`'s master does before it
  forks (its imports, opening the store, building the app), then exiting;
- **to the first page**: `kernelindex serve --workers N` started afresh, to the first 200 of a run page
  not requested before (the CLI, the master, a worker, the page); with ``--before SRC``, also another
  source tree's (e.g. an archive of main's ``src``), in the same rounds.

Each figure is the median over the rounds, in wall seconds and CPU seconds. The target is issue 33's
(``TARGET``); the libraries' floor says how much of it is left to our own code.

    PYTHONPATH=src .venv/bin/python benchmarks/cold_start.py [catalog.jsonl.zst] [--db store.db] [--rounds 5]
        [--before SRC]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from site_load import Paths, kinds_of, ours, site_store  # noqa: E402
from web_load import DEFAULT_CATALOG  # noqa: E402

TARGET = 0.6  # seconds from process start to the first page (issue 33)

# the master's steps (`kernelindex serve`'s opening of the store, then gunicorn's --preload of
# web.app.forking_app), then the third-party modules it holds
MASTER = """
import json, sys
from kernelindex.web.server import master
from kernelindex.cli.serve import open_for_serving
open_for_serving(sys.argv[1])
from kernelindex.web.app import forking_app
forking_app()
ours = {"kernelindex", "__main__"}
print(json.dumps(sorted(n for n in sys.modules if n.split(".")[0] not in sys.stdlib_module_names | ours)))
"""

# the same modules, nothing of ours (a few the runtime makes, such as Cython's, cannot be imported by name)
LIBRARIES = """
import gc, importlib, json, sys
gc.disable()
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except ImportError:
        pass
"""


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (the child's user + system) of one process run to its end; its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[:2]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("catalog", nargs="?", type=Path, default=DEFAULT_CATALOG[-1] if DEFAULT_CATALOG else None)
    parser.add_argument("--db", type=Path, help="a store already holding the export (else imported afresh)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20261206)
    parser.add_argument("--before", type=Path, help="another source tree's src/, its first page timed beside ours")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = args.db or site_store(args.catalog, Path(folder))
        bytecode = Path(folder) / "bytecode"
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(bytecode)}
        site = ours("ours", db, args.workers, None, None)
        site.env = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(bytecode)}
        before = ours("before", db, args.workers, args.before, None) if args.before else None
        if before:
            before.env |= {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(bytecode / "before")}
        fresh = Paths(kinds_of(db), args.seed)
        modules = json.loads(timed([sys.executable, "-c", MASTER, str(db)], env)[2])
        libraries = [sys.executable, "-c", LIBRARIES, json.dumps(modules)]
        figures: dict[str, list[tuple[float, float]]] = {"libraries alone": [], "master's work": [], "first page": []}
        if before:
            figures["first page, before"] = []
        for round_ in range(args.rounds + 1):  # the first fills the bytecode cache
            lib = timed(libraries, env)[:2]
            work = timed([sys.executable, "-c", MASTER, str(db)], env)[:2]
            pages = {}
            for name, server in [("first page", site), ("first page, before", before)][:: 1 if round_ % 2 else -1]:
                if server:
                    pages[name] = server.start(fresh.take("run", 1)[0])
                    server.stop()
            if round_:
                figures["libraries alone"].append(lib)
                figures["master's work"].append(work)
                for name, page in pages.items():
                    figures[name].append(page)
        tops = sorted({m.split(".")[0] for m in modules})
        print(f"{len(modules)} third-party modules in the master ({', '.join(tops)}); load {os.getloadavg()[0]:.1f}")
        print(f"{'':34}{'wall s, median (all)':>40}{'CPU s, median':>16}")
        for name, values in figures.items():
            walls = " ".join(f"{w:.2f}" for w, _ in values)
            wall, cpu = statistics.median(w for w, _ in values), statistics.median(c for _, c in values)
            print(f"{name:34}{f'{wall:.2f} ({walls})':>40}{cpu:>16.2f}")
        floor = statistics.median(w for w, _ in figures["libraries alone"])
        page = statistics.median(w for w, _ in figures["first page"])
        if before:
            old = statistics.median(w for w, _ in figures["first page, before"])
            paired = statistics.median(
                n / o for (n, _), (o, _) in zip(figures["first page"], figures["first page, before"])
            )
            print(f"first page, ours / before: {page / old:.2f}x (median of paired ratios {paired:.2f}x)")
        print(
            f"first page / libraries alone {page / floor:.2f}x; target <= {TARGET} s: "
            f"{'met' if page <= TARGET else 'missed'}; the libraries alone take {floor / TARGET:.0%} of it"
        )


if __name__ == "__main__":
    main()
