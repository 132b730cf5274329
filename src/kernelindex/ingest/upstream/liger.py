"""Liger-Kernel's benchmark CSV (``benchmark/data/all_benchmark_data.csv``) into v1alpha1 records.

Each speed row is one measurement of one provider's kernel (Liger's, Hugging Face's, torch.compile's)
at one point of a sweep: an OperationSpec per kernel and mode, a WorkloadCase per sweep point and
fixed configuration, an ImplementationRevision per provider and Liger version, and a BenchmarkRun
with the median latency (p20 and p80 as measurements). Memory rows are skipped and counted.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

from kernelindex.ingest.upstream.common import (
    Provenance,
    Records,
    UpstreamError,
    iso_time,
    meta,
    read_text,
    record,
    retrieved_at,
)
from kernelindex.records.canonical import digest
from kernelindex.records.hardware import architecture, vendor
from kernelindex.records.names import UPSTREAM_NAME_LIMIT, slug
from kernelindex.records.normalise import token
from kernelindex.records.strict_json import loads_strict
from kernelindex.records.units import whole_ns
from kernelindex.records.vocabulary import RunStatus

REPOSITORY = "https://github.com/linkedin/Liger-Kernel"
PROVENANCE = Provenance(
    slug="liger-kernel",
    kind="benchmark",
    name="Liger-Kernel benchmarks",
    url=f"{REPOSITORY}/blob/main/benchmark/data/all_benchmark_data.csv",
    license="BSD-2-Clause",
    terms="BSD-2-Clause: redistribution with the copyright notice and licence retained.",
    attribution="LinkedIn Liger-Kernel contributors",
)
COLUMNS = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "metric_unit",
    "x_name",
    "x_label",
    "x_value",
    "y_value_50",
    "y_value_20",
    "y_value_80",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
    "liger_version",
)
METRICS = {"speed", "memory"}
UNITS = ("ms", "ns", "s", "us")  # metric_unit values of a latency row
DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32"}


def read(path: Path, *, retrieved: str | None = None) -> Records:
    """The CSV file at ``path``; Liger-Kernel publishes one file, so a folder is refused, naming the file it wants."""
    if path.is_dir():
        raise UpstreamError(
            path,
            None,
            None,
            "--from liger reads one CSV file (Liger-Kernel's benchmark/data/all_benchmark_data.csv), not a folder",
        )
    text = read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        reason = f"the header lacks the column {missing[0]!r} (expected {', '.join(COLUMNS)})"
        raise UpstreamError(path, 1, missing[0], reason)
    records = Records(Provenance(**{**PROVENANCE.__dict__, "retrieved_at": retrieved or retrieved_at(path)}))
    for row in reader:
        line = reader.line_num
        records.lines += 1
        if None in row or any(row[c] is None for c in COLUMNS):
            raise UpstreamError(path, line, None, f"expected {len(COLUMNS)} columns (the file may be truncated)")
        metric = row["metric_name"]
        if metric not in METRICS:
            raise UpstreamError(path, line, "metric_name", f"unknown metric {metric!r}; one of {sorted(METRICS)}")
        if metric == "memory":
            records.skip("memory rows (not a latency)")
            continue
        _speed_row(records, path, line, row)
    if not records.lines:
        raise UpstreamError(path, None, None, "the file has a header and no rows")
    return records


def _number(path: Path, line: int, row: dict, key: str) -> float:
    try:
        value = float(row[key])
    except ValueError:
        raise UpstreamError(path, line, key, f"expected a number, got {row[key]!r}") from None
    if not math.isfinite(value) or value < 0:
        raise UpstreamError(path, line, key, f"expected a non-negative number, got {row[key]!r}")
    return value


def _ns(path: Path, line: int, key: str, value: float, unit: str) -> int:
    """A latency column's value as whole nanoseconds."""
    ns = whole_ns(value, unit)
    if ns is None:
        raise UpstreamError(path, line, key, f"{value!r} {unit} is past any real latency")
    return ns


def _config(path: Path, line: int, text: str) -> dict[str, Any]:
    try:
        config = loads_strict(text)
    except ValueError as exc:
        reason = f"not a JSON object ({str(exc)[:80]}): {text[:60]!r}"
        raise UpstreamError(path, line, "extra_benchmark_config_str", reason) from None
    if not isinstance(config, dict):
        raise UpstreamError(path, line, "extra_benchmark_config_str", "not a JSON object")
    return config


def _speed_row(records: Records, path: Path, line: int, row: dict) -> None:
    unit = row["metric_unit"]
    if unit not in UNITS:
        raise UpstreamError(path, line, "metric_unit", f"unknown time unit {unit!r}; one of {list(UNITS)}")
    x_value = _number(path, line, row, "x_value")
    if not x_value.is_integer():
        raise UpstreamError(path, line, "x_value", f"expected a whole sweep value, got {row['x_value']!r}")
    latencies = {k: _number(path, line, row, k) for k in ("y_value_50", "y_value_20", "y_value_80")}
    median, p20, p80 = (_ns(path, line, k, value, unit) for k, value in latencies.items())
    config = _config(path, line, row["extra_benchmark_config_str"])
    x_axis = token(row["x_name"])
    axes = {x_axis: int(x_value)} | {
        token(k): v for k, v in config.items() if isinstance(v, int) and not isinstance(v, bool) and token(k) != x_axis
    }
    dtype = DTYPES.get(str(config.get("dtype")), "unspecified")
    kernel, mode = row["kernel_name"], row["kernel_operation_mode"]
    names = sorted(axes)
    operation = record(
        "OperationSpec",
        {
            "family": slug(kernel, limit=UPSTREAM_NAME_LIMIT).replace(".", "-").replace("_", "-"),
            "axes": {a: {"role": "variable", "type": "integer"} for a in names},
            "inputs": [{"name": "x", "tensor": {"dtype": dtype, "shape": names}}],
            "outputs": [{"name": "y", "tensor": {"dtype": dtype, "shape": names}}],
            "semantics": {"mutation": "none", "determinism": "unspecified"},
        },
        meta(f"liger-{kernel}-{mode}", f"{kernel} ({mode})", f"{REPOSITORY}/tree/main/benchmark/scripts"),
        path,
        line,
    )
    op_digest = records.parent(line, operation)
    workload = record(
        "WorkloadCase",
        {
            "operationSpecDigest": op_digest,
            "axes": axes,
            "tensors": {"x": {"dtype": dtype, "shape": [axes[a] for a in names]}},
            "correctness": {"comparator": "liger_benchmark_unchecked"},
        },
        meta(f"liger-{kernel}-{mode}-{x_axis}{int(x_value)}", f"{kernel} {mode} · {row['x_label']} {int(x_value)}"),
        path,
        line,
    )
    records.parent(line, workload)
    gpu, version = row["gpu_name"].strip(), row["liger_version"].strip()
    arch = architecture(gpu)
    impl = record(
        "ImplementationRevision",
        {
            "projectRevision": {"repository": REPOSITORY, "version": version}
            if row["kernel_provider"].startswith("liger")
            else {"version": f"{row['kernel_provider']} (Liger-Kernel benchmark {version})"},
            "operation": {"specDigest": op_digest},
            "callable": {"language": "python", "symbol": row["kernel_provider"][:200]},
            "support": {"dtypes": [dtype], "productsTested": [gpu[:100]], "hardwareArchitectures": [arch]},
            "licensing": {"declared": "BSD-2-Clause"} if row["kernel_provider"].startswith("liger") else {},
        },
        meta(
            f"liger-{kernel}-{mode}-{row['kernel_provider']}-{version}", f"{row['kernel_provider']} · {kernel} ({mode})"
        ),
        path,
        line,
    )
    records.parent(line, impl)
    protocol = record(
        "BenchmarkProtocol",
        {
            "harness": {"name": "Liger-Kernel benchmark scripts", "repository": REPOSITORY},
            "correctness": {
                "reference": "none: speed benchmarks do not check outputs",
                "comparator": "liger_benchmark_unchecked",
            },
            "measurement": {"timer": "triton_do_bench", "primaryStatistic": "median"},
            "comparability": {
                "family": "liger_benchmark",
                "notes": "triton.testing.do_bench quantiles (0.2, 0.5, 0.8) as the CSV records them; "
                "comparable within one kernel, mode, sweep point and GPU.",
            },
        },
        meta("liger-benchmark-do-bench", "Liger-Kernel benchmark (triton do_bench)"),
        path,
        line,
    )
    environment = record(
        "ExecutionEnvironment",
        {
            "hardware": {"vendor": vendor(gpu), "product": gpu[:200], "architecture": arch},
            "software": {},
        },
        meta(f"liger-{gpu}", gpu),
        path,
        line,
    )
    external = f"{kernel}/{row['kernel_provider']}/{mode}/{row['x_name']}={int(x_value)}/{row['timestamp']}"
    run = record(
        "BenchmarkRun",
        {
            "implementationDigest": digest(impl),
            "workloadDigest": digest(workload),
            "protocolDigest": digest(protocol),
            "environmentDigest": digest(environment),
            "status": RunStatus.PASSED.value,
            "observedAt": iso_time(row["timestamp"], path, line, "timestamp"),
            "timing": {"primaryStatistic": "median", "latencyNs": {"median": median}},
            "measurements": [
                {"metric": "latency", "statistic": "p20", "unit": "ns", "value": p20},
                {"metric": "latency", "statistic": "p80", "unit": "ns", "value": p80},
            ],
            "sourceNative": {
                "source": PROVENANCE.slug,
                "benchmark": kernel[:200],
                "externalId": external[:500],
                "metrics": {f"y_value_50_{unit}": latencies["y_value_50"]},
            },
        },
        meta(
            f"liger-{kernel}-{row['kernel_provider']}-{x_axis}{int(x_value)}-{row['timestamp']}",
            f"{row['kernel_provider']} · {kernel} {mode} · {row['x_label']} {int(x_value)} · {gpu}",
        ),
        path,
        line,
    )
    records.run(line, run, protocol, environment)
