"""Exact match or bracketing: which measured cases answer a query that pins workload axes.

When a case with every pinned axis value exists among the candidates, it is the answer. When none
does, for each pinned numeric axis the answer is the nearest candidate below and the nearest above
on that axis, chosen among the candidates that match every *other* pinned axis (or among all of
them when none does). The candidates are already filtered (GPU, dtype, evidence, source) by the
caller, so a neighbour is always a case that has runs the reader asked for.

Pure: cases are plain :class:`Case` values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    key: str  # the workload id (or any identifier the caller wants back)
    axes: Mapping[str, object]


@dataclass(frozen=True)
class Neighbour:
    axis: str
    side: str  # "below" or "above"
    case: Case
    distance: float


@dataclass(frozen=True)
class Bracket:
    exact: tuple[Case, ...]
    neighbours: tuple[Neighbour, ...]


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _same(a: object, b: object) -> bool:
    na, nb = _num(a), _num(b)
    if na is not None and nb is not None:
        return na == nb
    return str(a).lower() == str(b).lower()


def bracket(pins: Mapping[str, object], cases: Sequence[Case]) -> Bracket:
    """Cases with every pinned value, or else the nearest on each side of every differing numeric axis."""
    exact = tuple(c for c in cases if all(name in c.axes and _same(c.axes[name], v) for name, v in pins.items()))
    if exact or not pins:
        return Bracket(exact, ())
    neighbours: list[Neighbour] = []
    for name, wanted in pins.items():
        target = _num(wanted)
        if target is None:
            continue
        others = {n: v for n, v in pins.items() if n != name}
        pool = [(c, value) for c in cases if (value := _num(c.axes.get(name))) is not None]
        agreeing = [(c, x) for c, x in pool if all(n in c.axes and _same(c.axes[n], v) for n, v in others.items())]
        pool = agreeing or pool
        below = sorted(((c, x) for c, x in pool if x < target), key=lambda cx: cx[0].key)
        above = sorted(((c, x) for c, x in pool if x > target), key=lambda cx: cx[0].key)
        if below:
            top = max(x for _, x in below)
            neighbours += [Neighbour(name, "below", c, target - top) for c, x in below if x == top]
        if above:
            low = min(x for _, x in above)
            neighbours += [Neighbour(name, "above", c, low - target) for c, x in above if x == low]
    return Bracket((), tuple(neighbours))
