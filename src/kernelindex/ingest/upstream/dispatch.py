"""``kernelindex import --from SOURCE PATH``: pick the upstream reader (named, or told by content) and store.

Every importer is all-or-nothing: one thing it cannot read refuses the whole path, naming file,
line and field, and the store is left as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernelindex.ingest.catalog import ImportReport
from kernelindex.ingest.problems import ImportFailed, ImportProblem
from kernelindex.ingest.upstream import flashinfer, gpumode, kernelbench, liger, mlperf, sol_api
from kernelindex.ingest.upstream.common import UpstreamError, store_records
from kernelindex.ingest.upstream.serving_store import store_serving
from kernelindex.ingest.whole_files import read_whole

READERS = {
    "sol-api": sol_api.read,
    "flashinfer": flashinfer.read,
    "gpumode": gpumode.read,
    "liger": liger.read,
    "kernelbench": kernelbench.read,
}
SOURCES = (*READERS, "mlperf")


def _head(path: Path) -> str:
    """The first 4 KiB of a file, as text: enough to tell the formats apart."""
    with open(path, "rb") as f:
        return f.read(4096).decode("utf-8", errors="replace")


def detect(path: Path) -> str:
    """Which upstream format ``path`` holds, from its content (raises ImportFailed when none fits)."""
    if path.is_dir():
        if any(path.rglob("*.jsonl")) and any(p.name != "info.json" for p in path.rglob("*.json")):
            return "flashinfer"
        files = sorted(path.glob("*.json"))
    else:
        files = [path]
    if path.suffix == ".csv":
        head = _head(path).split("\n", 1)[0]
        if head.startswith("kernel_name,"):
            return "liger"
    if path.name.startswith("baseline_time_torch") or (path.is_dir() and any(path.rglob("baseline_time_torch*.json"))):
        return "kernelbench"
    for file in files:
        try:
            head = _head(file)
        except OSError:
            continue
        if '"Performance_Result"' in head or '"Performance_Units"' in head:
            return "mlperf"
        if '"rows"' in head and ('"leaderboard_id"' in head or '"gpu_types"' in head):
            return "gpumode"
        if '"data"' in head and ('"submissions"' in head or '"kernels"' in head or '"workloads"' in head):
            return "sol-api"
        try:
            if isinstance(json.loads(read_whole(file)), list):
                return "mlperf"
        except (ValueError, OSError):
            pass
    raise ImportFailed(
        [ImportProblem(str(path), None, None, f"not a format --from knows ({', '.join(SOURCES)}); name one")]
    )


def import_upstream(
    store, source: str | None, path: Path, *, check: bool = False, problems: dict[str, list[dict]] | None = None
) -> ImportReport:
    """Read ``path`` as ``source`` (detected when None) and store it (MLPerf's serving results in the
    serving tables). ``problems``: KernelBench's problem records by operation name, which its
    baselines are linked to (`kernelbench.read`)."""
    if not path.exists():
        raise ImportFailed([ImportProblem(str(path), None, None, "no such file or directory")])
    source = source or detect(path)
    if source not in SOURCES:
        reason = f"unknown source {source!r}; one of {', '.join(SOURCES)}"
        raise ImportFailed([ImportProblem(str(path), None, "--from", reason)])
    try:
        if source == "kernelbench":
            return store_records(store, kernelbench.read(path, problems=problems), str(path), check=check)
        if source == "mlperf":
            return store_serving(store, mlperf.read(path), str(path), check=check)
        records = flashinfer.read(path) if source == "flashinfer" else READERS[source](path)
    except UpstreamError as exc:
        raise ImportFailed([exc.problem]) from None
    return store_records(store, records, str(path), check=check)
