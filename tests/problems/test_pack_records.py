"""The packs as KernelIndex records: valid OperationSpec / WorkloadCase / WorkloadSuite, and the
OperationSpec digests equal those of the upstream operations in the public catalog, so the seed runs
and our own runs meet on the same operation."""

from __future__ import annotations

import io
import json

import pytest
import zstandard

from kernelindex.formats.records import problem_records
from kernelindex.problems import LOAD_BALANCE_BWD, TOKEN_SCATTER_BWD
from kernelindex.records.canonical import digest

PACKS = {
    TOKEN_SCATTER_BWD: "009_expert_token_scatter_with_weighted_forward_backward",
    LOAD_BALANCE_BWD: "042_moe_expert_load_balancing_and_token_capacity_backward",
}


@pytest.mark.parametrize("pack", list(PACKS), ids=lambda p: p.name)
def test_problem_records_are_valid_and_linked(pack):
    records = problem_records(pack)
    kinds = [r["kind"] for r in records]
    assert kinds == ["OperationSpec"] + ["WorkloadCase"] * 16 + ["WorkloadSuite"]
    operation, cases, suite = records[0], records[1:-1], records[-1]
    op_digest = digest(operation)
    assert all(r["apiVersion"] == "kernelindex.dev/v1alpha1" for r in records)
    assert all(c["spec"]["operationSpecDigest"] == op_digest for c in cases)
    assert suite["spec"]["operationSpecDigest"] == op_digest
    uuids = [line["uuid"] for line in map(json.loads, (pack / "workload.jsonl").read_text().splitlines())]
    assert [c["externalId"] for c in suite["spec"]["cases"]] == uuids
    assert len({digest(c) for c in cases}) == 16, "every case is its own workload"
    tolerances = {c["spec"]["correctness"]["maxAbsoluteError"] for c in cases}
    assert tolerances == {
        json.loads(line)["tolerance"]["max_atol"] for line in (pack / "workload.jsonl").read_text().splitlines()
    }


def test_operation_digests_equal_the_upstream_catalog(catalog_path):
    wanted = {name: digest(problem_records(pack)[0]) for pack, name in PACKS.items()}
    found = {}
    with open(catalog_path, "rb") as raw:
        for line in io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw), encoding="utf-8"):
            if '"operations"' in line[:40]:
                entry = json.loads(line)
                if entry["table"] == "operations" and entry["row"]["name"] in wanted:
                    found[entry["row"]["name"]] = entry["row"]["semanticDigest"]
            if len(found) == len(wanted):
                break
    assert found == wanted


@pytest.mark.parametrize("pack", list(PACKS), ids=lambda p: p.name)
def test_problem_records_validate_against_the_published_schemas(pack, registry_dir):
    import jsonschema

    files = {"OperationSpec": "operation-spec", "WorkloadCase": "workload-case", "WorkloadSuite": "workload-suite"}
    for record in problem_records(pack):
        schema = json.loads((registry_dir / "schemas" / f"{files[record['kind']]}.v1alpha1.schema.json").read_text())
        jsonschema.Draft202012Validator(schema).validate(record)
