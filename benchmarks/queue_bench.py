"""The rerun queue's figures, measured in one run on this machine.

1. Leases per second with 1, 4 and 16 simulated runners (threads calling the lease use case, each
   with its own registered key) on SQLite and on PostgreSQL, next to plain inserts of the same
   rows (one transaction each, one thread) in the same run.
2. End to end for a small CPU problem (the vector-add fixture): `submit` to a stored verified run
   through a live server and an in-process remote runner, split into submit, queue wait, harness
   and upload (the upload includes the server's checks and the store write).
3. A campaign over the 042 pack's cases on a local Ray (2 CPUs) against the same cases run one
   after another by one `eval`. By default the 8 smallest cases with 1 round, 1 warm-up and 5 timed
   calls: the full 16 cases take over ten minutes on a shared 2-core machine.

    .venv/bin/python benchmarks/queue_bench.py [--requests 300] [--no-postgres] [--cases 8] [--no-ray]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the throw-away PostgreSQL and the live-server helper

from kernelindex import kernels, problems  # noqa: E402
from kernelindex.records.signing import key_id, new_private_key, public_key_to_text  # noqa: E402
from kernelindex.services import harness_adapter as harness  # noqa: E402
from kernelindex.services import queue as service  # noqa: E402
from kernelindex.store import open_store  # noqa: E402
from kernelindex.store.queue import writes as qs  # noqa: E402
from kernelindex.store.reads import queue as reads  # noqa: E402

FIXTURES = REPO / "tests" / "harness" / "fixtures"
VECTOR_ADD = FIXTURES / "problems" / "vector_add"
VECTOR_ADD_SOLUTION = FIXTURES / "solutions" / "vector_add_torch" / "solution.json"
QUICK = {"rounds": 2, "warmup": 1, "iterations": 3, "timeout_s": 120}


def _submission(**overrides) -> service.Submission:
    return service.Submission(
        solution=harness.inline_solution(VECTOR_ADD_SOLUTION),
        problem_files=harness.problem_files(VECTOR_ADD),
        protocol=dict(QUICK),
        **overrides,
    )


def _clone_requests(store, template_id: str, count: int) -> float:
    """Queue ``count`` copies of a request, one transaction each; returns inserts per second."""
    with store.engine.connect() as conn:
        row = reads.request_row(conn, template_id)
    keep = (
        "problem_name",
        "problem_digest",
        "solution_name",
        "solution_digest",
        "document_digest",
        "entry_point",
        "hardware",
        "replicas",
        "protocol",
        "max_attempts",
        "submitted_by",
    )
    values = {name: getattr(row, name) for name in keep}
    start = time.perf_counter()
    for _ in range(count):
        with qs.write_transaction(store) as conn:
            qs.insert_request(conn, values)
    return count / (time.perf_counter() - start)


def _leases_per_s(store, keys: list[str]) -> tuple[float, int]:
    taken = [0] * len(keys)
    start_line = threading.Barrier(len(keys) + 1)

    def runner(index: int) -> None:
        start_line.wait()
        while service.lease(store, keys[index]) is not None:
            taken[index] += 1

    threads = [threading.Thread(target=runner, args=(n,)) for n in range(len(keys))]
    for thread in threads:
        thread.start()
    start_line.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    return sum(taken) / (time.perf_counter() - start), sum(taken)


def queue_throughput(url: str, label: str, requests: int) -> None:
    store = open_store(url)
    keys = []
    for n in range(16):
        private_key = new_private_key()
        service.register_runner(
            store, public_key_to_text(private_key.public_key()), label=f"sim{n}", machine=f"m{n}", hardware="cpu"
        )
        keys.append(key_id(private_key.public_key()))
    template = service.submit(store, _submission())
    service.cancel(store, template)
    for runners in (1, 4, 16):
        inserts = _clone_requests(store, template, requests)
        rate, taken = _leases_per_s(store, keys[:runners])
        assert taken == requests, f"{taken} leases for {requests} requests"
        print(
            f"{label:<10} {runners:>2} runner(s): {rate:8.1f} leases/s   plain inserts {inserts:8.1f}/s   "
            f"ratio {rate / inserts:5.2f}"
        )
    store.close()


def end_to_end(repeats: int) -> None:
    from kernelindex.services.remote_runner import connect, run_one
    from kernelindex.web.app import create_app
    from live_kit import serving

    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/e2e.db")
        private_key = new_private_key()
        service.register_runner(
            store, public_key_to_text(private_key.public_key()), label="bench", machine="bench", hardware="cpu"
        )
        rows = []
        with serving(create_app(store=store)) as url:
            client = connect(url, private_key)
            for _ in range(repeats):
                start = time.perf_counter()
                request_id = service.submit(store, _submission())
                submitted = time.perf_counter()
                outcome = run_one(client)
                total = time.perf_counter() - start
                with store.engine.connect() as conn:
                    lease = reads.leases_of(conn, request_id)[0]
                    request = reads.request_row(conn, request_id)
                wait = (_time(lease.leased_at) - _time(request.created_at)).total_seconds()
                assert outcome.accepted and request.state == "done", outcome.detail
                rows.append(
                    (
                        submitted - start,
                        wait,
                        outcome.timings["harnessS"],
                        outcome.timings["uploadS"],
                        lease.timings["storeS"],
                        total,
                    )
                )
            client.close()
        store.close()
    names = ("submit", "queue wait", "harness", "upload", "  of which server store", "total")
    print(f"end to end, vector-add on the CPU, median of {repeats}:")
    for index, name in enumerate(names):
        print(f"  {name:<24} {statistics.median(r[index] for r in rows):7.3f} s")


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def campaign_vs_eval(cases: int, rounds: int) -> None:
    from kernelindex.services.campaign import Pair, run_campaign, start_ray

    files = harness.problem_files(problems.LOAD_BALANCE_BWD)
    _, uuids = harness.problem_summary(files)
    sizes = {u: n for n, u in enumerate(uuids)}
    import json

    by_size = sorted(
        uuids,
        key=lambda u: json.loads(files["workload.jsonl"].splitlines()[sizes[u]])["axes"]["batch_seq_len"],
    )
    chosen = by_size[:cases]
    protocol = {"rounds": rounds, "warmup": 1, "iterations": 5, "timeout_s": 600}
    document = harness.inline_solution(kernels.LOAD_BALANCE_BWD)
    start = time.perf_counter()
    suite = harness.run(
        problems.LOAD_BALANCE_BWD, kernels.LOAD_BALANCE_BWD, harness.evaluation_options(protocol, "cpu", chosen)
    )
    sequential = time.perf_counter() - start
    assert all(c.passed for c in suite.cases)
    start = time.perf_counter()
    start_ray(None, "cpu")
    ray_start = time.perf_counter() - start
    pair = Pair(files, document, chosen, "042")
    stored: list = []
    start = time.perf_counter()
    run_campaign(
        [pair],
        hardware="cpu",
        protocol=protocol,
        batch_size=2,
        store_pair=lambda p, s: stored.append(s),
        advance=lambda n: None,
    )
    on_ray = time.perf_counter() - start
    import ray

    ray.shutdown()
    assert stored and all(c.passed for c in stored[0].cases), pair.failure
    print(f"campaign, 042 pack, {cases} smallest cases, {rounds} round(s), 1 warm-up, 5 timed calls:")
    print(f"  eval, one after another   {sequential:8.1f} s")
    print(
        f"  local Ray, 2 CPUs, 2/task {on_ray:8.1f} s   (+ {ray_start:.1f} s to start Ray)   "
        f"speed-up {sequential / on_ray:4.2f}x ({sequential / (on_ray + ray_start):4.2f}x with the start)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="requests leased per runner count")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--repeats", type=int, default=3, help="end-to-end repeats")
    parser.add_argument("--cases", type=int, default=8, help="042 cases in the campaign comparison (smallest first)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        queue_throughput(f"sqlite:///{tmp}/queue.db", "SQLite", args.requests)
    if not args.no_postgres:
        from pgserver import Unavailable, start_server

        try:
            server = start_server()
        except Unavailable as exc:
            print(f"PostgreSQL: skipped ({exc})")
        else:
            try:
                queue_throughput(server.new_database(), "PostgreSQL", args.requests)
            finally:
                server.stop()
    end_to_end(args.repeats)
    if not args.no_ray:
        campaign_vs_eval(args.cases, args.rounds)


if __name__ == "__main__":
    main()
