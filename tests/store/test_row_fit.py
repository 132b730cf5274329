"""Whether a row's values fit their columns, decided before any driver sees them: SQLite would store
an over-long string or a huge integer that PostgreSQL refuses, so both refuse them here alike."""

from __future__ import annotations

import random
import sys
import time

from sqlalchemy import JSON

from kernelindex.store.writer import SPECS, row_problem

SEED = time.time_ns() % 2**32


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _fitting(rng: random.Random, kind: type, limit: int | None):
    if kind is str:
        return "".join(rng.choice("ab·é-") for _ in range(rng.randrange(0, min(limit or 500, 500) + 1)))
    if kind is bool:
        return rng.choice([True, False])
    if kind is int:
        return rng.choice([0, rng.randrange(-(2**63), 2**63), 2**63 - 1, -(2**63)])
    if kind is float:
        return rng.choice([rng.uniform(-1e300, 1e300), rng.randrange(-(10**12), 10**12), sys.float_info.max])
    return kind()


def _misfits(kind: type, limit: int | None) -> list[tuple[object, str]]:
    if kind is str:
        wrong: list[tuple[object, str]] = [(12, "expected a string"), (["x"], "expected a string")]
        return wrong + ([("x" * (limit + 1), f"longer than {limit} characters")] if limit else [])
    if kind is int:
        return [(2**63, "expected a 64-bit integer"), (True, "expected a 64-bit integer"), (1.5, "expected a 64-bit")]
    if kind is float:
        return [(float("nan"), "expected a finite number"), (10**400, "expected a finite number"), ("1", "expected")]
    if kind is bool:
        return [(1, "expected true or false")]
    return [("text", "expected")]


def test_each_column_takes_what_fits_and_names_itself_when_a_value_does_not():
    rng = random.Random(SEED)
    for name, spec in SPECS.items():
        parts = {"protocol_row": {}, "environment_row": {}} if name == "runs" else {}
        columns = [c for c in spec.table.c if not isinstance(c.type, JSON)]
        row = {c.name: _fitting(rng, c.type.python_type, getattr(c.type, "length", None)) for c in columns}
        assert row_problem(name, {**row, **parts}) is None, (SEED, name, row)
        for column in columns:
            for value, reason in _misfits(column.type.python_type, getattr(column.type, "length", None)):
                problem = row_problem(name, {**row, column.name: value, **parts})
                assert problem is not None, (SEED, name, column.name, value)
                assert problem[0] == _camel(column.name) and reason in problem[1], (SEED, name, problem)


def test_a_run_s_protocol_and_environment_rows_are_checked_too():
    rng = random.Random(SEED)
    part = rng.choice(["protocol", "environment"])
    rows = {"protocol_row": {}, "environment_row": {}, f"{part}_row": {"name": "n" * 301}}
    assert row_problem("runs", rows) == (f"{part}.name", f"longer than 300 characters: {'n' * 40!r}…")
