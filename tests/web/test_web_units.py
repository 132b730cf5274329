"""Pure pieces of the web layer: number formats, safe links, signed cursors, the SVG plot."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET

import pytest

from kernelindex.views.formatting import format_duration, format_sol, format_speedup, format_value, safe_url
from kernelindex.web.http.pagination import CURSOR_TTL_S, Cursors
from kernelindex.web.problems import Problem
from kernelindex.web.svg.group_plot import Point, group_svg


@pytest.mark.parametrize(
    "ns, text",
    [
        (317881, "317.9 µs"),
        (7702, "7.70 µs"),
        (7699, "7.70 µs"),
        (14150, "14.2 µs"),
        (999, "999.0 ns"),
        (999_960, "1.000 ms"),
        (2_500_000_000, "2.50 s"),
    ],
)
def test_durations(ns, text):
    assert format_duration(ns, "ns") == text


def test_other_formats():
    assert format_sol(0.918888) == "0.9189" and format_speedup(8.017) == "8.02×" and format_speedup(2.3349) == "2.33×"
    assert format_value(1.0048658277929109e-05, "s") == "10.0 µs" and format_value(3.5, "x") == "3.5 x"
    assert format_value(None, "ns") == "—"


@pytest.mark.parametrize(
    "url, ok",
    [
        ("https://a.example/x?y=1", True),
        ("http://a.example", True),
        ("javascript:alert(1)", False),
        ("JaVaScRiPt:alert(1)", False),
        (" javascript:alert(1)", False),
        ("data:text/html,<b>", False),
        ("//evil.example", False),
        ("https:///nohost", False),
        (None, False),
        ("ftp://a.example", False),
        ("http://[::1", False),
    ],
)
def test_only_http_links_survive(url, ok):
    assert (safe_url(url) is not None) == ok


def test_cursors_round_trip_and_refuse_tampering():
    issued = random.randrange(10**9, 2 * 10**9) + 0.5
    cursors = Cursors(b"k" * 32, clock=lambda: issued)
    token = cursors.encode("runs", 41)
    assert cursors.read("runs", token) == (41, int(issued) + CURSOR_TTL_S)
    with pytest.raises(Problem, match="belongs to the listing"):
        cursors.read("operations", token)
    with pytest.raises(Problem, match="signature"):
        Cursors(b"other").read("runs", token)
    flipped = token[:5] + ("A" if token[5] != "A" else "B") + token[6:]
    with pytest.raises(Problem):
        cursors.read("runs", flipped)


def test_plot_is_well_formed_escaped_svg():
    rng = random.Random()
    seed = rng.randrange(2**32)
    rng.seed(seed)
    values = [10 ** rng.uniform(3, 6) for _ in range(12)]
    values[0], values[1] = 10 ** rng.uniform(3, 3.3), 10 ** rng.uniform(5.7, 6)  # always spans > 20×
    points = [Point(label=f'<run {i}> & "x"', value=v, rank=i + 1) for i, v in enumerate(values)]
    points[3] = Point(label="with interval", value=5e4, low=4e4, high=6e4, rank=4)
    svg = group_svg(points, lambda v: f"{v:.0f} ns", "caption <b>")
    root = ET.fromstring(svg)  # parses: every label is escaped
    ns = "{http://www.w3.org/2000/svg}"
    assert root.get("role") == "img" and not root.findall(f".//{ns}a")  # no link inside an image (axe)
    assert len(root.findall(f".//{ns}circle")) == 12, seed
    assert "log scale" in svg  # values span three decades
    texts = [t.text for t in root.iter(f"{ns}text") if t.text]
    assert "#1" in texts and any(t.startswith("<run 0>") for t in texts)  # the rank has its own column
    assert "<script" not in svg and "style=" not in svg
    assert group_svg([], str, "empty") == ""


def _texts(svg: str):
    ns = "{http://www.w3.org/2000/svg}"
    return [
        (t.text, float(t.get("x")), float(t.get("y")), t.get("text-anchor"))
        for t in ET.fromstring(svg).iter(f"{ns}text")
        if t.text
    ]


def test_plot_linear_axis_starts_at_zero_and_nothing_is_clipped_or_overlapping():
    rng = random.Random(3)
    points = [Point(label="x" * rng.randrange(10, 80), value=1000 + 70 * i, rank=i + 1) for i in range(120)]
    svg = group_svg(points, lambda v: f"{v:.0f} ns", "caption")
    texts = _texts(svg)
    assert "linear scale from zero" in svg and ("0",) == tuple(t[0] for t in texts if t[0] == "0")
    ranks = [t for t in texts if t[0].startswith("#")]
    assert {t[0] for t in ranks} >= {"#1", "#100", "#120"} and all(t[1] >= 0 for t in ranks)
    labels = [t for t in texts if t[3] == "end"]
    # each right-aligned label fits between the rank column (~30 px) and its anchor (about 6.5 px a character)
    assert all(t[1] - 6.5 * len(t[0]) >= 30 for t in labels)
    ticks = [t for t in texts if t[3] == "middle"]
    note = next(t for t in texts if "scale" in t[0])
    assert all(note[2] - tick[2] >= 10 for tick in ticks)  # the scale note sits below the tick labels


def test_sweep_chart_axes_legend_and_escaping():
    from kernelindex.web.svg.sweep import Series, sweep_svg

    series = [
        Series("<b>fast</b>", ((2048, 7000.0), (4096, 9000.0), (65536, 90000.0))),
        Series("slow & steady", ((2048, 14000.0), (4096, 18000.0))),
    ]
    svg = sweep_svg(series, lambda v: f"{v / 1000:.1f} µs", "batch_seq_len", "best latency")
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f"{ns}path")) == 2 and len(root.findall(f"{ns}circle")) == 5
    assert "&lt;b&gt;fast&lt;/b&gt;" in svg and "<b>" not in svg and "<script" not in svg
    assert "batch_seq_len (log size axis)" in svg  # sizes span 32×, values less than 20×: value axis from zero
    texts = _texts(svg)
    assert any(t[0] == "0" for t in texts)
    assert sweep_svg([Series("one size", ((1, 2.0),))], str, "N", "c") == ""
