"""Bracketing: the exact case, or the nearest on each side of every differing numeric axis."""

from __future__ import annotations

import random

from kernelindex.search.bracketing import Case, bracket


def cases(*axes):
    return [Case(f"c{i}", a) for i, a in enumerate(axes)]


def test_exact_case_wins():
    found = bracket({"N": 256}, cases({"N": 128}, {"N": 256}, {"N": 512}))
    assert [c.key for c in found.exact] == ["c1"] and found.neighbours == ()


def test_nearest_below_and_above_on_the_differing_axis():
    found = bracket({"N": 300}, cases({"N": 64}, {"N": 296}, {"N": 336}, {"N": 2048}))
    assert [(n.side, n.case.key, n.distance) for n in found.neighbours] == [("below", "c1", 4.0), ("above", "c2", 36.0)]


def test_neighbours_agree_on_the_other_pinned_axes_when_they_can():
    pool = cases({"B": 512, "N": 64}, {"B": 4096, "N": 256}, {"B": 4096, "N": 2048}, {"B": 512, "N": 256})
    found = bracket({"B": 4096, "N": 300}, pool)
    by_axis = {(n.axis, n.side): n.case.key for n in found.neighbours}
    assert by_axis[("N", "below")] == "c1" and by_axis[("N", "above")] == "c2"
    # on B, the neighbour must have N=300: none does, so any case with a B value counts
    assert by_axis[("B", "below")] in {"c0", "c3"}


def test_one_side_only_at_the_edge_and_nothing_for_text_axes():
    found = bracket({"N": 5000, "layout": "nhwc"}, cases({"N": 64, "layout": "nchw"}, {"N": 4096, "layout": "nchw"}))
    assert [(n.axis, n.side, n.case.key) for n in found.neighbours] == [("N", "below", "c1")]


def test_filters_before_neighbours():
    """The caller filters first (e.g. only H200 runs): a closer case measured only elsewhere is never a neighbour."""
    rng = random.Random(7)
    measured_on = {f"c{i}": rng.choice(["H200", "B200"]) for i in range(40)}
    pool = [Case(k, {"N": int(k[1:]) * 10}) for k in measured_on]
    h200 = [c for c in pool if measured_on[c.key] == "H200"]
    found = bracket({"N": 205}, h200)
    assert found.neighbours and all(measured_on[n.case.key] == "H200" for n in found.neighbours)
    below = max(c.axes["N"] for c in h200 if c.axes["N"] < 205)
    assert next(n for n in found.neighbours if n.side == "below").case.axes["N"] == below


def test_ties_at_the_same_distance_are_all_kept():
    found = bracket({"N": 100}, cases({"N": 50, "B": 1}, {"N": 50, "B": 2}, {"N": 150}))
    assert sorted(n.case.key for n in found.neighbours if n.side == "below") == ["c0", "c1"]
