"""The read layer's contract: every JSON read of the API is one exact view model, and the bytes it answers
are that model's dump (field order and number types included), so a page, its JSON, the CLI and the MCP
tools, which all build the same model, cannot disagree."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import kernelindex.views
from kernelindex.views.common import ViewModel
from kernelindex.views.compare import Compare
from kernelindex.views.evidence import RunEvidence
from kernelindex.views.ledger import LedgerPage
from kernelindex.views.operation import Operation, OperationListing
from kernelindex.views.origins import OriginsView
from kernelindex.views.rank import RankedTarget, Ranking
from kernelindex.views.run import Run
from kernelindex.views.run_listing import RunListing
from kernelindex.views.source import SourceListing
from kernelindex.views.workload import Workload, WorkloadListing

NOT_VIEWS = {  # files and the schema document itself, not JSON views of stored facts
    "/api/v1/openapi.json",
    "/api/v1/export",
    "/api/v1/exports/catalog.jsonl.zst",
    "/api/v1/exports/catalog-{hex_digest}.jsonl.zst",
    "/api/v1/runner/blobs/{digest}",
    "/api/v1/log/checkpoint.txt",  # the bare signed note, as transparency-log tools fetch it
}


def _view_models() -> list[type[ViewModel]]:
    for module in pkgutil.iter_modules(kernelindex.views.__path__):
        importlib.import_module(f"kernelindex.views.{module.name}")
    found, todo = [], [ViewModel]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.append(sub)
            todo.append(sub)
    return found


def test_every_view_model_forbids_undeclared_fields():
    models = _view_models()
    assert len(models) > 60
    assert [m.__name__ for m in models if m.model_config.get("extra") != "forbid"] == []


def test_every_json_read_of_the_api_documents_its_model(client):
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    untyped = []
    for path, item in paths.items():
        if "get" not in item or path in NOT_VIEWS:
            continue
        schema = item["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        if "$ref" not in schema:
            untyped.append(path)
    assert untyped == []


def _answers_exactly(client, path: str, model: type[ViewModel]) -> None:
    reply = client.get(path)
    assert reply.status_code == 200, (path, reply.text[:300])
    assert reply.content == model.model_validate(reply.json()).model_dump_json().encode(), path


@pytest.mark.parametrize("name", ["fast", "slow", "pack", "retracted", "newer", "nometric"])
def test_a_run_answers_exactly_its_model(client, filled, name):
    run = filled.runs[name]
    _answers_exactly(client, f"/api/v1/runs/{run}", Run)
    _answers_exactly(client, f"/api/v1/runs/{run}/evidence", RunEvidence)


def test_the_other_reads_answer_exactly_their_models(client, filled):
    fast, slow = filled.runs["fast"], filled.runs["slow"]
    _answers_exactly(client, "/api/v1/runs?limit=3", RunListing)
    _answers_exactly(client, f"/api/v1/compare?run={fast}&run={slow}", Compare)
    _answers_exactly(client, "/api/v1/rankings?target=synthetic-softmax-rows", RankedTarget)
    run = client.get(f"/api/v1/runs/{fast}").json()
    _answers_exactly(client, f"/api/v1/rankings/{run['identity']['comparisonKey']}", Ranking)
    _answers_exactly(client, f"/api/v1/workloads/{run['identity']['workload']['id']}", Workload)
    _answers_exactly(client, "/api/v1/workloads", WorkloadListing)
    _answers_exactly(client, "/api/v1/operations", OperationListing)
    _answers_exactly(client, f"/api/v1/operations/{run['identity']['operation']['slug']}", Operation)
    _answers_exactly(client, "/api/v1/sources", SourceListing)
    _answers_exactly(client, "/api/v1/origins", OriginsView)
    _answers_exactly(client, "/api/v1/records", LedgerPage)
