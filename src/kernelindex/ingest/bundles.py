"""Importing run bundles: ``{run, protocol, environment}`` JSON files like the seed run pages.

A file holds one bundle or a JSON array of them; a directory stands for its ``*.json`` files.
All bundles given to one call go in one transaction: one refused bundle refuses them all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from kernelindex.ingest.catalog import ImportReport
from kernelindex.ingest.problems import ImportFailed, ImportProblem
from kernelindex.ingest.whole_files import read_whole
from kernelindex.records.strict_json import loads_strict
from kernelindex.store.database import Writable
from kernelindex.store.rows import RowError
from kernelindex.store.writer import Writer


def bundle_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    return files


def read_bundles(path: Path) -> Iterator[tuple[str, Any]]:
    """``(field prefix, bundle)`` for each bundle in one file; raises ImportFailed on bad JSON."""
    text = read_whole(path)
    if not text.strip():
        raise ImportFailed([ImportProblem(str(path), None, None, "the file is empty")])
    try:
        data = loads_strict(text)
    except json.JSONDecodeError as exc:
        raise ImportFailed(
            [ImportProblem(str(path), exc.lineno, None, f"malformed JSON: {exc.msg} (column {exc.colno})")]
        ) from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ImportFailed([ImportProblem(str(path), None, None, f"malformed JSON: {exc}")]) from exc
    if isinstance(data, list):
        yield from ((f"[{i}]", item) for i, item in enumerate(data))
    else:
        yield "", data


def import_bundles(store: Writable, paths: Iterable[Path]) -> ImportReport:
    files = bundle_files(paths)
    report = ImportReport(", ".join(map(str, files)))
    problems: list[ImportProblem] = []
    with store.begin() as conn:
        writer = Writer(conn)
        for path in files:
            try:
                bundles = list(read_bundles(path))
            except ImportFailed as exc:
                problems += exc.problems
                continue
            for prefix, bundle in bundles:
                report.lines += 1
                try:
                    writer.add_run_bundle(bundle)
                except RowError as exc:
                    field = exc.field.removeprefix("manifest.") if exc.field else None
                    problems.append(
                        ImportProblem(
                            str(path),
                            None,
                            f"{prefix}{'.' if prefix and field else ''}{field or ''}" or None,
                            exc.reason,
                        )
                    )
        if problems or writer.problems:
            problems += [ImportProblem(report.path, p.line, p.field, p.reason) for p in writer.problems]
            raise ImportFailed(problems)
        report.absorb(writer)
    return report
