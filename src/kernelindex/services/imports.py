"""Importing files (catalogs, run bundles, problem folders, trace files) with the leader changes they cause."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from kernelindex.formats.errors import FormatError
from kernelindex.formats.records import trace_links
from kernelindex.harness.kernelbench import folder_records as kernelbench_records
from kernelindex.harness.kernelbench import records_by_name as kernelbench_records_by_name
from kernelindex.ingest.catalog import BadLines, ImportReport
from kernelindex.ingest.evaluations import store_problem_records
from kernelindex.ingest.paths import import_paths as import_each
from kernelindex.ingest.paths import kind_of
from kernelindex.ingest.problems import ImportFailed, ImportProblem
from kernelindex.ingest.upstream.common import UpstreamError
from kernelindex.ingest.upstream.dispatch import detect, import_upstream
from kernelindex.ingest.upstream.kernelbench import baseline_names
from kernelindex.ranking.history import LeaderEvent
from kernelindex.ranking.leaders import record_leader_changes
from kernelindex.store.database import JoinedStore, Store


@dataclass(frozen=True)
class Imported:
    reports: list[tuple[str, ImportReport]]  # (kind, report) per path, in order
    leader_events: list[LeaderEvent]


def import_paths(
    store: Store,
    paths: Iterable[Path],
    *,
    open_file: Callable | None = None,
    trace_problem: Path | None = None,
    trace_solution: Path | None = None,
    bad_lines: BadLines | None = None,
    blob_root: str | None = None,
) -> Imported:
    """Every path, then the leader changes they cause, in one transaction: all stored, or (on any
    refused file, raised as ``ImportFailed``) nothing. ``blob_root``: where problem folders'
    safetensors inputs are (`formats.blobs`)."""
    paths = list(paths)
    for path in paths:
        kind_of(path)  # refuse a bad path before anything is read
    try:
        links = trace_links(trace_problem, trace_solution, blob_root) if trace_problem else None
        # a KernelBench level folder's shapes come from running each file's Model on the meta device in
        # a child process (the harness's work), so its records are made before the transaction opens
        levels = {path: kernelbench_records(path) for path in paths if kind_of(path) == "kernelbench"}
    except FormatError as exc:
        raise ImportFailed([ImportProblem(exc.file, exc.line, exc.field, exc.reason)]) from None
    except ValueError as exc:
        raise ImportFailed([ImportProblem(str(path), None, None, str(exc))]) from None
    with store.begin(bulk=True) as conn:
        reports = [("kernelbench", store_problem_records(conn, records, str(p))) for p, records in levels.items()]
        reports += import_each(
            JoinedStore(conn),
            [path for path in paths if path not in levels],
            open_file=open_file,
            trace_links=links,
            bad_lines=bad_lines,
            blob_root=blob_root,
        )
        checking = bad_lines is not None and bad_lines.check
        return Imported(reports, [] if checking else record_leader_changes(conn))


def import_upstream_paths(
    store: Store, source: str | None, paths: Iterable[Path], *, check: bool = False, problems: Path | None = None
) -> Imported:
    """Upstream's own files (``import --from``; ``source`` None: told by content), then the leader
    changes they cause, in one transaction: all stored, or (on any refused path) nothing. ``check``
    reads and validates only. ``problems``: a KernelBench/ (or level) folder whose problem files the
    baselines timed: they are linked to the operations and workloads `import KernelBench/levelN` makes."""
    paths = list(paths)
    linked = {path: _kernelbench_problems(problems, source, path) for path in paths} if problems is not None else {}
    with store.begin(bulk=True) as conn:
        joined = JoinedStore(conn)
        reports = [
            (
                f"upstream:{source or 'auto'}",
                import_upstream(joined, source, path, check=check, problems=linked.get(path)),
            )
            for path in paths
        ]
        return Imported(reports, [] if check else record_leader_changes(conn))


def _kernelbench_problems(folder: Path, source: str | None, baselines: Path) -> dict[str, list[dict]] | None:
    """The records of the problem files under ``folder`` that the baselines under ``baselines`` time
    (made before the transaction opens: each file's shapes come from a child process, harness work)."""
    if not baselines.exists():
        return None  # refused by name when imported
    if (source or detect(baselines)) != "kernelbench":
        reason = "names the KernelBench problem files that baselines timed; this is no --from kernelbench import"
        raise ImportFailed([ImportProblem(str(baselines), None, "--problem", reason)])
    if not folder.is_dir():
        raise ImportFailed([ImportProblem(str(folder), None, "--problem", "is not a KernelBench folder")])
    try:
        return kernelbench_records_by_name(folder, baseline_names(baselines))
    except UpstreamError as exc:
        raise ImportFailed([exc.problem]) from None
    except FormatError as exc:
        raise ImportFailed([ImportProblem(exc.file, exc.line, exc.field, exc.reason)]) from None
    except ValueError as exc:
        raise ImportFailed([ImportProblem(str(folder), None, None, str(exc))]) from None
