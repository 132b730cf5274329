"""One slug rule: record names keep ``_`` and are cut at a limit; URL slugs join words with ``-``."""

from __future__ import annotations

from kernelindex.records.names import NAME_LIMIT, UPSTREAM_NAME_LIMIT, slug


def test_record_names():
    assert slug("  Vector Add (f32)!  ") == "vector-add-f32" and slug("!!!") == "unnamed"
    assert slug("042_MoE expert/bwd") == "042_moe-expert-bwd"
    assert slug("-._x._-") == "x"
    assert len(slug("x" * 500)) == NAME_LIMIT == 120
    assert len(slug("x" * 500, limit=UPSTREAM_NAME_LIMIT)) == 180
    assert slug(42) == "42"


def test_url_slugs_are_what_the_public_export_writes():
    assert slug("042_MoE expert/bwd", url=True) == "042-moe-expert-bwd"
    assert slug("v1.2_final", url=True) == "v1.2-final"
    assert slug("...", url=True) == "item"
    assert len(slug("x" * 500, url=True)) == 500  # never cut: a stored slug is the whole name
