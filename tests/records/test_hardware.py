"""One table of GPU products: every product of the public catalog, and the ones traces and
leaderboards name, get the catalog's architecture, whichever importer brought them in."""

from __future__ import annotations

import io
import json

import pytest
import zstandard

from kernelindex.records.hardware import architecture, gpu_architecture, hardware_of, vendor


@pytest.mark.parametrize(
    ("product", "expected"),
    [
        ("NVIDIA H20", ("nvidia", "sm_90")),
        ("NVIDIA L4", ("nvidia", "sm_89")),
        ("NVIDIA GeForce RTX 4090", ("nvidia", "sm_89")),
        ("NVIDIA H200", ("nvidia", "sm_90")),
        ("NVIDIA L40S", ("nvidia", "sm_89")),
        ("NVIDIA GB200", ("nvidia", "sm_100")),
        ("NVIDIA A10G", ("nvidia", "sm_86")),
        ("NVIDIA A100-SXM4-80GB", ("nvidia", "sm_80")),
        ("AMD Instinct MI300X", ("amd", "gfx942")),
        ("AMD Instinct MI355X", ("amd", "gfx950")),
    ],
)
def test_products_traces_name(product, expected):
    assert gpu_architecture(product) == expected
    assert hardware_of(product) == {"vendor": expected[0], "product": product, "architecture": expected[1]}


def test_unknown_products_say_so():
    assert gpu_architecture("Intel(R) Xeon(R) Platinum") is None
    assert hardware_of("Intel(R) Xeon(R) Platinum")["architecture"] == "unknown"
    assert hardware_of("NVIDIA Quadro Future 9000") == {
        "vendor": "nvidia",
        "product": "NVIDIA Quadro Future 9000",
        "architecture": "unknown",
    }


def test_every_product_of_the_public_catalog(catalog_path):
    stated = set()
    with open(catalog_path, "rb") as raw:
        for line in io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw), encoding="utf-8"):
            item = json.loads(line)
            if item["table"] == "benchmark_runs":
                row = item["row"]
                stated.add((row["hardwareModel"], row["hardwareVendor"], row["hardwareArchitecture"]))
    assert len(stated) >= 5
    for model, stated_vendor, stated_architecture in sorted(stated):
        assert gpu_architecture(model) == (stated_vendor, stated_architecture), model


@pytest.mark.parametrize(
    ("product", "expected_vendor", "expected"),
    [
        # the leaderboards' names the importers' own table lacked (they came out `unknown`)
        ("L4", "nvidia", "sm_89"),
        ("B300", "nvidia", "sm_103"),
        ("NVIDIA GeForce RTX 5090", "nvidia", "sm_120"),
        # names only that table knew, which keep their architecture
        ("4090", "nvidia", "sm_89"),
        ("MI300", "amd", "gfx942"),
        ("MI325", "amd", "gfx942"),
        ("MI355", "amd", "gfx950"),
        ("MI308X", "amd", "unknown"),
        ("TPU v5e", "unknown", "unknown"),
    ],
)
def test_importers_names(product, expected_vendor, expected):
    assert architecture(product) == expected
    assert vendor(product) == expected_vendor
