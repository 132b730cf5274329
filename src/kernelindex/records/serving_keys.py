"""Keys of serving runs, computed as the public KernelIndex site computes them (policy "serving-v1").

Serving results never share a comparison key with kernel runs. Two serving runs compare only when
they have the same *cohort key*: the hash (RFC 8785 JSON, SHA-256) of seven parts, the model, its
tokenizer, the workload, the protocol (harness, version, placement, streaming, load generation),
the topology (accelerator vendor and model, accelerators per node x nodes, interconnect), the
quality policy and the set of metrics measured. The configuration and the serving stack are what
compete inside a cohort. Checked over every run of the public serving slice: 0 mismatches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kernelindex.records.canonical import canonical_json, sha256_digest
from kernelindex.records.vocabulary import Direction

SERVING_POLICY_VERSION = "serving-v1"

# metric -> (unit as the site names it, direction); the vocabulary the site ranks with
SERVING_METRICS: dict[str, tuple[str, Direction]] = {
    "ttft_ms": ("ms", Direction.LOWER),
    "tpot_ms": ("ms", Direction.LOWER),
    "itl_ms": ("ms", Direction.LOWER),
    "e2e_latency_ms": ("ms", Direction.LOWER),
    "request_throughput_rps": ("req/s", Direction.HIGHER),
    "output_token_throughput_tps": ("tokens/s", Direction.HIGHER),
    "token_throughput_tps": ("tokens/s", Direction.HIGHER),
    "goodput": ("tokens/s", Direction.HIGHER),
    "error_rate": ("ratio", Direction.LOWER),
}


def serving_direction(metric: str) -> Direction | None:
    """The direction a serving metric improves in, or None for a metric outside the vocabulary."""
    known = SERVING_METRICS.get(metric)
    return known[1] if known else None


def metric_direction(metric: str) -> str | None:
    """``"max"`` (higher is better), ``"min"``, or None: the site's word, which the serving page shows."""
    direction = serving_direction(metric)
    return direction.extremum if direction else None


def protocol_key(
    harness_name: str, harness_version: str, placement: str | None, streaming: bool, load_generation: str
) -> str:
    return "/".join(
        [
            harness_name,
            harness_version,
            placement or "unspecified",
            "streaming" if streaming else "non_streaming",
            load_generation,
        ]
    )


def topology_key(vendor: str | None, model: str, per_node: int, nodes: int, interconnect: str | None) -> str:
    return "/".join([vendor or "unknown", model, f"{per_node}x{nodes}", interconnect or "unspecified"])


def metric_set_key(measurements: Iterable[Mapping[str, Any]]) -> str:
    """Sorted, de-duplicated ``metric·statistic`` pairs: runs compare only if they measured alike."""
    return ",".join(sorted({f"{m['metric']}·{m['statistic']}" for m in measurements}))


def cohort_key(
    *,
    model_digest: str,
    tokenizer: str | None,
    workload_digest: str,
    protocol: str,
    topology: str,
    quality_policy: str,
    metric_set: str,
) -> str:
    parts = {
        "modelDigest": model_digest,
        "tokenizer": tokenizer,
        "workloadDigest": workload_digest,
        "protocolKey": protocol,
        "topologyKey": topology,
        "qualityPolicy": quality_policy,
        "metricSetKey": metric_set,
    }
    return sha256_digest(canonical_json(parts))


def run_keys(
    run_spec: Mapping[str, Any], model_spec: Mapping[str, Any], workload_spec: Mapping[str, Any]
) -> dict[str, str]:
    """The keys of one serving run from its spec and the specs of its model and workload:
    ``protocolKey``, ``metricSetKey``, ``cohortKey`` (the names the export rows use)."""
    topology = run_spec["topology"]
    protocol = protocol_key(
        run_spec["harness"]["name"],
        run_spec["harness"]["version"],
        run_spec.get("placement"),
        bool(workload_spec.get("streaming")),
        workload_spec["loadGeneration"],
    )
    metric_set = metric_set_key(run_spec["measurements"])
    tokenizer = (model_spec.get("tokenizer") or {}).get("name")
    cohort = cohort_key(
        model_digest=run_spec["modelDigest"],
        tokenizer=tokenizer,
        workload_digest=run_spec["workloadDigest"],
        protocol=protocol,
        topology=topology_key(
            topology.get("acceleratorVendor"),
            topology["acceleratorModel"],
            topology["acceleratorsPerNode"],
            topology["nodeCount"],
            topology.get("interconnect"),
        ),
        quality_policy=run_spec["qualityPolicy"],
        metric_set=metric_set,
    )
    return {"protocolKey": protocol, "metricSetKey": metric_set, "cohortKey": cohort}
