"""MLPerf Inference ``summary_results.json`` rows into the serving kinds (ModelRevision,
ServingStackRevision, ServingConfiguration, ServingWorkload, ServingRun), each validated as it is
built, and refused naming file, line and field; :mod:`serving_store` stores them in the serving
tables.

Only closed-division datacenter LLM rows measured in tokens per second are serving results the
index compares; other rows (open division, edge, non-LLM models, other units) are counted and skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelindex.ingest.upstream.common import (
    Provenance,
    UpstreamError,
    meta,
    need,
    read_json,
    record,
    retrieved_at,
)
from kernelindex.ingest.whole_files import read_whole
from kernelindex.records.canonical import digest
from kernelindex.records.hardware import vendor
from kernelindex.records.names import UPSTREAM_NAME_LIMIT, slug
from kernelindex.records.normalise import token
from kernelindex.records.vocabulary import ServingStatus

RULES = "https://github.com/mlcommons/inference_policies/blob/master/inference_rules.adoc"
PROVENANCE = Provenance(
    slug="mlperf-inference",
    kind="benchmark",
    name="MLPerf Inference",
    url="https://mlcommons.org/benchmarks/inference-datacenter/",
    license="Apache-2.0",
    terms="Apache-2.0 result repos; official published results shown unmodified with round, division, submitter, "
    "system, and entry ID per the MLPerf Results Messaging Guidelines.",
    attribution="MLPerf™ Inference results by MLCommons; MLPerf™ is a trademark of MLCommons",
)
LLM_MODELS = re.compile(r"^(llama|mixtral|deepseek|gpt-|qwen|gpt-j)", re.IGNORECASE)
SCENARIOS = {"Offline": ("offline", False), "Server": ("open_loop", True), "Interactive": ("open_loop", True)}
# results of a round appear in public on its publication day
ROUND_PUBLISHED = {"v5.0": "2025-04-02T00:00:00.000Z", "v5.1": "2025-09-09T00:00:00.000Z"}


@dataclass(frozen=True)
class Reference:
    """One MLPerf reference model as the public index records it: its display name, its dataset, and the
    p99 latency limits (TTFT, TPOT in ms) the inference rules set for its streaming scenarios."""

    name: str
    dataset: str
    limits: dict[str, tuple[int, int]]


# With these, an import of upstream's summary makes the very records (same digests, so the same rows) the
# public export holds: one model and one workload whichever way they arrive. A model not listed here keeps
# upstream's own name and a workload with no dataset or limits.
REFERENCES = {
    "llama2-70b": Reference(
        "Llama-2-70B", "OpenOrca (max_seq_len=1024)", {"Server": (2000, 200), "Interactive": (450, 40)}
    ),
    "mixtral-8x7b": Reference("Mixtral-8x7B", "OpenOrca + GSM8K + MBXP (5k each)", {"Server": (2000, 200)}),
    "llama3.1-405b": Reference(
        "Llama-3.1-405B",
        "LongBench/LongDataCollections/Ruler/GovReport subset",
        {"Server": (6000, 175), "Interactive": (4500, 80)},
    ),
    "llama3.1-8b": Reference(
        "Llama-3.1-8B", "CNN DailyMail v3.0.0 (max_seq_len=2048)", {"Server": (2000, 100), "Interactive": (500, 30)}
    ),
    "deepseek-r1": Reference("DeepSeek-R1", "mlperf_deepseek_r1", {"Server": (2000, 80), "Interactive": (1500, 15)}),
    "gpt-oss-120b": Reference(
        "GPT-OSS-120B", "AIME25 + GPQA Diamond + LiveCodeBench v6", {"Server": (3000, 80), "Interactive": (2000, 20)}
    ),
}


def model_spec(base: str) -> dict[str, Any]:
    """The ModelRevision of an MLPerf model (``llama2-70b``: ``Llama-2-70B (MLPerf reference)``)."""
    known = REFERENCES.get(base)
    return {"model": f"{known.name if known else base} (MLPerf reference)"}


def workload_spec(base: str, scenario: str) -> dict[str, Any]:
    """The ServingWorkload of one model's scenario: load, streaming, and where known dataset and limits."""
    load, streaming = SCENARIOS[scenario]
    spec: dict[str, Any] = {"streaming": streaming, "loadGeneration": load}
    if load == "open_loop":
        spec["arrival"] = "poisson"
    known = REFERENCES.get(base)
    if known is None:
        return spec
    spec["dataset"] = {"name": known.dataset}
    if scenario in known.limits:
        ttft, tpot = known.limits[scenario]
        spec["slo"] = [
            {"metric": "ttft_ms", "statistic": "p99", "operator": "<=", "value": ttft, "unit": "ms"},
            {"metric": "tpot_ms", "statistic": "p99", "operator": "<=", "value": tpot, "unit": "ms"},
        ]
    return spec


@dataclass
class ServingRecords:
    """The serving records of one file, each kind de-duplicated by digest, and the rows skipped."""

    provenance: Provenance
    models: dict[str, dict] = field(default_factory=dict)
    stacks: dict[str, dict] = field(default_factory=dict)
    configurations: dict[str, dict] = field(default_factory=dict)
    workloads: dict[str, dict] = field(default_factory=dict)
    runs: list[tuple[str, dict]] = field(default_factory=list)  # (row ID, ServingRun)
    run_lines: list[int | None] = field(default_factory=list)  # the line each run's row starts on
    skipped: dict[str, int] = field(default_factory=dict)
    rows: int = 0

    def keep(self, kind: dict[str, dict], rec: dict) -> str:
        key = digest(rec)
        kind.setdefault(key, self.provenance.stamp(rec))
        return key


def read(path: Path, *, retrieved: str | None = None) -> ServingRecords:
    rows = read_json(path)
    if not isinstance(rows, list):
        raise UpstreamError(path, None, None, "expected a JSON list of summary rows")
    when = retrieved or retrieved_at(path)
    out = ServingRecords(Provenance(**{**PROVENANCE.__dict__, "retrieved_at": when}), rows=len(rows))
    lines = row_lines(read_whole(path).decode("utf-8"))
    for index, row in enumerate(rows):
        _row(out, path, index, lines[index] if index < len(lines) else None, row, when)
    return out


def row_lines(text: str) -> list[int]:
    """The line on which each element of a top-level JSON list starts (for messages); the text has
    been read as JSON already."""
    decoder = json.JSONDecoder()
    lines: list[int] = []
    line, pos = 1, text.index("[") + 1
    while True:
        start = pos
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        line += text.count("\n", start, pos)
        if pos >= len(text) or text[pos] == "]":
            return lines
        lines.append(line)
        _, end = decoder.raw_decode(text, pos)
        line += text.count("\n", pos, end)
        pos = end


def _skip(out: ServingRecords, reason: str) -> None:
    out.skipped[reason] = out.skipped.get(reason, 0) + 1


def _row(out: ServingRecords, path: Path, index: int, line: int | None, row: Any, when: str) -> None:
    where = f"[{index}]"
    if not isinstance(row, dict):
        raise UpstreamError(path, line, where, "expected a summary row object")
    division = need(row, "Category", str, path, line, where)
    suite = need(row, "Suite", str, path, line, where)
    model = need(row, "Model", str, path, line, where)
    units = need(row, "Performance_Units", str, path, line, where)
    scenario = need(row, "Scenario", str, path, line, where)
    if division not in ("closed", "open"):
        raise UpstreamError(path, line, f"{where}.Category", f"unknown division {division!r}; one of closed, open")
    if division != "closed":
        return _skip(out, "open division")
    if suite != "datacenter":
        return _skip(out, "not a datacenter result")
    if not LLM_MODELS.match(model):
        return _skip(out, "not an LLM")
    if units != "Tokens/s":
        return _skip(out, "not a token throughput")
    if scenario not in SCENARIOS:
        raise UpstreamError(
            path, line, f"{where}.Scenario", f"unknown scenario {scenario!r}; one of {sorted(SCENARIOS)}"
        )
    value = need(row, "Performance_Result", (int, float), path, line, where)
    nodes = need(row, "Nodes", int, path, line, where)
    per_node = need(row, "a#", int, path, line, where)
    total = row.get("Total Accelerators")
    if total is not None:
        per_node = need(row, "Total Accelerators", int, path, line, where) // max(nodes, 1) or per_node
    errors = need(row, "errors", int, path, line, where)
    version = need(row, "version", str, path, line, where)
    submitter = need(row, "Submitter", str, path, line, where)
    software = str(row.get("Software") or "unspecified")
    system = str(row.get("System") or "unspecified")
    accelerator = re.sub(r"\s*\(x\d+\)$", "", need(row, "Accelerator", str, path, line, where)).strip()
    base = model.removesuffix("-99.9").removesuffix("-99")
    model_rec = record(
        "ModelRevision", model_spec(base), meta(f"mlperf-{base}", model_spec(base)["model"], RULES), path, line
    )
    stack = record(
        "ServingStackRevision",
        {
            "project": {"name": f"{submitter} (MLPerf submitter)"[:200]},
            "revision": {"version": software[:120]},
            "apiProtocol": "loadgen_sut",
        },
        meta(f"mlperf-stack-{submitter}-{software}"[:180]),
        path,
        line,
    )
    stack_digest = out.keep(out.stacks, stack)
    options = {"system": system[:500], "software": software[:500]}
    if row.get("Availability"):
        options["availability"] = str(row["Availability"])[:500]
    dtype = row.get("weight_data_types")
    configuration = record(
        "ServingConfiguration",
        {
            "stackDigest": stack_digest,
            **({"dtype": token(dtype)} if dtype else {}),
            "options": options,
        },
        meta(f"mlperf-{submitter}-{system}"),
        path,
        line,
    )
    workload = record(
        "ServingWorkload",
        workload_spec(base, scenario),
        meta(f"mlperf-{model}-{scenario}", f"{model} · {scenario}", RULES),
        path,
        line,
    )
    run = record(
        "ServingRun",
        {
            "modelDigest": out.keep(out.models, model_rec),
            "configurationDigest": out.keep(out.configurations, configuration),
            "workloadDigest": out.keep(out.workloads, workload),
            "topology": {
                "acceleratorVendor": vendor(accelerator),
                "acceleratorModel": accelerator[:200],
                "acceleratorsPerNode": per_node,
                "nodeCount": nodes,
            },
            "harness": {"name": "mlperf_loadgen", "version": version},
            "qualityPolicy": "mlperf_closed_999" if model.endswith("-99.9") else "mlperf_closed_99",
            "status": ServingStatus.VALID.value if errors == 0 else ServingStatus.INVALID.value,
            "measurements": [
                {"metric": "output_token_throughput_tps", "unit": "tokens_s", "statistic": "reported", "value": value}
            ],
            "sourceNative": {
                "source": PROVENANCE.slug,
                "benchmark": model[:200],
                "scenario": token(scenario),
                "division": division,
                "category": suite,
                "externalId": str(row.get("ID") or index)[:500],
                "metrics": {"performance_result": value, "performance_units": units},
            },
            "observedAt": ROUND_PUBLISHED.get(version, when),
        },
        meta(
            f"mlperf-{row.get('ID') or index}-{slug(model, limit=UPSTREAM_NAME_LIMIT)}",
            f"{submitter} · {system} · {model} {scenario}",
            str(row.get("Details") or "") or None,
        ),
        path,
        line,
    )
    out.runs.append((str(row.get("ID") or index), out.provenance.stamp(run)))
    out.run_lines.append(line)
