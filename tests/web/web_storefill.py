"""A small real store for the web tests: the two seed bundles plus seeded synthetic records.

The synthetic part has a controlled source with raw samples (so intervals exist), every kind of
exclusion (failed, retracted, superseded, no metric), a second protocol (a separate comparison
group), a second operation record of the same problem (other evidence), and hostile text
(HTML/script in titles, authors and URLs) that every page must show inert.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kernelindex.ingest.bundles import import_bundles
from kernelindex.ranking.leaders import record_leader_changes
from kernelindex.records.canonical import digest, sha256_digest
from kernelindex.store.database import Store
from kernelindex.store.rows import alias_columns
from kernelindex.store.writer import Writer

API = "kernelindex.dev/v1alpha1"
SAMPLE_DIR = Path(__file__).resolve().parents[2] / "src" / "kernelindex" / "sample"
HOSTILE_TITLE = '<script>window.__pwned=1</script><b>bold</b> "quoted" & kernel'
HOSTILE_AUTHOR = '<img src=x onerror="window.__pwned=2">'
HOSTILE_URL = "javascript:window.__pwned=3"
SAFE_URL = "https://example.org/kernels?a=1&b=2"
PROBLEM_NAME = "synthetic_softmax_rows"
ALIAS = "rowwise_softmax_alias"
SEED_OPERATIONS = (
    "009_expert_token_scatter_with_weighted_forward_backward",
    "042_moe_expert_load_balancing_and_token_capacity_backward",
)


def rec(kind: str, name: str, spec: dict, **meta) -> dict:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name, **meta}, "spec": spec}


def operation(name: str, family: str) -> dict:
    return rec(
        "OperationSpec",
        name.replace("_", "-"),
        {
            "family": family,
            "axes": {
                "rows": {"role": "variable", "type": "integer"},
                "cols": {"role": "constant", "type": "integer", "value": 4096},
            },
            "inputs": [{"name": "x", "tensor": {"shape": ["rows", "cols"], "dtype": "fp32"}}],
            "outputs": [{"name": "y", "tensor": {"shape": ["rows", "cols"], "dtype": "fp32"}}],
            "semantics": {"expression": "y = softmax(x, axis=-1)", "mutation": "none", "determinism": "deterministic"},
        },
        title=name,
    )


def workload(op: dict, rows: int) -> dict:
    return rec(
        "WorkloadCase",
        f"softmax-rows-{rows}",
        {
            "operationSpecDigest": digest(op),
            "axes": {"rows": rows, "cols": 4096},
            "tensors": {"x": {"shape": [rows, 4096], "dtype": "fp32"}},
            "correctness": {"comparator": "elementwise_close", "maxAbsoluteError": 1e-5, "maxRelativeError": 1e-4},
        },
        title=f"{PROBLEM_NAME} rows={rows}",
    )


def protocol(version: str) -> dict:
    return rec(
        "BenchmarkProtocol",
        f"test-harness-{version}",
        {
            "harness": {"name": "test harness", "version": version},
            "measurement": {
                "timer": "cuda_event",
                "primaryStatistic": "median",
                "warmupIterations": 5,
                "measuredIterations": 50,
                "samples": 40,
            },
            "correctness": {"reference": "torch reference", "comparator": "elementwise_close"},
            "comparability": {"family": "test_harness", "notes": "synthetic runs for tests"},
        },
        title=f"Test harness {version}",
    )


ENVIRONMENT = rec(
    "ExecutionEnvironment",
    "test-gpu",
    {
        "hardware": {"vendor": "nvidia", "product": "NVIDIA H200", "architecture": "sm_90"},
        "software": {"driver": "570.1", "libraries": {"torch": "2.13"}},
    },
    title="NVIDIA H200 test box",
)


@dataclass
class Filled:
    seed: int
    seed_runs: dict[str, str] = field(default_factory=dict)  # external id -> run id
    runs: dict[str, str] = field(default_factory=dict)  # synthetic name -> run id
    workload_id: str = ""
    other_workload_id: str = ""
    medians: dict[str, float] = field(default_factory=dict)


def fill(store: Store, seed: int) -> Filled:
    rng = np.random.default_rng(seed)
    out = Filled(seed=seed)
    import_bundles(store, sorted(SAMPLE_DIR.glob("*.json")))
    from sqlalchemy import select

    from kernelindex.store.tables import runs

    with store.begin() as conn:
        for run_id, manifest in conn.execute(select(runs.c.id, runs.c.manifest)):
            out.seed_runs[manifest["run"]["spec"]["sourceNative"]["externalId"]] = run_id

        w = Writer(conn)
        w.ensure_source(
            "test-lab",
            "controlled",
            "Test lab <i>controlled</i> harness",
            policy={"url": HOSTILE_URL, "license": "CC0-1.0"},
        )
        project = rec("SoftwareProject", "hostile-project", {"name": HOSTILE_TITLE})
        project_id = w.add_record(project)
        op = operation(PROBLEM_NAME, "softmax")
        op_id = w.add_record(op)
        w.add("operation_aliases", None, alias_columns({"operationId": op_id, "alias": ALIAS}))
        w.flush()
        wl = workload(op, 8192)
        out.workload_id = w.add_record(wl)
        # A second operation record of the same problem (our own pack would look like this).
        op2 = operation(PROBLEM_NAME, "softmax-pack")
        op2["spec"]["semantics"]["expression"] = "y = softmax(x, axis=-1)  # pack variant"
        w.add_record(op2, slug="synthetic-softmax-rows-pack")
        wl2 = workload(op2, 8192)
        out.other_workload_id = w.add_record(wl2)

        def implementation(name: str, title: str, authors=None, refs=None) -> dict:
            meta = {"title": title}
            if authors:
                meta["authors"] = authors
            if refs:
                meta["sourceRefs"] = refs
            impl = rec(
                "ImplementationRevision",
                name,
                {
                    "projectRevision": {"version": f"{name}-r1"},
                    "operation": {"specDigest": digest(op)},
                    "callable": {"language": "triton"},
                    "support": {"dtypes": ["fp32"], "hardwareArchitectures": ["sm_90"]},
                    "licensing": {},
                },
                **meta,
            )
            w.add_record(impl, project_id=project_id)
            return impl

        p1, p2 = protocol("v1"), protocol("v2")

        def run(
            name: str,
            impl: dict,
            wl_rec: dict,
            proto: dict,
            status="passed",
            median=None,
            samples=None,
            title=None,
            observed="2026-03-01T00:00:00Z",
            supersedes=None,
        ) -> str:
            spec = {
                "implementationDigest": digest(impl),
                "workloadDigest": digest(wl_rec),
                "protocolDigest": digest(proto),
                "environmentDigest": digest(ENVIRONMENT),
                "status": status,
                "observedAt": observed,
                "sourceNative": {"source": "test-lab", "benchmark": PROBLEM_NAME, "externalId": name},
            }
            content = None
            if median is not None:
                spec["timing"] = {"primaryStatistic": "median", "latencyNs": {"median": int(median)}}
            if samples is not None:
                content = json.dumps([float(x) for x in samples]).encode()
                spec["timing"]["samples"] = len(samples)
                spec["evidence"] = {"rawSamples": {"uri": SAFE_URL, "digest": sha256_digest(content)}}
            bundle = {
                "run": rec("BenchmarkRun", name, spec, title=title or name),
                "protocol": proto,
                "environment": ENVIRONMENT,
            }
            run_id = w.add_run_bundle(bundle, supersedes_id=supersedes, runner_host="test-host")
            if content is not None:
                w.add_artifact(
                    run_id=run_id, role="rawSamples", kind="raw_samples", media_type="application/json", content=content
                )
            out.runs[name] = run_id
            return run_id

        def noisy(center: float) -> np.ndarray:
            return np.round(rng.normal(center, center * 0.01, 40))

        base = float(rng.uniform(20_000, 40_000))
        fast = implementation("impl-fast", "fast softmax", authors=[{"name": "Ada"}], refs=[{"url": SAFE_URL}])
        hostile = implementation(
            "impl-hostile", HOSTILE_TITLE, authors=[{"name": HOSTILE_AUTHOR}], refs=[{"url": HOSTILE_URL}]
        )
        slow = implementation("impl-slow", "slow softmax")
        for name, impl, center, observed in (
            ("fast", fast, base, "2026-03-02T00:00:00Z"),
            ("hostile", hostile, base * 1.5, "2026-03-01T00:00:00Z"),
            ("slow", slow, base * 3.0, "2026-03-03T00:00:00Z"),
        ):
            s = noisy(center)
            out.medians[name] = float(np.median(s))
            run(
                name,
                impl,
                wl,
                p1,
                median=np.median(s),
                samples=s,
                observed=observed,
                title=HOSTILE_TITLE if name == "hostile" else f"{name} softmax run",
            )
        run("failed", fast, wl, p1, status="incorrect_numerical", median=base * 0.5, observed="2026-03-04T00:00:00Z")
        retracted = run("retracted", slow, wl, p1, median=base * 0.4, observed="2026-03-05T00:00:00Z")
        w.retract_run(retracted, "the timer was wrong <b>really</b>", at="2026-03-06T00:00:00Z")
        old = run("old", fast, wl, p1, median=base * 0.9, observed="2026-02-01T00:00:00Z")
        run("newer", fast, wl, p1, median=base * 1.2, supersedes=old, observed="2026-03-07T00:00:00Z")
        run("nometric", slow, wl, p1, observed="2026-03-08T00:00:00Z")
        run("v2-only", slow, wl, p2, median=base * 0.1, observed="2026-03-09T00:00:00Z")
        run("pack", fast, wl2, p1, median=base * 0.7, observed="2026-03-10T00:00:00Z")
        record_leader_changes(conn, now="2026-04-01T00:00:00Z")
    return out


def catalog_slice(catalog: Path, dest: Path, operation_names=SEED_OPERATIONS) -> Path:
    """The part of the real export the seed runs' pages need: their operations, workloads, the
    runs of those workloads (with implementations, projects, measurements) and leader events."""
    import io

    import zstandard

    lines = []
    with open(catalog, "rb") as fh:
        for text in io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(fh), encoding="utf-8"):
            lines.append(json.loads(text))
    ops = {r["row"]["id"] for r in lines if r["table"] == "operations" and r["row"]["name"] in operation_names}
    wls = {r["row"]["id"] for r in lines if r["table"] == "workloads" and r["row"]["operationId"] in ops}
    run_rows = [r["row"] for r in lines if r["table"] == "benchmark_runs" and r["row"]["workloadId"] in wls]
    run_ids = {r["id"] for r in run_rows}
    impls = {r["implementationId"] for r in run_rows}
    keys = {r["comparisonKey"] for r in run_rows}
    projects = {r["row"]["projectId"] for r in lines if r["table"] == "implementations" and r["row"]["id"] in impls}
    keep = {
        "sources": lambda row: True,
        "projects": lambda row: row["id"] in projects,
        "operations": lambda row: row["id"] in ops,
        "operation_aliases": lambda row: row["operationId"] in ops,
        "workloads": lambda row: row["id"] in wls,
        "implementations": lambda row: row["id"] in impls,
        "benchmark_runs": lambda row: row["id"] in run_ids,
        "measurements": lambda row: row["runId"] in run_ids,
        "record_events": lambda row: row["comparisonKey"] in keys,
    }
    with open(dest, "w", encoding="utf-8") as out:
        for line in lines:
            test = keep.get(line["table"])
            if test and test(line["row"]):
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return dest
