"""Every manifest of the real public export parses, round-trips and keeps its published digest."""

from __future__ import annotations

import io
import json
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import zstandard
from jsonschema import Draft202012Validator

import kernelindex
from kernelindex.records.canonical import canonical_json
from kernelindex.records.models import dump_record, parse_record, record_digest

SEED = random.randrange(2**32)

# table -> column holding the manifest's digest (projects publish none)
DIGEST_COLUMNS = {
    "projects": None,
    "operations": "semanticDigest",
    "workloads": "workloadDigest",
    "implementations": "implementationDigest",
}
RUN_PARTS = {"run": "runDigest", "protocol": "protocolKey", "environment": "environmentKey"}


def manifests(catalog_path: Path) -> Iterator[tuple[str, dict[str, Any], str | None]]:
    """(where, record, published digest) for every manifest, streaming the zstd export."""
    with catalog_path.open("rb") as raw:
        lines = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw), encoding="utf-8")
        for number, line in enumerate(lines, 1):
            entry = json.loads(line)
            table, row = entry["table"], entry["row"]
            where = f"{catalog_path.name} line {number}"
            if table in DIGEST_COLUMNS:
                column = DIGEST_COLUMNS[table]
                yield where, row["manifest"], row[column] if column else None
            elif table == "benchmark_runs":
                assert set(row["manifest"]) == set(RUN_PARTS), where
                for part, column in RUN_PARTS.items():
                    yield f"{where} ({part})", row["manifest"][part], row[column]


def test_whole_export_parses_round_trips_and_matches_published_digests(catalog_path: Path) -> None:
    kinds: Counter[str] = Counter()
    mismatched, changed, compared = [], [], 0
    for where, data, published in manifests(catalog_path):
        record = parse_record(data, where=where)
        kinds[record.kind] += 1
        if canonical_json(dump_record(record)) != canonical_json(data):
            changed.append(where)
        if published is not None:
            compared += 1
            if record_digest(record) != published:
                mismatched.append(where)
    print(f"records={sum(kinds.values())} digests compared={compared} mismatches={len(mismatched)} {dict(kinds)}")
    assert kinds["BenchmarkRun"] == kinds["BenchmarkProtocol"] == kinds["ExecutionEnvironment"] == 5920
    assert kinds["ImplementationRevision"] == 4135 and kinds["WorkloadCase"] + kinds["WorkloadSuite"] == 4202
    assert compared == sum(kinds.values()) - kinds["SoftwareProject"]
    assert mismatched == [], mismatched[:5]
    assert changed == [], changed[:5]


def test_sampled_dumps_validate_against_the_published_schemas(catalog_path: Path, registry_dir: Path) -> None:
    print(f"seed={SEED}")
    validators = {}
    for path in (registry_dir / "schemas").glob("*.schema.json"):
        schema = json.loads(path.read_text(encoding="utf-8"))
        validators[schema["title"]] = Draft202012Validator(schema)
    rng = random.Random(SEED)
    sampled: Counter[str] = Counter()
    for where, data, _ in manifests(catalog_path):
        if rng.random() < 0.012:
            record = parse_record(data, where=where)
            errors = list(validators[record.kind].iter_errors(dump_record(record)))
            assert not errors, f"seed={SEED} {where}: {errors[0].message}"
            sampled[record.kind] += 1
    assert sum(sampled.values()) > 200, sampled


SAMPLE_DIR = Path(kernelindex.__file__).parent / "sample"
SEED_RUNS = {
    "sol-009-sf-tensor-submission-4273.json": ("sha256:149b7c1a", "f41e"),
    "sol-042-ac4k-submission-19969.json": ("sha256:deb0ae25", "8bc6"),
}


def _check_seed_bundles(folder: Path) -> None:
    for name, (head, tail) in SEED_RUNS.items():
        bundle = json.loads((folder / name).read_text(encoding="utf-8"))
        run = parse_record(bundle["run"], where=f"{name} run")
        assert record_digest(run).startswith(head) and record_digest(run).endswith(tail)
        protocol = parse_record(bundle["protocol"], where=f"{name} protocol")
        environment = parse_record(bundle["environment"], where=f"{name} environment")
        assert run.spec.protocolDigest == record_digest(protocol)
        assert run.spec.environmentDigest == record_digest(environment)


def test_packaged_seed_runs_keep_their_digests() -> None:
    _check_seed_bundles(SAMPLE_DIR)


def test_shared_seed_runs_keep_their_digests(seeds_dir: Path) -> None:
    _check_seed_bundles(seeds_dir)
