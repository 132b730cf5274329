"""KernelBench's published baselines (``results/timing/<machine>/baseline_time_torch*.json``) as reported runs.

Each entry is one problem file's reference time on one machine, with PyTorch eager or with a
torch.compile configuration (told by the file name): an OperationSpec per problem (the file holds
no shapes, so its signature is opaque, as for other upstream boards), a WorkloadCase at the
problem's published sizes, an ImplementationRevision per variant, and a BenchmarkRun whose primary
figure is the mean (std, min and max beside it, and the trial count). The machine is the folder's
name and the entry's hardware. Reading the document is `formats.kernelbench.parse_baselines`.
"""

from __future__ import annotations

from pathlib import Path

from kernelindex.formats.kernelbench import Baseline, KernelBenchError, baseline_variant, parse_baselines
from kernelindex.ingest.upstream.common import (
    Provenance,
    Records,
    UpstreamError,
    meta,
    read_json,
    record,
    retrieved_at,
    snapshot_files,
)
from kernelindex.records.canonical import digest
from kernelindex.records.hardware import architecture, vendor
from kernelindex.records.vocabulary import RunStatus

REPOSITORY = "https://github.com/ScalingIntelligence/KernelBench"
PROVENANCE = Provenance(
    slug="kernelbench",
    kind="benchmark",
    name="KernelBench baselines",
    url=f"{REPOSITORY}/tree/main/results/timing",
    license="MIT",
    terms="MIT: redistribution with the copyright notice and licence retained.",
    attribution="ScalingIntelligence KernelBench authors",
)
STATISTICS = ("std", "min", "max")


def _files(path: Path) -> list[tuple[Path, str, list[Baseline]]]:
    """Each baseline file under ``path`` (or ``path`` itself): its variant and entries."""
    out = []
    for file in snapshot_files(path, "baseline_time_torch*.json", recursive=True):
        try:
            out.append((file, baseline_variant(file.name), parse_baselines(read_json(file), str(file))))
        except KernelBenchError as exc:
            raise UpstreamError(file, exc.line, None, exc.reason) from None
    return out


def baseline_names(path: Path) -> set[str]:
    """The operation names of the problems the baselines under ``path`` time (which problem files to read)."""
    return {entry.name for _, _, baselines in _files(path) for entry in baselines}


def read(path: Path, *, retrieved: str | None = None, problems: dict[str, list[dict]] | None = None) -> Records:
    """The baselines as reported runs. ``problems`` (operation name -> the records `kernelindex import
    KernelBench/levelN` makes of that problem file) links each baseline to its problem's own
    OperationSpec and WorkloadCase, where the solutions' runs are; without it each problem gets an
    opaque ``<name>-baseline`` operation of its own (the baseline file holds no shapes)."""
    files = _files(path)
    records = Records(Provenance(**{**PROVENANCE.__dict__, "retrieved_at": retrieved or retrieved_at(files[0][0])}))
    for file, variant, baselines in files:
        machine = file.parent.name
        observed = retrieved or retrieved_at(file)
        for baseline in baselines:
            records.lines += 1
            parents = _parents(records, file, baseline, problems)
            _baseline(records, file, machine, variant, baseline, observed, parents)
    return records


def _parents(records: Records, file: Path, entry: Baseline, problems: dict[str, list[dict]] | None) -> tuple[str, str]:
    """Digests of the OperationSpec and WorkloadCase a baseline is a run of."""
    if problems is None:
        return _opaque(records, file, entry)
    own = problems.get(entry.name)
    if own is None:
        reason = f"no problem file {entry.file} in level{entry.level} of the KernelBench folder given (--problem)"
        raise UpstreamError(file, None, f"level{entry.level}.{entry.file}", reason)
    digests = {rec["kind"]: records.parent(None, rec) for rec in own}
    return digests["OperationSpec"], digests["WorkloadCase"]


def _opaque(records: Records, file: Path, entry: Baseline) -> tuple[str, str]:
    name, number = entry.name, entry.number
    operation = record(
        "OperationSpec",
        {
            "family": f"kernelbench-level{entry.level}",
            # the signature is not in the file: the problem's number within its level tells problems apart
            "axes": {"problem": {"role": "constant", "type": "integer", "value": number}},
            "inputs": [{"name": "inputs", "tensor": {"dtype": "unspecified", "shape": [1]}}],
            "outputs": [{"name": "output", "tensor": {"dtype": "unspecified", "shape": [1]}}],
            "semantics": {"mutation": "none", "determinism": "unspecified"},
        },
        meta(
            f"{name}-baseline",
            f"KernelBench level {entry.level} · {entry.file}",
            f"{REPOSITORY}/blob/main/KernelBench/level{entry.level}/{entry.file}",
        ),
        file,
        None,
    )
    op_digest = records.parent(None, operation)
    workload = record(
        "WorkloadCase",
        {
            "operationSpecDigest": op_digest,
            "axes": {"problem": number},
            "tensors": {},
            "correctness": {"comparator": "kernelbench_baseline_unchecked"},
        },
        meta(f"{name}-published-sizes", f"{entry.file} · the problem file's own sizes"),
        file,
        None,
    )
    return op_digest, records.parent(None, workload)


def _baseline(
    records: Records, file: Path, machine: str, variant: str, entry: Baseline, observed: str, parents: tuple[str, str]
) -> None:
    name, where = entry.name, f"level{entry.level}.{entry.file}"
    op_digest, workload_digest = parents
    impl = record(
        "ImplementationRevision",
        {
            "projectRevision": {"repository": REPOSITORY, "version": variant},
            "operation": {"specDigest": op_digest},
            "callable": {"language": "python", "symbol": "Model.forward"},
            "support": {
                "dtypes": ["fp32"],
                "productsTested": [entry.hardware[:100]],
                "hardwareArchitectures": [architecture(entry.hardware)],
            },
            "licensing": {"declared": "MIT"},
        },
        meta(f"{name}-{variant}", f"{entry.file} · reference Model ({variant})"),
        file,
        None,
    )
    records.parent(None, impl)
    protocol = record(
        "BenchmarkProtocol",
        {
            "harness": {"name": "KernelBench generate_baseline_time", "repository": REPOSITORY},
            "correctness": {"reference": "none: the baseline is the reference itself", "comparator": "none"},
            "measurement": {
                "timer": "cuda_event",
                "synchronization": "device_sync",
                "warmupIterations": 3,
                "measuredIterations": int(entry.statistics["num_trials"]),
                "primaryStatistic": "mean",
            },
            "comparability": {
                "family": "kernelbench_baseline",
                "notes": f"KernelBench's published reference time ({variant}) on {machine}, in ms as the file "
                "states it: mean with std, min and max over its trials. Comparable within one machine folder.",
            },
        },
        meta(f"kernelbench-baseline-{variant}", f"KernelBench baseline timing ({variant})"),
        file,
        None,
    )
    environment = record(
        "ExecutionEnvironment",
        {
            "hardware": {
                "vendor": vendor(entry.hardware),
                "product": entry.hardware[:200],
                "architecture": architecture(entry.hardware),
            },
            "software": {},
        },
        meta(f"kernelbench-{machine}", f"KernelBench machine {machine} · {entry.hardware}"),
        file,
        None,
    )
    stats = entry.statistics
    run = record(
        "BenchmarkRun",
        {
            "implementationDigest": digest(impl),
            "workloadDigest": workload_digest,
            "protocolDigest": digest(protocol),
            "environmentDigest": digest(environment),
            "status": RunStatus.PASSED.value,
            "observedAt": observed,
            "measurements": [
                {"metric": "latency", "statistic": "mean", "unit": "ms", "value": stats["mean"]},
                *({"metric": "latency", "statistic": s, "unit": "ms", "value": stats[s]} for s in STATISTICS),
            ],
            "sourceNative": {
                "source": PROVENANCE.slug,
                "benchmark": f"KernelBench {machine} ({variant}, {entry.device})"[:200],
                "externalId": f"{machine}/{file.name}/{where}"[:200],
                "metrics": {"num_trials": stats["num_trials"]},
            },
        },
        meta(f"{name}-{variant}-{machine}", f"{entry.file} · {variant} · {machine}"),
        file,
        None,
    )
    records.run(None, run, protocol, environment)
