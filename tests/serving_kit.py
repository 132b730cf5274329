"""A small serving catalog of our own: a source, a project, models, stacks, configurations,
workloads and runs with random (seeded) throughputs, every digest and key computed, as export lines."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import zstandard

from kernelindex.ingest.jsonlines import js_dumps
from kernelindex.records.canonical import digest
from kernelindex.records.serving_keys import run_keys

API = "kernelindex.dev/v1alpha1"
GPUS = ["NVIDIA H200-SXM-141GB", "NVIDIA B200-SXM-180GB"]


def _record(kind: str, name: str, spec: dict[str, Any], title: str | None = None) -> dict[str, Any]:
    metadata = {"name": name, **({"title": title} if title else {})}
    return {"apiVersion": API, "kind": kind, "metadata": metadata, "spec": spec}


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-7{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def serving_lines(seed: int, runs_per_cell: int = 3) -> list[dict[str, Any]]:
    """Export lines, parents first: 2 models x 2 workloads (interactive with an SLO, offline) x 2 GPUs."""
    rng = random.Random(seed)
    lines: list[dict[str, Any]] = []
    source_id, project_id = _uuid(rng), _uuid(rng)
    lines.append(
        {
            "table": "sources",
            "row": {
                "id": source_id,
                "slug": "toy-serving",
                "kind": "benchmark",
                "name": "Toy serving bench",
                "policy": {"license": "CC0-1.0"},
            },
        }
    )
    project = _record("SoftwareProject", "toy-stack-maker", {"name": "Toy stack maker"})
    lines.append(
        {
            "table": "projects",
            "row": {"id": project_id, "slug": "toy-stack-maker", "name": "Toy stack maker", "manifest": project},
        }
    )
    models = []
    for name in ("toy-llm-7b", "toy-llm-70b"):
        model = _record(
            "ModelRevision", name, {"model": name.upper(), "tokenizer": {"name": f"{name}-tok"}}, title=name.upper()
        )
        row = {
            "id": _uuid(rng),
            "slug": name,
            "modelDigest": digest(model),
            "name": name.upper(),
            "parameterCount": None,
            "contextLength": None,
            "tokenizer": None,
            "license": None,
            "schemaVersion": API,
            "manifest": model,
        }
        models.append((row, model))
        lines.append({"table": "model_revisions", "row": row})
    stack = _record(
        "ServingStackRevision",
        "toy-serve-1",
        {"project": {"name": "Toy stack maker"}, "revision": {"version": "toyserve 1.0"}},
    )
    stack_row = {
        "id": _uuid(rng),
        "projectId": project_id,
        "slug": "toy-serve-1",
        "stackDigest": digest(stack),
        "name": "toyserve 1.0",
        "version": "toyserve 1.0",
        "schemaVersion": API,
        "manifest": stack,
    }
    lines.append({"table": "serving_stack_revisions", "row": stack_row})
    configs = []
    for tp in (1, 2, 4):
        config = _record(
            "ServingConfiguration",
            f"toy-tp{tp}",
            {"stackDigest": digest(stack), "dtype": "fp8", "parallelism": {"tensor": tp}},
        )
        row = {
            "id": _uuid(rng),
            "stackRevisionId": stack_row["id"],
            "configurationDigest": digest(config),
            "dtype": "fp8",
            "quantization": None,
            "tensorParallel": tp,
            "summary": f"toyserve TP{tp}",
            "schemaVersion": API,
            "manifest": config,
        }
        configs.append((row, config))
        lines.append({"table": "serving_configurations", "row": row})
    workloads = []
    for name, spec in (
        (
            "toy-interactive",
            {
                "streaming": True,
                "loadGeneration": "open_loop",
                "slo": [{"metric": "tpot_ms", "statistic": "p99", "operator": "<=", "value": 40, "unit": "ms"}],
                "tokens": {"prompt": {"distribution": "fixed", "maximum": 2048}},
            },
        ),
        ("toy-offline", {"streaming": False, "loadGeneration": "offline"}),
    ):
        workload = _record("ServingWorkload", name, spec, title=name)
        row = {
            "id": _uuid(rng),
            "workloadDigest": digest(workload),
            "slug": name,
            "name": name,
            "streaming": spec["streaming"],
            "loadGeneration": spec["loadGeneration"],
            "schemaVersion": API,
            "manifest": workload,
        }
        workloads.append((row, workload))
        lines.append({"table": "serving_workloads", "row": row})
    runs, measurements = [], []
    for model_row, model in models:
        for workload_row, workload in workloads:
            for gpu in GPUS:
                for i in range(runs_per_cell):
                    config_row, config = configs[i % len(configs)]
                    per_node = rng.choice([1, 8])
                    value = round(rng.uniform(500, 20000), 2)
                    measurement = {
                        "metric": "output_token_throughput_tps",
                        "statistic": "reported",
                        "unit": "tokens_s",
                        "value": value,
                    }
                    spec = {
                        "modelDigest": digest(model),
                        "configurationDigest": digest(config),
                        "workloadDigest": digest(workload),
                        "topology": {
                            "acceleratorVendor": "nvidia",
                            "acceleratorModel": gpu,
                            "acceleratorsPerNode": per_node,
                            "nodeCount": 1,
                        },
                        "harness": {"name": "toy_loadgen", "version": "v1"},
                        "qualityPolicy": "toy_99",
                        "status": "valid",
                        "measurements": [measurement],
                        "observedAt": "2026-01-02T03:04:05Z",
                    }
                    run = _record("ServingRun", f"toy-run-{len(runs)}", spec, title=f"toy run {len(runs)}")
                    keys = run_keys(spec, model["spec"], workload["spec"])
                    row = {
                        "id": _uuid(rng),
                        "runDigest": digest(run),
                        "modelRevisionId": model_row["id"],
                        "configurationId": config_row["id"],
                        "workloadId": workload_row["id"],
                        "sourceId": source_id,
                        "status": "valid",
                        "observedAt": "2026-01-02T03:04:05.000Z",
                        "publishedAt": None,
                        **keys,
                        "qualityPolicy": "toy_99",
                        "scenario": workload_row["slug"].removeprefix("toy-"),
                        "acceleratorVendor": "nvidia",
                        "acceleratorModel": gpu,
                        "acceleratorCount": per_node,
                        "nodeCount": 1,
                        "totalAccelerators": per_node,
                        "reported": True,
                        "schemaVersion": API,
                        "manifest": run,
                        "supersedesId": None,
                        "retractedAt": None,
                        "retractionReason": None,
                    }
                    runs.append({"table": "serving_runs", "row": row})
                    measurements.append(
                        {
                            "table": "serving_measurements",
                            "row": {"id": _uuid(rng), "runId": row["id"], **measurement, "sampleCount": None},
                        }
                    )
    return lines + runs + measurements


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    text = "".join(js_dumps(line) + "\n" for line in lines)
    path.write_bytes(zstandard.ZstdCompressor().compress(text.encode()))
    return path


def read_lines(path: Path) -> list[str]:
    with open(path, "rb") as raw:
        return zstandard.ZstdDecompressor().stream_reader(raw).read().decode().splitlines()
