"""One resolver behind the CLI, the pages and the API: the same ids, digests, prefixes, slugs, names
and aliases name the same record everywhere, and the same bad ones are refused for the same reason
(in the same words)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner
from web_storefill import ALIAS, PROBLEM_NAME

from kernelindex.cli import app as cli_app

PLURAL = {"run": "runs", "workload": "workloads", "operation": "operations"}


def cli(web_filled, *args: str):
    return CliRunner().invoke(cli_app, [*args, "--db", str(web_filled[0].engine.url)])


@pytest.fixture(scope="module")
def names(client, filled):
    """(kind, text, expected) triples: expected is the record's id/slug, or the refusal's HTTP status."""
    run = client.get(f"/api/v1/runs/{filled.runs['fast']}").json()
    workload = client.get(f"/api/v1/workloads/{filled.workload_id}").json()
    operation = client.get(f"/api/v1/operations/{workload['operation']['slug']}").json()
    hexpart = run["digest"].removeprefix("sha256:")
    return [
        ("run", run["id"], run["id"]),
        ("run", run["digest"], run["id"]),
        ("run", hexpart[:10], run["id"]),
        ("run", "sha256:" + hexpart[:8], run["id"]),
        ("run", hexpart[:12].upper(), run["id"]),
        ("run", "00000000ff", 404),
        ("run", "abc12", 400),
        ("run", "no-such-run", 404),
        ("workload", workload["id"], workload["id"]),
        ("workload", workload["digest"][:20], workload["id"]),
        ("workload", "softmax-rows-8192", 409),  # both operations' workloads carry this name
        ("workload", "0000000000", 404),
        ("operation", operation["slug"], operation["slug"]),
        ("operation", ALIAS, operation["slug"]),
        ("operation", operation["digest"][:15], operation["slug"]),
        ("operation", PROBLEM_NAME, 409),  # the problem and its pack variant share the name
        ("operation", "no-such-operation", 404),
        ("operation", "1234", 400),
    ]


def test_pages_and_api_agree(client, names):
    for kind, text, expected in names:
        api = client.get(f"/api/v1/{PLURAL[kind]}/{text}")
        page = client.get(f"/{PLURAL[kind]}/{text}")
        if isinstance(expected, int):
            assert (api.status_code, page.status_code) == (expected, expected), (kind, text)
            assert api.json()["detail"] in page.text.replace("&#39;", "'"), (kind, text)
        else:
            assert api.status_code == page.status_code == 200, (kind, text)
            assert api.json()["slug" if kind == "operation" else "id"] == expected, (kind, text)
            assert f"/api/v1/{PLURAL[kind]}/{expected}" in page.text, (kind, text)


def test_cli_show_agrees_with_the_api(client, web_filled, names):
    for kind, text, expected in names:
        if kind != "run":
            continue
        shown = cli(web_filled, "show", text, "--json")
        if isinstance(expected, int):
            assert shown.exit_code == 1, text
            assert shown.output.strip() == f"error: {client.get(f'/api/v1/runs/{text}').json()['detail']}", text
        else:
            assert shown.exit_code == 0 and json.loads(shown.output)["id"] == expected, text


def test_cli_rank_takes_what_the_api_takes(client, web_filled, names):
    for kind, text, expected in names:
        ranked = cli(web_filled, "rank", text, "--json")
        if isinstance(expected, int):
            if expected == 409:  # an ambiguous name is refused by rank in the resolver's words too
                detail = client.get(f"/api/v1/{PLURAL[kind]}/{text}").json()["detail"]
                assert ranked.exit_code == 1 and ranked.output.strip() == f"error: {detail}", (kind, text)
            else:  # unknown to every kind rank tries
                assert ranked.exit_code == 1 and "error:" in ranked.output, (kind, text)
            continue
        assert ranked.exit_code == 0, (kind, text, ranked.output)
        keys = {g["comparisonKey"] for g in json.loads(ranked.output)}
        body = client.get(f"/api/v1/{PLURAL[kind]}/{text}").json()
        if kind == "run":
            assert keys == {body["rank"]["comparisonKey"]}, text
        elif kind == "workload":
            assert keys == {g["comparisonKey"] for g in body["groups"]}, text
        else:
            wanted = set()
            for w in body["workloads"]:
                wanted |= {g["comparisonKey"] for g in client.get(f"/api/v1/workloads/{w['id']}").json()["groups"]}
            assert keys == wanted and keys, text
