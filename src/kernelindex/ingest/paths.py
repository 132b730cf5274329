"""``kernelindex import PATH...``: decide what each path is and hand it to the right importer."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kernelindex.ingest.bundles import import_bundles
from kernelindex.ingest.catalog import BadLines, ImportReport, import_catalog
from kernelindex.ingest.jsonlines import MAX_LINE
from kernelindex.ingest.problems import ImportFailed, ImportProblem
from kernelindex.store.database import Writable


def kind_of(path: Path) -> str:
    """catalog, bundles, problem or traces (raises ImportFailed for anything else)."""
    if not path.exists():
        raise ImportFailed([ImportProblem(str(path), None, None, "no such file or directory")])
    if path.is_dir():
        if (path / "definition.json").is_file():
            return "problem"
        if any(path.glob("[0-9]*_*.py")) and not any(path.glob("*.json")):
            return "problem"  # a KernelBench level folder: the problem reader takes its files
        if any(path.glob("*.json")):
            return "bundles"
        reason = "a directory with neither definition.json nor *.json bundles"
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
        try:
            head = json.loads(first) if first.strip() else None
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
    trace_links: Any | None = None,
    problem_records: Callable | None = None,
    bad_lines: BadLines | None = None,
) -> list[tuple[str, ImportReport]]:
    """Import each path in turn; stops at the first refused one. ``bad_lines`` (skip refused lines,
    or a dry run) applies to catalog files; every other kind is all-or-nothing.

    Trace files are linked to ``trace_links`` (the harness's `trace_links(problem, solution)`) when
    given, so their runs name the workload and implementation they measured. Problem folders are
    read by ``problem_records(path)`` (the harness's reader, passed in by the caller): ingest does
    not import the harness.
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

            if problem_records is None:
                raise ImportFailed(
                    [ImportProblem(str(path), None, None, "problem folders need a problem reader (problem_records)")]
                )
            report = import_problem_folder(store, path, problem_records)
        else:
            from kernelindex.ingest.traces import import_traces  # trace lines, kept by the harness helper

            report = import_traces(store, path, links=trace_links)
        reports.append((kind, report))
    return reports
