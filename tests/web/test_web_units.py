"""Pure pieces of the web layer: number formats, safe links, signed cursors, the SVG plot."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET

import pytest

from kernelindex.web.formatting import format_duration, format_sol, format_speedup, format_value, safe_url
from kernelindex.web.pagination import Cursors
from kernelindex.web.plot import Point, group_svg
from kernelindex.web.problems import Problem


@pytest.mark.parametrize("ns, text", [(317881, "317.9 µs"), (7702, "7.70 µs"), (7699, "7.70 µs"),
                                      (14150, "14.2 µs"), (999, "999.0 ns"), (999_960, "1.000 ms"),
                                      (2_500_000_000, "2.50 s")])
def test_durations(ns, text):
    assert format_duration(ns, "ns") == text


def test_other_formats():
    assert format_sol(0.918888) == "0.9189" and format_speedup(8.017) == "8.02×" and format_speedup(2.3349) == "2.33×"
    assert format_value(1.0048658277929109e-05, "s") == "10.0 µs" and format_value(3.5, "x") == "3.5 x"
    assert format_value(None, "ns") == "—"


@pytest.mark.parametrize("url, ok", [("https://a.example/x?y=1", True), ("http://a.example", True),
                                     ("javascript:alert(1)", False), ("JaVaScRiPt:alert(1)", False),
                                     (" javascript:alert(1)", False), ("data:text/html,<b>", False),
                                     ("//evil.example", False), ("https:///nohost", False), (None, False),
                                     ("ftp://a.example", False), ("http://[::1", False)])
def test_only_http_links_survive(url, ok):
    assert (safe_url(url) is not None) == ok


def test_cursors_round_trip_and_refuse_tampering():
    cursors = Cursors(b"k" * 32)
    token = cursors.encode("runs", 41)
    assert cursors.decode("runs", token) == 41
    with pytest.raises(Problem, match="belongs to the listing"):
        cursors.decode("operations", token)
    with pytest.raises(Problem, match="signature"):
        Cursors(b"other").decode("runs", token)
    flipped = token[:5] + ("A" if token[5] != "A" else "B") + token[6:]
    with pytest.raises(Problem):
        cursors.decode("runs", flipped)


def test_plot_is_well_formed_escaped_svg():
    rng = random.Random()
    seed = rng.randrange(2**32)
    rng.seed(seed)
    points = [Point(label=f"<run {i}> & \"x\"", value=rng.uniform(1e3, 1e6), rank=i + 1, href=f"/runs/{i}?a=1&b=2")
              for i in range(12)]
    points[3] = Point(label="with interval", value=5e4, low=4e4, high=6e4, rank=4)
    svg = group_svg(points, lambda v: f"{v:.0f} ns", "caption <b>")
    root = ET.fromstring(svg)  # parses: every label and link is escaped
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f".//{ns}circle")) == 12, seed
    assert "log scale" in svg  # values span three decades
    texts = [t.text for t in root.iter(f"{ns}text") if t.text]
    assert any(t.startswith("#1 <run 0>") for t in texts)
    assert "<script" not in svg and "style=" not in svg
    assert group_svg([], str, "empty") == ""
