"""SOL-ExecBench's public leaderboard API: ``/api/kernels/N`` (a kernel's definition and workloads) and
``/api/submissions?kernel_id=N`` (its submissions), saved as JSON files, into v1alpha1 records.

A kernel becomes an OperationSpec and a WorkloadSuite of its workloads; each submission an
ImplementationRevision and a BenchmarkRun (suite-mean latency, as the leaderboard publishes it),
with the leaderboard's own figures kept in ``sourceNative``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelindex.ingest.upstream.common import (
    Provenance,
    Records,
    UpstreamError,
    iso_time,
    meta,
    need,
    optional_text,
    read_json,
    record,
    retrieved_at,
    snapshot_files,
)
from kernelindex.records.canonical import digest
from kernelindex.records.hardware import architecture
from kernelindex.records.names import UPSTREAM_NAME_LIMIT, slug
from kernelindex.records.units import whole_ns
from kernelindex.records.vocabulary import RunStatus

SITE = "https://research.nvidia.com/benchmarks/sol-execbench"
PROVENANCE = Provenance(
    slug="sol-execbench",
    kind="leaderboard",
    name="NVIDIA SOL-ExecBench",
    url=SITE,
    license="SOL-ExecBench leaderboard terms (public leaderboard API)",
    terms="Public leaderboard API results; kernels' source code is not redistributed.",
)
DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "float64": "fp64",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
    "int8": "int8",
    "int32": "int32",
    "int64": "int64",
    "bool": "bool",
    "uint8": "uint8",
}
# submission status -> run status (COMPLETED is split by is_correct); statuses of unfinished work are skipped
STATUSES = {
    "COMPLETED": None,
    "FAILED": RunStatus.RUNTIME_ERROR.value,
    "RUNTIME_ERROR": RunStatus.RUNTIME_ERROR.value,
    "COMPILE_ERROR": RunStatus.COMPILE_ERROR.value,
    "TIMEOUT": RunStatus.TIMEOUT.value,
}
UNFINISHED = {"PENDING", "QUEUED", "RUNNING"}


def read(path: Path, *, retrieved: str | None = None) -> Records:
    """Kernel definitions and submissions from ``path`` (a saved response, or a folder of them)."""
    kernels: dict[int, tuple[Path, dict]] = {}
    submissions: list[tuple[Path, int, dict]] = []
    files = snapshot_files(path, "*.json")
    for file in files:
        doc = read_json(file)
        data = need(doc, "data", dict, file, None)
        if "submissions" in data:
            for index, item in enumerate(need(data, "submissions", list, file, None, "data")):
                submissions.append((file, index, item))
        elif "kernels" in data:
            need(data, "kernels", list, file, None, "data")  # the listing: nothing to store beyond the kernels
        elif "workloads" in data or "axes" in data:
            kernels[need(data, "id", int, file, None, "data")] = (file, data)
        else:
            raise UpstreamError(
                file, None, "data", "neither a kernel (axes, workloads), a kernel listing nor submissions"
            )
    records = Records(Provenance(**{**PROVENANCE.__dict__, "retrieved_at": retrieved or retrieved_at(files[0])}))
    records.lines = len(submissions)
    operations = {kid: _kernel(records, file, data) for kid, (file, data) in kernels.items()}
    for file, index, item in submissions:
        _submission(records, file, index, item, operations)
    return records


def _parameters(file: Path, data: dict, key: str) -> list[dict[str, Any]]:
    out = []
    for name, item in need(data, key, dict, file, None, "data").items():
        where = f"data.{key}.{name}"
        dtype = need(item, "dtype", str, file, None, where)
        if dtype not in DTYPES:
            raise UpstreamError(file, None, f"{where}.dtype", f"unknown dtype {dtype!r}; one of {sorted(DTYPES)}")
        shape = item.get("shape")
        if shape is None:
            out.append({"name": name, "scalar": {"dtype": DTYPES[dtype]}})
        elif isinstance(shape, list) and shape:
            out.append({"name": name, "tensor": {"dtype": DTYPES[dtype], "shape": shape}})
        else:
            raise UpstreamError(file, None, f"{where}.shape", f"expected a list of axis names or sizes, got {shape!r}")
    return out


def _kernel(records: Records, file: Path, data: dict) -> tuple[str, str, dict]:
    """(operation digest, suite digest, the kernel) of one kernel definition."""
    axes = {}
    for name, axis in need(data, "axes", dict, file, None, "data").items():
        kind = need(axis, "type", str, file, None, f"data.axes.{name}")
        if kind == "const":
            value = need(axis, "value", int, file, None, f"data.axes.{name}")
            axes[name] = {"role": "constant", "type": "integer", "value": value}
        elif kind == "var":
            axes[name] = {"role": "variable", "type": "integer"}
        else:
            raise UpstreamError(file, None, f"data.axes.{name}.type", f"unknown axis type {kind!r}; one of const, var")
    name = need(data, "name", str, file, None, "data")
    tags = data.get("tags") or ["other"]
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise UpstreamError(file, None, "data.tags", "must be a list of strings")
    spec = {
        "family": slug(tags[0], limit=UPSTREAM_NAME_LIMIT).replace(".", "-").replace("_", "-") or "other",
        "axes": axes,
        "inputs": _parameters(file, data, "inputs"),
        "outputs": _parameters(file, data, "outputs"),
        "semantics": {"mutation": "none", "determinism": "unspecified"},
        "reference": {"language": "python"},
    }
    url = f"{SITE}/kernels/{data['id']}"
    operation = record(
        "OperationSpec",
        spec,
        meta(
            name,
            optional_text(data, "title", file, None, "data") or name,
            url,
            description=(optional_text(data, "description", file, None, "data") or "")[:2000],
        ),
        file,
        None,
    )
    op_digest = records.parent(None, operation)
    cases = []
    for index, workload in enumerate(need(data, "workloads", list, file, None, "data")):
        axes_of = need(workload, "axes", dict, file, None, f"data.workloads[{index}]")
        cases.append({"externalId": str(workload.get("uuid") or index), "axes": axes_of})
    if not cases:
        raise UpstreamError(file, None, "data.workloads", "the kernel lists no workloads")
    suite = record(
        "WorkloadSuite",
        {
            "operationSpecDigest": op_digest,
            "cases": cases,
            "correctness": {"comparator": "sol_execbench_eval"},
            "aggregation": {"metric": "latency", "statistic": "mean"},
        },
        meta(f"{name}-suite", f"{name} · leaderboard workloads", url),
        file,
        None,
    )
    return op_digest, records.parent(None, suite), data


def _submission(records: Records, file: Path, index: int, item: Any, operations: dict) -> None:
    where = f"data.submissions[{index}]"
    sid = need(item, "id", int, file, None, where)
    kernel_id = need(item, "kernel_id", int, file, None, where)
    status_text = need(item, "status", str, file, None, where)
    if status_text in UNFINISHED:
        records.skip("submission not finished")
        return
    if status_text not in STATUSES:
        known = sorted([*STATUSES, *UNFINISHED])
        raise UpstreamError(file, None, f"{where}.status", f"unknown submission status {status_text!r}; one of {known}")
    correct = need(item, "is_correct", bool, file, None, where) if status_text == "COMPLETED" else False
    status = STATUSES[status_text] or (RunStatus.PASSED.value if correct else RunStatus.INCORRECT_NUMERICAL.value)
    if item.get("is_disqualified") is True:
        status = RunStatus.REVOKED.value
    if kernel_id not in operations:
        raise UpstreamError(
            file,
            None,
            f"{where}.kernel_id",
            f"kernel {kernel_id} has no definition here (save /api/kernels/{kernel_id} beside it)",
        )
    op_digest, suite_digest, kernel = operations[kernel_id]
    gpu = need(item, "gpu_type", str, file, None, where)
    product = gpu if gpu.upper().startswith(("NVIDIA", "AMD")) else f"NVIDIA {gpu}"
    arch = architecture(product)
    stack = str(item.get("evaluation_stack_version") or "unspecified")
    user = need(item, "username", str, file, None, where)
    benchmark = need(item, "kernel_name", str, file, None, where)
    dtypes = sorted({p["tensor" if "tensor" in p else "scalar"]["dtype"] for p in _parameters(file, kernel, "inputs")})
    impl = record(
        "ImplementationRevision",
        {
            "projectRevision": {"version": f"submission-{sid}"},
            "operation": {"specDigest": op_digest},
            "callable": {"language": "unknown"},
            "support": {"dtypes": dtypes, "productsTested": [product], "hardwareArchitectures": [arch]},
            "licensing": {},
        },
        meta(f"sol-submission-{sid}", f"{user} · {benchmark}", authors=[{"name": user[:200]}]),
        file,
        None,
    )
    records.parent(None, impl)
    protocol = record(
        "BenchmarkProtocol",
        {
            "harness": {"name": "SOL-ExecBench evaluation stack", "version": stack},
            "correctness": {"reference": "definition reference implementation", "comparator": "sol_execbench_eval"},
            "measurement": {"timer": "harness_reported", "primaryStatistic": "mean"},
            "comparability": {
                "family": "sol_execbench_leaderboard",
                "notes": "Suite-mean latency and SOL-Score as published by the SOL-ExecBench leaderboard. "
                "Comparable only within one definition, GPU type, and evaluation stack version.",
            },
        },
        meta(f"sol-execbench-leaderboard-{stack}", f"SOL-ExecBench evaluation stack {stack}"),
        file,
        None,
    )
    environment = record(
        "ExecutionEnvironment",
        {
            "hardware": {"vendor": "nvidia", "product": product, "architecture": arch},
            "software": {"libraries": {"evaluation_stack": stack}},
        },
        meta(f"sol-execbench-{gpu}-{stack}", f"SOL-ExecBench {product}, stack {stack}"),
        file,
        None,
    )
    metrics = {}
    for key in ("sol_score", "latency_ms", "avg_speedup", "fast_1_count", "fast_1_total"):
        value = item.get(key)
        if value is not None:
            metrics[key] = need(item, key, (int, float), file, None, where)
    spec: dict[str, Any] = {
        "implementationDigest": digest(impl),
        "workloadDigest": suite_digest,
        "protocolDigest": digest(protocol),
        "environmentDigest": digest(environment),
        "status": status,
        "observedAt": iso_time(item.get("finished_at") or item.get("submitted_at"), file, None, f"{where}.finished_at"),
        "sourceNative": {
            "source": PROVENANCE.slug,
            "benchmark": benchmark[:200],
            "externalId": str(sid),
            **({"metrics": metrics} if metrics else {}),
        },
    }
    if status == RunStatus.PASSED and "latency_ms" in metrics:
        mean = whole_ns(metrics["latency_ms"], "ms")
        if mean is None or mean < 0:
            raise UpstreamError(file, None, f"{where}.latency_ms", f"{metrics['latency_ms']!r} ms is no latency")
        spec["timing"] = {"primaryStatistic": "mean", "latencyNs": {"mean": mean}}
    labels = {"worker": str(item["worker_id"])[:200]} if item.get("worker_id") else None
    run = record(
        "BenchmarkRun", spec, meta(f"sol-submission-{sid}", f"{user} · {benchmark} · {gpu}", labels=labels), file, None
    )
    records.run(None, run, protocol, environment)
