"""What reading over the API costs against reading the store directly, for the same answers.

Builds a store from the packaged sample runs, serves it on 127.0.0.1 (uvicorn in a thread), and
times, in turns, each read both ways: ``LocalReads`` (the view functions over the store) and
``RemoteReads`` (the same views through ``kernelindex.client``). Prints the median and p95 of each
and the ratio remote/local (what the HTTP round trip and JSON encoding on a loopback add).

    .venv/bin/python benchmarks/remote_reads.py [--repeats 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kernelindex.client import Client  # noqa: E402
from kernelindex.ingest.bundles import import_bundles  # noqa: E402
from kernelindex.store import open_store  # noqa: E402
from kernelindex.views.reads import LocalReads, RemoteReads  # noqa: E402
from kernelindex.web.app import create_app  # noqa: E402
from live_kit import serving  # noqa: E402


def _times(call, repeats: int) -> list[float]:
    call()
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    sample = Path(str(resources.files("kernelindex") / "sample"))
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(str(Path(folder) / "bench.db"))
        import_bundles(store, sorted(sample.glob("*.json")))
        local = LocalReads(store)
        with serving(create_app(store=store)) as url, Client(url) as client:
            remote = RemoteReads(client)
            run_id = local.runs({}, 1)[0]["id"]
            cases = {
                "show (run view)": (lambda: local.run(run_id), lambda: remote.run(run_id)),
                "runs (listing)": (lambda: local.runs({}, 50), lambda: remote.runs({}, 50)),
            }
            print(f"{'read':<18} {'local p50':>10} {'p95':>8} {'remote p50':>11} {'p95':>8} {'ratio':>6}")
            for name, (here, there) in cases.items():
                a, b = [], []
                for _ in range(args.repeats // 20):  # in turns, so other load falls on both alike
                    a += _times(here, 20)
                    b += _times(there, 20)
                p50a, p50b = statistics.median(a), statistics.median(b)
                p95a, p95b = (statistics.quantiles(x, n=20)[-1] for x in (a, b))
                print(
                    f"{name:<18} {p50a * 1e3:>8.2f}ms {p95a * 1e3:>6.2f}ms {p50b * 1e3:>9.2f}ms {p95b * 1e3:>6.2f}ms "
                    f"{p50b / p50a:>6.2f}"
                )
        store.close()


if __name__ == "__main__":
    main()
