"""A store for the search and operation-page tests: the built-in sample (seed bundles and both
problem packs), the real export's slice for the seed problems when ../shared has it, and seeded
synthetic runs on our packs' cases, on an H200 and a B200, so bracketing has something to choose.

The 009 pack's cases have num_tokens 296 (below 300) and 336 (above). The B200 runs sit on 296 and
336; the H200 runs on 256 and 496 (farther out), so "N=300 H200" must bracket with 256/496, never
with the B200-only cases: filters apply before neighbours are chosen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from web_storefill import HOSTILE_TITLE, catalog_slice, protocol, rec

from kernelindex.formats.problem import load_problem
from kernelindex.formats.records import records_for
from kernelindex.ingest.catalog import import_catalog
from kernelindex.problems import LOAD_BALANCE_BWD, TOKEN_SCATTER_BWD
from kernelindex.ranking.leaders import record_leader_changes
from kernelindex.records.canonical import digest
from kernelindex.sample import sample_paths
from kernelindex.services.imports import import_paths
from kernelindex.store.database import Store
from kernelindex.store.writer import Writer

H200 = rec(
    "ExecutionEnvironment",
    "search-h200",
    {
        "hardware": {"vendor": "nvidia", "product": "NVIDIA H200", "architecture": "sm_90"},
        "software": {"driver": "570.1", "libraries": {"torch": "2.13"}},
    },
    title="NVIDIA H200 search box",
)
B200 = rec(
    "ExecutionEnvironment",
    "search-b200",
    {
        "hardware": {"vendor": "nvidia", "product": "NVIDIA B200", "architecture": "sm_100"},
        "software": {"driver": "575.1", "libraries": {"torch": "2.13"}},
    },
    title="NVIDIA B200 search box",
)


@dataclass
class SearchFilled:
    has_export: bool
    runs: dict[str, str] = field(default_factory=dict)  # name -> run id
    digests: dict[str, str] = field(default_factory=dict)  # name -> run digest
    case_ids: dict[tuple[str, int], str] = field(default_factory=dict)  # (pack, varying axis value) -> case uuid


def fill_search(store: Store, seed: int, catalog: Path | None, tmp: Path) -> SearchFilled:
    rng = np.random.default_rng(seed)
    out = SearchFilled(has_export=catalog is not None)
    import_paths(store, sample_paths())  # the use case: it reads problem folders with the harness
    if catalog is not None:
        import_catalog(store, catalog_slice(catalog, tmp / "slice.jsonl"))
    scatter, balance = records_for(load_problem(TOKEN_SCATTER_BWD)), records_for(load_problem(LOAD_BALANCE_BWD))
    for uuid, case in scatter.cases.items():
        out.case_ids[("scatter", case["spec"]["axes"]["num_tokens"])] = uuid
    for uuid, case in balance.cases.items():
        out.case_ids[("balance", case["spec"]["axes"]["batch_seq_len"])] = uuid
    proto = protocol("search-v1")
    with store.begin() as conn:
        w = Writer(conn)
        w.ensure_source("search-lab", "controlled", "Search test lab", policy={"license": "CC0-1.0"})

        def implementation(name: str, title: str, op: dict) -> dict:
            impl = rec(
                "ImplementationRevision",
                name,
                {
                    "projectRevision": {"version": f"{name}-r1"},
                    "operation": {"specDigest": digest(op)},
                    "callable": {"language": "triton"},
                    "support": {"dtypes": ["bf16"], "hardwareArchitectures": ["sm_90"]},
                    "licensing": {"declared": "MIT"},
                },
                title=title,
            )
            w.add_record(impl)
            return impl

        scatter_impls = [
            implementation("scatter-fast", "fast scatter", scatter.operation),
            implementation("scatter-slow", HOSTILE_TITLE, scatter.operation),
        ]
        balance_impls = [
            implementation("balance-fast", "fast balance", balance.operation),
            implementation("balance-slow", "slow balance", balance.operation),
        ]

        def run(name: str, impl: dict, case: dict, env: dict, median: float) -> None:
            spec = {
                "implementationDigest": digest(impl),
                "workloadDigest": digest(case),
                "protocolDigest": digest(proto),
                "environmentDigest": digest(env),
                "status": "passed",
                "observedAt": "2026-03-01T00:00:00Z",
                "timing": {"primaryStatistic": "median", "latencyNs": {"median": int(median)}},
                "sourceNative": {"source": "search-lab", "benchmark": "search", "externalId": name},
            }
            bundle = {
                "run": rec("BenchmarkRun", name, spec, title=f"{name} run"),
                "protocol": proto,
                "environment": env,
            }
            out.runs[name] = w.add_run_bundle(bundle, runner_host="search-host")
            out.digests[name] = digest(bundle["run"])

        for n, env in ((296, B200), (336, B200), (256, H200), (496, H200)):
            case = scatter.cases[out.case_ids[("scatter", n)]]
            base = float(rng.uniform(100_000, 200_000)) * n / 256
            for impl, factor in zip(scatter_impls, (1.0, 1.7)):
                run(f"scatter-{n}-{impl['metadata']['name']}", impl, case, env, base * factor)
        for s in (2048, 2080, 2112, 4096, 65536):
            case = balance.cases[out.case_ids[("balance", s)]]
            base = float(rng.uniform(5_000, 9_000)) * s / 2048
            for impl, factor in zip(balance_impls, (1.0, 1.3)):
                run(f"balance-{s}-{impl['metadata']['name']}", impl, case, H200, base * factor)
        record_leader_changes(conn, now="2026-04-01T00:00:00Z")
    return out
