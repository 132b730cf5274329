"""The validate-only path (``check``) passes exactly what the models pass.

``records.validation.check`` first tries a validator made from each model's own schema with every
model read as a plain dict (no objects built), and hands anything it refuses to the model. Were
that validator laxer than the model, an importer would store what the model refuses: so both are
run on every sample record of every kind and on thousands of seeded random changes of them (a
field dropped, nulled, given a value of another type, out of range or too long, an unknown field
added), and must agree on each.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from pydantic import ValidationError
from records_testkit import all_fixtures

from kernelindex.records.attestation import Attestation
from kernelindex.records.errors import RecordError
from kernelindex.records.models import KINDS, check_kind, parse_record
from kernelindex.records.validation import dict_checker

# values put where a record holds another: each kind of wrong a submitter (or a broken exporter) writes
ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 7, 1.5, -2.5, 2**53, 2**60, 1e300, "", "x", "x" * 3000, "8.1 us", "1.0 ms",
    "sha256:" + "a" * 64, "sha256:" + "A" * 64, "2026-05-27T05:56:21.957Z", "2026-05-27T05:56:21+02:00",
    [], [1], ["x"], {}, {"unknown": 1}, {"name": "x"},
]  # fmt: skip


def _samples() -> list[dict[str, Any]]:
    records = list(all_fixtures().values())
    from serving_kit import serving_lines

    for line in serving_lines(seed=5):
        manifest = line["row"].get("manifest")
        parts = manifest.values() if isinstance(manifest, dict) and "kind" not in manifest else [manifest]
        records += [part for part in parts if isinstance(part, dict) and part.get("kind") in KINDS]
    return records


SAMPLES = _samples()
SEED = random.randrange(2**32)  # fresh each run; failures name it to replay them


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in ``value`` (a dict key or a list index), outermost first."""
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found.append((*path, key))
        found += _paths(child, (*path, key))
    return found


def _mutated(record: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    result = copy.deepcopy(record)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        places = _paths(result)
        *parents, last = rng.choice(places)
        target: Any = result
        for step in parents:
            target = target[step]
        roll = rng.random()
        if roll < 0.15 and isinstance(target, dict):
            del target[last]
        elif roll < 0.25 and isinstance(target, dict):
            # a copy: the shared value itself, changed later, could come to hold itself (endless recursion)
            target[f"unknown{rng.randrange(3)}"] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif roll < 0.35:  # a value taken from elsewhere in a record: right type, wrong place
            donor = rng.choice(SAMPLES)
            *dp, dl = rng.choice(_paths(donor))
            source: Any = donor
            for step in dp:
                source = source[step]
            target[last] = copy.deepcopy(source[dl])
        else:
            target[last] = copy.deepcopy(rng.choice(ODD_VALUES))
    return result


def _verdict(validate, record) -> bool:
    try:
        validate(record)
    except ValidationError:
        return False
    return True


def test_every_kind_of_ours_has_the_fast_checker_and_a_model_level_validator_keeps_the_model():
    assert {s["kind"] for s in SAMPLES} >= {"BenchmarkRun", "WorkloadCase", "ImplementationRevision", "ServingRun"}
    missing = [kind for kind, model in KINDS.items() if model is not Attestation and dict_checker(model) is None]
    assert missing == []
    # an attestation's model validator needs the object: it is never checked as a dict
    assert dict_checker(Attestation) is None


@pytest.mark.parametrize("index", range(len(SAMPLES)), ids=lambda i: f"{SAMPLES[i]['kind']}-{i}")
def test_samples_pass_both_and_changed_samples_get_one_verdict(index):
    record = SAMPLES[index]
    model = KINDS[record["kind"]]
    checker = dict_checker(model)
    assert checker is not None
    assert _verdict(checker.validate_python, record) and _verdict(model.model_validate, record)
    rng = random.Random(SEED + index)
    refused = 0
    for _ in range(300):
        changed = _mutated(record, rng)
        model_says = _verdict(model.model_validate, changed)
        assert _verdict(checker.validate_python, changed) == model_says, (f"seed={SEED}", changed)
        refused += not model_says
    assert refused > 150  # the changes do reach what the model refuses


def test_check_names_the_same_problems_as_the_model():
    rng = random.Random(SEED)
    for _ in range(200):
        changed = _mutated(rng.choice(SAMPLES), rng)
        try:
            parse_record(changed, where="x")
            expected = None
        except RecordError as exc:
            expected = exc.problems
        try:
            check_kind(changed, where="x")
            got = None
        except RecordError as exc:
            got = exc.problems
        assert got == expected, f"seed={SEED}"
