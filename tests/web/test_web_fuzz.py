"""Hostile requests against every route: the server answers 4xx (problem+json on the API), never 500.

The store holds what a fresh install imports (the two seed bundles and a problem pack). Each
route is hit with a seeded, random selection of hostile values in its path and query parameters,
plus a fixed table of the classic ones; set KERNELINDEX_TEST_SEED to repeat a run.
"""

from __future__ import annotations

import base64
import os
import random
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kernelindex.cli import app as cli_app
from kernelindex.web.app import create_app
from store_fixtures import BACKENDS

SRC = Path(__file__).resolve().parents[2] / "src" / "kernelindex"
SEED = int(os.environ.get("KERNELINDEX_TEST_SEED", random.randrange(2**32)))

# Path templates: {x} is replaced by a hostile value. Query-only routes get the value as a parameter.
PATH_ROUTES = [
    "/api/v1/runs/{x}",
    "/api/v1/workloads/{x}",
    "/api/v1/operations/{x}",
    "/api/v1/rankings/{x}",
    "/api/v1/sources/{x}",
    "/api/v1/runs/{x}/evidence",
    "/api/v1/records/{x}/signatures",
    "/runs/{x}",
    "/workloads/{x}",
    "/rankings/{x}",
    "/operations/{x}",
    "/sources/{x}",
    "/r/{x}",
    "/api/v1/implementations/{x}",
    "/api/v1/projects/{x}",
    "/api/v1/gpus/{x}",
    "/implementations/{x}",
    "/projects/{x}",
    "/gpus/{x}",
    "/badges/implementations/{x}.svg",
]
LISTINGS = [
    "/api/v1/runs",
    "/api/v1/workloads",
    "/api/v1/operations",
    "/api/v1/search",
    "/",
    "/runs",
    "/api/v1/records",
    "/records",
]
PARAM_ROUTES = [
    ("/api/v1/runs", ["workload", "comparisonKey", "status", "source", "hardware"]),
    ("/api/v1/workloads", ["operation"]),
    ("/api/v1/operations", ["family"]),
    ("/api/v1/search", ["q"]),
    ("/", ["q"]),
    ("/api/v1/compare", ["a", "b"]),
    ("/compare", ["a", "b"]),
    ("/api/v1/compare", ["run", "run"]),
    ("/compare.md", ["run", "run"]),
    ("/api/v1/records", ["since", "operation", "gpu", "source", "kind"]),
    ("/records", ["since", "gpu", "kind"]),
    ("/records/feed.xml", ["operation", "gpu", "source", "kind"]),
]
FIXED = [
    "",
    " ",
    "%00",
    "%2500",
    "..",
    "%2e%2e",
    "%2F",
    "a%2Fb",
    "sha256:",
    "sha256:" + "0" * 64,
    "sha256:" + "g" * 64,
    "SHA256:" + "A" * 64,
    "0" * 64,
    "0" * 7,
    "0" * 8,
    "00000000-0000-0000-0000-000000000000",
    "-1",
    "1e999",
    "%FF%FE",
    "%C0%80",
    "%ED%A0%80",
    "\u202e\u0000",
    "💥" * 50,
    "x" * 10_000,
    "'; DROP TABLE runs; --",
    "%",
    "_",
    "\\",
    "%5C",
    "<script>",
    "%0D%0ASet-Cookie:x=1",
    "null",
    "[]",
    "{}",
    "NaN",
    "sha256:%",
    "sha256:_" * 3,
]
LIMITS = ["0", "-1", "201", "1.5", "1e3", "nan", "inf", "99999999999999999999999999", "", "abc", "%00", "१"]
CURSORS = ["", "x", "=", "%00", "!!!!", "A" * 5000, "eyJsIjoicnVucyIsImEiOjF9", "AAAAAAAAAAAAAAAAAAAAAAB7fQ"]


def _junk(rng: random.Random) -> str:
    """A random hostile string: mixed ASCII, percent escapes, control and astral characters."""
    parts = []
    for _ in range(rng.randrange(1, 12)):
        pick = rng.randrange(6)
        if pick == 0:
            parts.append("%" + format(rng.randrange(256), "02X"))
        elif pick == 1:
            parts.append(chr(rng.randrange(1, 0x20)))
        elif pick == 2:
            parts.append(chr(rng.choice([rng.randrange(0x80, 0xD800), rng.randrange(0xE000, 0x110000)])))
        elif pick == 3:
            parts.append(rng.choice(["sha256:", "..", "/", "?", "#", "&", "=", ";", "'", '"', "%"]))
        elif pick == 4:
            parts.append(format(rng.getrandbits(32 * rng.randrange(1, 9)), "x"))
        else:
            parts.append("".join(rng.choice("abcdef0123456789-_.~") for _ in range(rng.randrange(1, 40))))
    return "".join(parts)


@pytest.fixture(scope="module", params=BACKENDS)
def fuzz_client(request, tmp_path_factory):
    if request.param == "sqlite":
        db = str(tmp_path_factory.mktemp("fuzz") / "fuzz.db")
    else:
        from pgserver import Unavailable, shared_server

        try:
            db = shared_server().new_database()
        except Unavailable as exc:
            pytest.skip(f"PostgreSQL unavailable: {exc}")
    runner = CliRunner()
    for path in (SRC / "sample", SRC / "problems" / "moe_load_balance_bwd"):
        result = runner.invoke(cli_app, ["import", str(path), "--db", db])
        assert result.exit_code == 0, result.output
    with TestClient(create_app(db), raise_server_exceptions=False) as client:
        yield client


def _check(client: TestClient, method: str, url: str) -> None:
    response = client.request(method, url)
    where = f"{method} {url[:200]!r} (seed {SEED})"
    assert response.status_code < 500, f"{where} -> {response.status_code}: {response.text[:300]}"
    if response.status_code >= 400 and "/api/" in url.split("?")[0] and method != "HEAD":
        assert response.headers["content-type"].startswith("application/problem+json"), where
        body = response.json()
        assert body["status"] == response.status_code and body["type"].startswith("/problems/"), where


def _requests(rng: random.Random) -> list[tuple[str, str]]:
    values = [quote(v, safe="%") for v in FIXED] + [
        quote(_junk(rng), safe="%" if rng.random() < 0.5 else "") for _ in range(40)
    ]
    out = []
    for template in PATH_ROUTES:
        for value in rng.sample(values, 12) + [quote(FIXED[0]), "%00", "x" * 10_000]:
            out.append((rng.choice(["GET", "GET", "HEAD"]), template.replace("{x}", value)))
    for route, params in PARAM_ROUTES:
        for value in rng.sample(values, 12):
            query = "&".join(f"{p}={value}" for p in params)
            out.append(("GET", f"{route}?{query}"))
        out.append(("GET", f"{route}?{params[0]}=a&{params[0]}=b&bogus=1"))
    for route in LISTINGS:
        for limit in LIMITS:
            out.append(("GET", f"{route}?limit={limit}"))
        for cursor in CURSORS + [quote(_junk(rng), safe="") for _ in range(5)]:
            out.append(("GET", f"{route}?cursor={cursor}"))
        out.append(("GET", f"{route}?limit=1&limit=2&cursor=&cursor=x"))
    for url in ["/api/v1/runs", "/api/v1/runs/x", "/runs/x", "/", "/api/v1/search?q=a"]:
        for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
            out.append((method, url))
    return out


def test_no_route_answers_500_to_hostile_input(fuzz_client):
    print(f"web fuzz seed: {SEED} (set KERNELINDEX_TEST_SEED to repeat)")
    for method, url in _requests(random.Random(SEED)):
        _check(fuzz_client, method, url)


def test_cursor_from_another_listing_or_query_is_refused(fuzz_client):
    """A genuine cursor replayed on another listing (or another search) is a 400, not a wrong page."""
    first = fuzz_client.get("/api/v1/runs?limit=1").json()
    assert first["next"], "the store holds more than one run"
    for url in [
        f"/api/v1/workloads?cursor={first['next']}",
        f"/api/v1/operations?cursor={first['next']}",
        f"/api/v1/runs?cursor={first['next'][:-2]}",
    ]:
        response = fuzz_client.get(url)
        assert response.status_code == 400, url
        assert response.json()["type"] == "/problems/bad-cursor"


@pytest.mark.parametrize(
    "payload",
    [
        "[]",
        "1",
        '"x"',
        '{"l":"runs"}',
        "not json",
        "\xff",
        '{"l":"runs","a":true}',
        '{"l":"runs","a":1.5}',
        '{"l":"runs","a":-1}',
        '{"l":"runs","a":9223372036854775808}',
        '{"l":"runs","a":' + "9" * 40 + "}",
    ],
)
def test_signed_cursor_with_a_bad_payload_is_a_400(fuzz_client, payload):
    """The default cursor key comes from the store URL (guessable), so a validly signed cursor may
    still carry any payload; it must be refused like any other bad cursor (was a 500)."""
    cursors = fuzz_client.app.state.cursors
    raw = payload.encode()
    forged = base64.urlsafe_b64encode(cursors._sign(raw) + raw).decode().rstrip("=")
    response = fuzz_client.get(f"/api/v1/runs?cursor={forged}")
    assert response.status_code == 400, response.text
    assert response.json()["type"] == "/problems/bad-cursor"
