"""The shared words: each spelled once, equal to the stored words, and the schema's Literal agrees."""

from __future__ import annotations

from typing import get_args

import pytest

from kernelindex.records.kernel_kinds import RunStatusWord
from kernelindex.records.serving_keys import SERVING_METRICS, metric_direction, serving_direction
from kernelindex.records.serving_kinds import ServingRunSpec
from kernelindex.records.vocabulary import (
    CONTROLLED,
    HARNESS_SOURCE,
    Direction,
    EvidenceLevel,
    RunStatus,
    ServingStatus,
    is_harness_source,
)


def test_run_statuses_are_the_schemas_words():
    assert [status.value for status in RunStatus] == list(get_args(RunStatusWord))
    assert all(status.name == status.value.upper() for status in RunStatus)  # harness's Verdict names
    assert RunStatus.PASSED == "passed" and f"{RunStatus.TIMEOUT}" == "timeout"


def test_serving_statuses_are_the_schemas_words():
    field = ServingRunSpec.model_fields["status"].annotation
    assert {status.value for status in ServingStatus} == set(get_args(field))


def test_evidence_levels_are_ordered():
    assert list(EvidenceLevel) == ["reported", "reproducible", "verified", "replicated"]
    assert EvidenceLevel.REPORTED < EvidenceLevel.REPRODUCIBLE < EvidenceLevel.VERIFIED < EvidenceLevel.REPLICATED
    assert EvidenceLevel.VERIFIED >= "verified" and EvidenceLevel.VERIFIED > "reproducible"
    assert EvidenceLevel.REPORTED <= "replicated" and not EvidenceLevel.REPLICATED < "reported"
    assert max(map(EvidenceLevel, ["verified", "reported", "reproducible"])) == "verified"
    assert [level.rank for level in EvidenceLevel] == [0, 1, 2, 3]
    assert EvidenceLevel.named("replicated") is EvidenceLevel.REPLICATED and EvidenceLevel.named("great") is None
    with pytest.raises(ValueError):
        _ = EvidenceLevel.VERIFIED < "great"
    with pytest.raises(TypeError):
        _ = EvidenceLevel.VERIFIED < 2


def test_one_direction_two_spellings():
    assert Direction.LOWER.extremum == "min" and Direction.HIGHER.extremum == "max"
    assert serving_direction("ttft_ms") is Direction.LOWER and serving_direction("goodput") is Direction.HIGHER
    assert metric_direction("goodput") == "max" and metric_direction("nothing") is None
    assert {direction for _, direction in SERVING_METRICS.values()} == set(Direction)


@pytest.mark.parametrize(
    ("slug", "kind", "expected"),
    [
        (HARNESS_SOURCE, None, True),
        (HARNESS_SOURCE, CONTROLLED, True),
        ("elsewhere", CONTROLLED, True),
        ("kernelindex-harness-unsandboxed", "unsandboxed_rerun", False),
        ("gpumode", "leaderboard", False),
        (None, None, False),
    ],
)
def test_one_rule_for_harness_runs(slug, kind, expected):
    assert is_harness_source(slug, kind) is expected
