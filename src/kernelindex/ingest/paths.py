"""``kernelindex import PATH...``: decide what each path is and hand it to the right importer."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from kernelindex.formats.packs import is_problem_folder
from kernelindex.formats.records import TraceLinks
from kernelindex.formats.trace_set import is_trace_set
from kernelindex.ingest.bundles import import_bundles
from kernelindex.ingest.catalog import BadLines, ImportReport, import_catalog
from kernelindex.ingest.jsonlines import MAX_LINE
from kernelindex.ingest.problems import ImportFailed, ImportProblem
from kernelindex.records.strict_json import loads_strict
from kernelindex.store.database import Writable


def kind_of(path: Path) -> str:
    """catalog, bundles, problem or traces (raises ImportFailed for anything else)."""
    if not path.exists():
        raise ImportFailed([ImportProblem(str(path), None, None, "no such file or directory")])
    if path.is_dir():
        if is_problem_folder(path):
            return "problem"
        if any(path.glob("[0-9]*_*.py")) and not any(path.glob("*.json")):
            return "kernelbench"  # a KernelBench level folder: services make its records (harness work)
        if any(path.glob("*.json")):
            return "bundles"
        reason = "a directory with neither definition.json nor *.json bundles"
        if is_trace_set(path):
            reason = "a FlashInfer-Bench trace set (definitions/, workloads/): import it with --from flashinfer"
        raise ImportFailed([ImportProblem(str(path), None, None, reason)])
    name = path.name
    if name.endswith(".jsonl.zst"):
        return "catalog"
    if name.endswith(".json"):
        return "bundles"
    if name.endswith(".jsonl"):
        with open(path, "rb") as f:  # the first non-blank line (blank lines are skipped by every reader)
            while (first := f.readline(MAX_LINE + 1)) and not first.strip():
                pass
        if len(first) > MAX_LINE:
            return "catalog"  # the catalog reader refuses the line, naming it
        try:  # the strict reader: a hostile first line (1,000 "[") is a refusal, not a RecursionError
            head = loads_strict(first) if first.strip() else None
        except ValueError:
            return "catalog"  # the catalog reader reports the bad line precisely
        if isinstance(head, dict) and "definition" in head and "evaluation" in head:
            return "traces"
        return "catalog"
    reason = "unknown file type: expected .jsonl.zst, .jsonl, .json or a directory"
    raise ImportFailed([ImportProblem(str(path), None, None, reason)])


def import_paths(
    store: Writable,
    paths: Iterable[Path],
    *,
    open_file: Callable | None = None,
    trace_links: TraceLinks | None = None,
    bad_lines: BadLines | None = None,
    blob_root: str | None = None,
) -> list[tuple[str, ImportReport]]:
    """Import each path in turn; stops at the first refused one. ``bad_lines`` (skip refused lines,
    or a dry run) applies to catalog files; every other kind is all-or-nothing.

    Trace files are linked to ``trace_links`` (`formats.records.trace_links(problem, solution)`)
    when given, so their runs name the workload and implementation they measured. A problem folder's
    safetensors inputs are found under ``blob_root`` (`formats.blobs.blob_root`), else in the folder.
    """
    reports = []
    for path in paths:
        kind = kind_of(path)
        if kind == "catalog":
            report = import_catalog(store, path, open_file=open_file, bad_lines=bad_lines or BadLines())
        elif kind == "bundles":
            report = import_bundles(store, [path])
        elif kind == "problem":
            from kernelindex.ingest.evaluations import import_problem_folder

            report = import_problem_folder(store, path, blob_root)
        elif kind == "kernelbench":
            from kernelindex.ingest.problems import ImportFailed, ImportProblem

            why = "a KernelBench level folder: `kernelindex import` makes its records (services.imports)"
            raise ImportFailed([ImportProblem(str(path), None, None, why)])
        else:
            from kernelindex.ingest.traces import import_traces  # trace lines, kept by the harness helper

            report = import_traces(store, path, links=trace_links)
        reports.append((kind, report))
    return reports
