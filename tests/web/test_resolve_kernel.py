"""The kernel resolver (``POST /api/v1/resolve/kernel`` and ``/batch``) on the small store: the exact case's
fastest run is the rank table's leader, with its interval, evidence and source; a shape no case has
answers with the nearest measured cases; constraints are never dropped."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.web.app import create_app
from live_kit import serving

OP = "synthetic-softmax-rows"


def _resolve(client, body: dict) -> dict:
    response = client.post("/api/v1/resolve/kernel", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_exact_case_answers_with_the_leader_of_its_best_evidenced_group(client, filled):
    answer = _resolve(client, {"operation": OP, "shape": {"rows": 8192}, "dtype": "fp32", "gpu": "H200"})
    assert answer["match"] == "exact" and answer["nearest"] == []
    best = answer["best"]
    assert best["runId"] == filled.runs["fast"] and best["source"] == "test-lab"
    ranking = client.get(f"/api/v1/rankings/{best['comparisonKey']}").json()
    assert ranking["rows"][0]["runId"] == best["runId"] and best["rank"] == 1
    assert best["interval"]["low"] <= best["value"] <= best["interval"]["high"]
    assert best["value"] == int(filled.medians["fast"])  # the run states whole nanoseconds
    assert best["evidence"]["level"] == "verified" and best["evidence"]["reasons"]
    assert best["permalink"].endswith("/r/" + best["digest"]) and best["citation"]
    # the other protocol's group is offered too, never mixed into the winner's rank
    assert {a["comparisonKey"] for a in answer["alternatives"]} and all(
        a["comparisonKey"] != best["comparisonKey"] for a in answer["alternatives"]
    )


def test_one_letter_stands_for_its_axis_and_a_missing_shape_is_the_nearest_cases(client, filled):
    assert _resolve(client, {"operation": OP, "shape": {"r": 8192}})["best"]["runId"] == filled.runs["fast"]
    near = _resolve(client, {"operation": OP, "shape": {"rows": 4096}})
    assert near["match"] == "nearest" and near["best"] is None
    (case,) = near["nearest"]
    assert case["axes"]["rows"] == 8192 and case["relation"] == "above rows" and case["distance"] == 4096
    assert case["best"]["runId"] == filled.runs["fast"]


@pytest.mark.parametrize(
    "extra",
    [{"constraints": {"minEvidence": "replicated"}}, {"constraints": {"license": "no-such-licence"}}, {"gpu": "B200"}],
)
def test_constraints_are_kept_even_when_nothing_meets_them(client, extra):
    answer = _resolve(client, {"operation": OP, "shape": {"rows": 8192}, **extra})
    assert answer["match"] == "none" and answer["best"] is None and answer["notes"]


def test_a_licence_the_source_policy_states_is_met(client, filled):
    answer = _resolve(client, {"operation": OP, "shape": {"rows": 8192}, "constraints": {"license": "cc0"}})
    assert answer["best"]["runId"] == filled.runs["fast"]


def test_a_batch_answers_each_query_and_refuses_one_alone(client, filled):
    response = client.post(
        "/api/v1/resolve/kernel/batch",
        json={"queries": [{"operation": OP, "shape": {"rows": 8192}}, {"operation": "no-such-operation"}]},
    )
    assert response.status_code == 200, response.text
    first, second = response.json()["results"]
    assert first["resolution"]["best"]["runId"] == filled.runs["fast"] and first["error"] is None
    assert second["resolution"] is None and "no-such-operation" in second["error"]


@pytest.mark.parametrize(
    ("path", "body", "slug"),
    [
        ("/api/v1/resolve/kernel/batch", {"queries": [{"operation": OP}] * 21}, "batch-too-large"),
        ("/api/v1/resolve/kernel/batch", {"queries": []}, "invalid-body"),
        ("/api/v1/resolve/kernel", {"operation": OP, "shape": {f"a{i}": 1 for i in range(17)}}, "invalid-body"),
        ("/api/v1/resolve/kernel", {"operation": OP, "colour": "red"}, "invalid-body"),
        ("/api/v1/resolve/kernel", {"operation": ""}, "invalid-body"),
        ("/api/v1/resolve/kernel", {"operation": OP, "constraints": {"minEvidence": "sure"}}, "invalid-body"),
        ("/api/v1/resolve/kernel", [OP], "malformed-body"),
    ],
)
def test_bad_bodies_are_problems_naming_the_field(client, path, body, slug):
    response = client.post(path, json=body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["type"].endswith(slug)


def test_unknown_operation_is_404_and_bad_json_is_400(client):
    assert client.post("/api/v1/resolve/kernel", json={"operation": "no-such-op"}).status_code == 404
    assert client.post("/api/v1/resolve/kernel", content=b'{"operation": "a", "operation": "b"}').status_code == 400


def test_the_cli_prints_the_same_document_from_the_store_and_from_a_server(web_filled, monkeypatch):
    store, filled = web_filled
    with serving(create_app(store=store)) as url:
        monkeypatch.setenv("KERNELINDEX_PUBLIC_URL", url)
        args = ["resolve", "kernel", OP, "r=8192", "--gpu", "H200", "--min-evidence", "verified", "--json"]
        local = CliRunner().invoke(app, [*args, "--db", store.engine.url.render_as_string(hide_password=False)])
        remote = CliRunner().invoke(app, [*args, "--server", url])
        assert local.exit_code == remote.exit_code == 0, local.output + remote.output
        assert json.loads(local.output) == json.loads(remote.output)
        assert json.loads(local.output)["best"]["runId"] == filled.runs["fast"]
        table = CliRunner().invoke(app, ["resolve", "kernel", OP, "rows=4096", "--server", url])
        assert "nearest (above rows): rows=8192" in table.output
        for bad in (["resolve", "kernel", OP, "rows"], ["resolve", "kernel", OP, "--min-evidence", "sure"]):
            refused = CliRunner().invoke(app, [*bad, "--server", url])
            assert refused.exit_code == 2 and "Traceback" not in refused.output and "error:" in refused.output


def test_an_operation_is_named_as_the_search_box_reads_it(client, filled):
    by_alias = _resolve(client, {"operation": "rowwise_softmax_alias", "shape": {"rows": 8192}})
    assert by_alias["best"]["runId"] == filled.runs["fast"]
    both = client.post("/api/v1/resolve/kernel", json={"operation": "softmax"})
    assert both.status_code == 409 and "synthetic-softmax-rows-pack" in both.json()["detail"]
    none = client.post("/api/v1/resolve/kernel", json={"operation": "042"})
    assert none.status_code == 404 and "'042'" in none.json()["detail"]
