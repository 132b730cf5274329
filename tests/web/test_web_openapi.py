"""The OpenAPI document says what the API does: problems as application/problem+json, security on
the writes, request bodies typed, and every problem ``type`` a page that resolves."""

from __future__ import annotations

import re
from pathlib import Path

from kernelindex.records.refusal import RefusalKind
from kernelindex.web.problem_types import PROBLEM_TYPES
from kernelindex.web.problems import PROBLEM_MEDIA_TYPE

SRC = Path(__file__).resolve().parents[2] / "src" / "kernelindex"
RAISED = re.compile(r"(?:Problem|Refusal)\(\s*\d{3},\s*\"([a-z-]+)\"")
CODED = re.compile(r"(?:EvidenceError|QueueError)\(\s*\"([a-z_]+)\"")
LITERAL = re.compile(r"\"((?:ambiguous|digest|invalid|unknown|bad|method|http|internal)-[a-z-]+)\"")


def emitted_slugs() -> set[str]:
    """Every problem slug the source can put in a ``type``, read from the source itself."""
    found = {kind.value.replace("_", "-") for kind in RefusalKind}
    for path in SRC.rglob("*.py"):
        text = path.read_text()
        found |= set(RAISED.findall(text)) | {c.replace("_", "-") for c in CODED.findall(text)}
        if path.parent.name in ("web", "http"):
            found |= set(LITERAL.findall(text))
    return found


def test_every_problem_type_the_source_emits_has_a_page(client):
    missing = sorted(emitted_slugs() - set(PROBLEM_TYPES))
    assert missing == [], f"add these to web/problem_types.py: {missing}"
    page = client.get("/problems/invalid-parameter")
    assert page.status_code == 200 and "limit=abc" in page.text
    assert client.get("/problems").status_code == 200
    assert client.get("/problems/no-such-thing").status_code == 404
    # the type of a problem the API really answers resolves
    kind = client.get("/api/v1/runs?limit=abc").json()["type"]
    assert client.get(kind).status_code == 200


def test_errors_are_documented_as_problems(client):
    doc = client.get("/api/v1/openapi.json").json()
    assert "HTTPValidationError" not in str(doc)
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for code, response in op["responses"].items():
                if code.startswith(("4", "5")):
                    assert list(response["content"]) == [PROBLEM_MEDIA_TYPE], (method, path, code)
            assert "400" in op["responses"], (method, path)


def test_writes_declare_security_and_bodies(client):
    doc = client.get("/api/v1/openapi.json").json()
    schemes = doc["components"]["securitySchemes"]
    assert schemes["apiKey"]["scheme"] == "bearer" and schemes["runnerSignature"]["in"] == "header"
    writes = {
        "/api/v1/runs/{run_id}/attestations": "AttestationBody",
        "/api/v1/runs/{run_id}/corrections": "CorrectionBody",
        "/api/v1/rerun-requests": "RerunRequestBody",
    }
    for path, body in writes.items():
        op = doc["paths"][path]["post"]
        assert op["security"] == [{"apiKey": []}] and "401" in op["responses"]
        ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith(body) and doc["components"]["schemas"][body]["properties"]
        ok = next(r for c, r in op["responses"].items() if c.startswith("2"))
        assert "$ref" in ok["content"]["application/json"]["schema"], path
    for path, item in doc["paths"].items():
        if path.startswith("/api/v1/runner/"):
            assert all(op["security"] == [{"runnerSignature": []}] for op in item.values()), path
