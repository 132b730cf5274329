"""One table of GPU products: every product of the public catalog, and the ones traces name, get the
catalog's architecture; slugs, tokens and status words are normalised the same everywhere."""

from __future__ import annotations

import io
import json

import pytest
import zstandard

from kernelindex.records.kernel_kinds import RunStatus
from kernelindex.records.normalise import RUN_STATUSES, gpu_architecture, hardware_of, run_status, slug, token


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
    for model, vendor, architecture in sorted(stated):
        assert gpu_architecture(model) == (vendor, architecture), model


def test_statuses_are_run_statuses_and_names_are_clean():
    assert set(RUN_STATUSES.values()) <= set(RunStatus.__args__)
    assert run_status("REWARD_HACK") == "suspected_reward_hack" and run_status("SOMETHING") is None
    assert slug("  Vector Add (f32)!  ") == "vector-add-f32" and slug("!!!") == "unnamed"
    assert len(slug("x" * 500)) == 120
    assert token("CUDA-Toolkit 13") == "cuda_toolkit_13" and token("13cuda") == "x_13cuda"
