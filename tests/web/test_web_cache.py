"""The exact cache: a write from any path shows on the next request (on SQLite and PostgreSQL, in
one process and across two `kernelindex serve` workers); 304s; compression; pages that carry a
visitor's token or set a cookie are never shared."""

from __future__ import annotations

import gzip
import re
import secrets
import subprocess
import sys
import time
import zlib
from pathlib import Path

import brotli
import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.exc import OperationalError

from catalog_kit import catalog_lines, write_catalog
from kernelindex.ingest.catalog import import_catalog
from kernelindex.ranking.leaders import record_leader_changes
from kernelindex.ranking.reads import ranked_groups
from kernelindex.records.attestation import new_attestation
from kernelindex.records.models import dump_record
from kernelindex.store.database import open_store
from kernelindex.store.evidence.records import add_attestation, add_correction_request, create_api_key
from kernelindex.store.generation import GenerationReader, is_write
from kernelindex.web.app import create_app
from kernelindex.web.http.cache import IMMUTABLE, CacheMiddleware, Entry, LRUBytes
from kernelindex.web.http.compression import MIN_SIZE, deflate_part
from kernelindex.web.http.input_guards import csrf_field_token
from process_kit import free_port, living_children, wait_for
from store_fixtures import BACKENDS, database_url

CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')


def toy_lines() -> list[dict]:
    """The small catalog, without its recorded leader event (so recording leaders is a write)."""
    return [line for line in catalog_lines() if line["table"] != "record_events"]


def run_rows(lines: list[dict]) -> list[dict]:
    return [line["row"] for line in lines if line["table"] == "benchmark_runs"]


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    opened = open_store(database_url(request.param, tmp_path, migrated=True))
    yield opened
    opened.close()


@pytest.fixture()
def site(store):
    app = create_app(store=store)
    with TestClient(app, raise_server_exceptions=True) as client:
        yield app, client


def cache_of(app) -> CacheMiddleware:
    node = app.middleware_stack
    while not isinstance(node, CacheMiddleware):
        node = node.app
    return node


def get_twice(app, client, path: str, **kwargs) -> httpx.Response:
    """GET ``path`` twice; the second answer must come from the cache."""
    first = client.get(path, **kwargs)
    hits = cache_of(app).hits
    second = client.get(path, **kwargs)
    assert cache_of(app).hits == hits + 1, f"{path} was not served from the cache"
    assert second.content == first.content
    return second


def test_a_write_from_any_path_shows_on_the_next_request(store, site, tmp_path):
    app, client = site
    lines = toy_lines()
    assert get_twice(app, client, "/api/v1/sources").json()["items"] == []

    import_catalog(store, write_catalog(tmp_path / "toy.jsonl", lines))  # import
    assert [s["slug"] for s in client.get("/api/v1/sources").json()["items"]] == ["toy-source"]

    key = run_rows(lines)[0]["comparisonKey"]
    assert get_twice(app, client, f"/api/v1/rankings/{key}").json()["history"] == []
    with store.begin() as conn:  # leader change
        assert len(record_leader_changes(conn, [key])) == 1
    assert [e["cause"] for e in client.get(f"/api/v1/rankings/{key}").json()["history"]] == ["new_run"]

    run = run_rows(lines)[0]
    evidence = f"/api/v1/runs/{run['id']}/evidence"
    assert get_twice(app, client, evidence).json()["attestations"] == []
    spec = {
        "claim": "reproduced",
        "runDigest": run["runDigest"],
        "attester": {"name": "cache test"},
        "observedAt": "2026-11-30T10:00:00.000Z",
    }
    with store.begin() as conn:  # attestation
        add_attestation(conn, dump_record(new_attestation(spec)))
    assert len(client.get(evidence).json()["attestations"]) == 1

    assert get_twice(app, client, evidence).json()["corrections"] == []
    with store.begin() as conn:  # correction request
        kid = create_api_key(conn, "reporter", frozenset({"report"})).key_id
        add_correction_request(conn, run["runDigest"], "wrong_value", "the median is off", "supersede", kid)
    assert len(client.get(evidence).json()["corrections"]) == 1

    assert "raw-alias" not in get_twice(app, client, "/api/v1/operations/toy-scale").text
    with store.begin() as conn:  # a raw INSERT through the store's own connection
        op_id = conn.exec_driver_sql("SELECT id FROM operations WHERE slug = 'toy-scale'").scalar_one()
        conn.exec_driver_sql(
            f"INSERT INTO operation_aliases (operation_id, alias, export_row) VALUES ('{op_id}', 'raw-alias', '{{}}')"
        )
    assert "raw-alias" in client.get("/api/v1/operations/toy-scale").text


def test_a_rolled_back_write_leaves_the_generation_alone(store):
    read = GenerationReader(store.engine)
    before = read()
    with pytest.raises(RuntimeError), store.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO sources (id, slug, kind, name, export_row) VALUES "
            "('01900000-0000-7000-8000-00000000ffff', 'gone', 'leaderboard', 'Gone', '{}')"
        )
        raise RuntimeError("abandon the transaction")
    assert read() == before
    with store.begin() as conn:
        conn.exec_driver_sql("SELECT 1")  # a read moves nothing
    assert read() == before
    with store.begin() as conn:
        with conn.begin_nested() as savepoint:  # a write undone with its savepoint ...
            conn.exec_driver_sql("UPDATE store_generation SET value = value WHERE id = 0")
            savepoint.rollback()
        conn.exec_driver_sql(
            "INSERT INTO sources (id, slug, kind, name, export_row) VALUES "
            "('01900000-0000-7000-8000-00000000fffe', 'kept', 'leaderboard', 'Kept', '{}')"
        )
    assert read() == before + 1  # ... does not stop the next write of the transaction from bumping


def test_304_until_the_store_changes(store, site, tmp_path):
    app, client = site
    import_catalog(store, write_catalog(tmp_path / "toy.jsonl", toy_lines()))
    first = client.get("/api/v1/operations/toy-scale")
    etag = first.headers["etag"]
    assert first.headers["cache-control"].startswith("public, max-age=")
    again = client.get("/api/v1/operations/toy-scale", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    with store.begin() as conn:
        conn.exec_driver_sql("UPDATE operations SET name = 'toy scale, renamed' WHERE slug = 'toy-scale'")
    changed = client.get("/api/v1/operations/toy-scale", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    assert changed.json()["name"] == "toy scale, renamed"


def raw_body(client: TestClient, path: str, accept: str) -> tuple[httpx.Response, bytes]:
    client.cookies.clear()
    with client.stream("GET", path, headers={"Accept-Encoding": accept}) as response:
        return response, b"".join(response.iter_raw())


@pytest.mark.parametrize("coding, decode", [("gzip", gzip.decompress), ("br", brotli.decompress)])
def test_compressed_answers_decode_to_the_plain_ones(store, site, tmp_path, coding, decode):
    app, client = site
    lines = toy_lines()
    import_catalog(store, write_catalog(tmp_path / "toy.jsonl", lines))
    path = f"/api/v1/runs/{run_rows(lines)[0]['id']}"
    plain, identity = raw_body(client, path, "identity")
    assert "content-encoding" not in plain.headers and len(identity) >= MIN_SIZE
    for _ in range(2):  # made, then taken from the entry
        packed, body = raw_body(client, path, coding)
        assert packed.headers["content-encoding"] == coding and "Accept-Encoding" in packed.headers["vary"]
        assert decode(body) == identity and len(body) < len(identity)
        assert packed.headers["etag"] == plain.headers["etag"]
    small, body = raw_body(client, "/api/v1/sources", coding)
    assert "content-encoding" not in small.headers and len(body) < MIN_SIZE
    not_modified = client.get(path, headers={"Accept-Encoding": coding, "If-None-Match": packed.headers["etag"]})
    assert not_modified.status_code == 304 and not_modified.content == b""


def visit(client: TestClient, path: str, accept: str, nonce: str | None, **headers) -> tuple[httpx.Response, str]:
    """GET ``path`` as the visitor holding the cookie ``nonce`` (None: a first visit); the page as text."""
    client.cookies.clear()
    if nonce:
        client.cookies.set("ki_csrf", nonce)
    with client.stream("GET", path, headers={"Accept-Encoding": accept, **headers}) as response:
        body = b"".join(response.iter_raw())
    coding = response.headers.get("content-encoding")
    assert coding in (None, "gzip"), coding  # a page with a token is gzipped with the token alone, or plain
    if coding == "gzip":
        assert zlib.decompressobj(wbits=31).decompress(body) == gzip.decompress(body)  # a well-formed stream
        body = gzip.decompress(body)
    return response, body.decode()


def test_pages_with_a_visitor_token_are_personal(store, site, tmp_path):
    """One kept page serves every visitor, each with the HMAC of their own cookie nonce as the form
    token: never another visitor's, never the nonce itself, never the placeholder."""
    app, client = site
    lines = toy_lines()
    import_catalog(store, write_catalog(tmp_path / "toy.jsonl", lines))
    path = f"/runs/{run_rows(lines)[0]['id']}"
    nonces = [secrets.token_urlsafe(32) for _ in range(2)]
    fields = [csrf_field_token(app.state.csrf_secret, nonce) for nonce in nonces]
    hits = cache_of(app).hits
    answers = []
    for nonce, field in zip(nonces + nonces, fields + fields, strict=True):  # each visitor twice
        response, page = visit(client, path, "gzip, br", nonce)
        assert response.headers["content-encoding"] == "gzip"
        assert CSRF_INPUT.findall(page) == [field] * len(CSRF_INPUT.findall(page)) != []
        assert nonce not in page and cache_of(app).placeholder not in page
        assert response.headers["cache-control"] == "private, no-cache" and "Cookie" in response.headers["vary"]
        assert "set-cookie" not in response.headers
        answers.append((response.headers["etag"], page))
    assert cache_of(app).hits == hits + 3  # rendered once
    assert answers[0] == answers[2] and answers[1] == answers[3]  # same visitor, same page and ETag
    assert answers[0][0] != answers[1][0]
    assert answers[0][1].replace(fields[0], fields[1]) == answers[1][1]  # only the token differs
    _, plain = visit(client, path, "identity", nonces[0])
    assert plain == answers[0][1]
    _, plain = visit(client, path, "br", nonces[0])  # no gzip: the page goes plain, never brotli'd with its token
    assert plain == answers[0][1]

    # An ETag names its visitor's token: another visitor sending it gets their own page, not a 304.
    etag = answers[0][0]
    assert visit(client, path, "identity", nonces[0], **{"If-None-Match": etag})[0].status_code == 304
    other, page = visit(client, path, "identity", nonces[1], **{"If-None-Match": etag})
    assert other.status_code == 200 and other.headers["etag"] == answers[1][0] and page == answers[1][1]

    # A first visit gets, from the same kept page, the HMAC of the nonce it is given.
    hits = cache_of(app).hits
    first, page = visit(client, path, "gzip", None)
    nonce = re.match(r"ki_csrf=([^;]+);", first.headers["set-cookie"]).group(1)
    assert CSRF_INPUT.findall(page)[0] == csrf_field_token(app.state.csrf_secret, nonce) != nonce
    assert cache_of(app).hits == hits + 1 and first.headers["cache-control"] == "private, no-cache"


def test_the_token_is_compressed_alone(store, site, tmp_path):
    """BREACH: the gzip of a page with a token holds the token deflated by itself, so the reply's size
    cannot tell how much of the token matches text an attacker put on the page; so does an uncached one."""
    app, client = site
    lines = toy_lines()
    import_catalog(store, write_catalog(tmp_path / "toy.jsonl", lines))
    path = f"/runs/{run_rows(lines)[0]['id']}"
    nonces = [secrets.token_urlsafe(32) for _ in range(2)]
    fields = [csrf_field_token(app.state.csrf_secret, nonce).encode() for nonce in nonces]
    raw = []
    for nonce in nonces:
        client.cookies.set("ki_csrf", nonce)
        with client.stream("GET", path, headers={"Accept-Encoding": "gzip"}) as response:
            raw.append(b"".join(response.iter_raw()))
    alone = [deflate_part(field) for field in fields]
    assert all(part in body for part, body in zip(alone, raw, strict=True))
    assert raw[0].replace(alone[0], alone[1])[:-8] == raw[1][:-8]  # all else the same bytes (but the CRC)
    hits = cache_of(app).hits
    client.cookies.set("ki_csrf", nonces[0])
    with client.stream("GET", path, headers={"Accept-Encoding": "gzip", "Authorization": "Bearer x"}) as uncached:
        body = b"".join(uncached.iter_raw())
    assert cache_of(app).hits == hits and uncached.headers["content-encoding"] == "gzip"
    assert alone[0] in body and fields[0] in gzip.decompress(body)


def test_nothing_that_sets_a_cookie_or_carries_a_key_is_public(store, site, tmp_path):
    app, client = site
    import_catalog(store, write_catalog(tmp_path / "toy.jsonl", toy_lines()))
    client.cookies.clear()
    first_visit = client.get("/operations/toy-scale")  # a page with no form, but a new visitor's cookie
    assert "ki_csrf=" in first_visit.headers["set-cookie"]
    assert first_visit.headers["cache-control"] == "private, no-cache"
    hits = cache_of(app).hits
    keyed = client.get("/api/v1/operations/toy-scale", headers={"Authorization": "Bearer some-key"})
    assert keyed.status_code == 200 and keyed.headers["cache-control"] == "private, no-cache"
    assert cache_of(app).hits == hits and "etag" not in keyed.headers


def test_permalinks_by_digest_are_immutable(store, site, tmp_path):
    app, client = site
    lines = toy_lines()
    import_catalog(store, write_catalog(tmp_path / "toy.jsonl", lines))
    run = run_rows(lines)[0]
    found = client.get(f"/r/{run['runDigest']}", follow_redirects=False)
    assert found.status_code == 302 and found.headers["location"] == f"/runs/{run['id']}"
    assert found.headers["cache-control"] == IMMUTABLE
    missing = client.get("/r/sha256:" + "0" * 64, follow_redirects=False)
    assert missing.status_code == 404 and "immutable" not in missing.headers["cache-control"]


def test_the_cache_keeps_to_its_byte_budget():
    entries = LRUBytes(budget=64 * 1024)
    for number in range(40):
        entries.put(str(number), Entry(headers=[], body=bytes(4000), etag=str(number), personal=False))
        assert entries.used <= entries.budget
    assert entries.get("0") is None and entries.get("39") is not None
    assert entries.used == sum(e.size + len(k) for k, e in entries._entries.items())  # bodies, headers, keys
    one = Entry(headers=[], body=bytes(4000), etag="40", personal=False).size + 2
    assert entries.used + one > entries.budget  # as many kept as fit
    entries.put("huge", Entry(headers=[], body=bytes(entries.budget), etag="huge", personal=False))
    assert entries.get("huge") is None and entries.get("39") is not None  # too big to keep; nothing flushed


@pytest.mark.parametrize(
    "statement, writes",
    [
        ("INSERT INTO runs VALUES (1)", True),
        ("  update runs set x = 1", True),
        ("DELETE FROM runs", True),
        ("WITH x AS (SELECT 1) INSERT INTO runs SELECT * FROM x", True),
        ("SELECT * FROM runs WHERE note = 'INSERT'", False),
        ("WITH x AS (SELECT 1) SELECT * FROM x", False),
        ("UPDATE alembic_version SET version_num='0700_store_generation'", False),
    ],
)
def test_which_statements_are_writes(statement, writes):
    assert is_write(statement) is writes


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc to see the worker processes")
def test_two_serve_workers_agree_after_a_write(tmp_path):
    db = tmp_path / "workers.db"
    open_store(str(db)).close()
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelindex.cli", "serve", "--db", str(db), "--port", str(port), "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/api/v1/sources", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "server did not start in 60 s"
            time.sleep(0.1)
        # the master preloads the app and forks its workers one by one: the first may answer before the second is
        # there, so wait for both (besides any helper uvicorn starts)
        wait_for(lambda: len(living_children(proc.pid)) == 2, "the two workers did not both start")
        for _ in range(16):  # a new connection each time: both workers answer, and cache the empty list
            assert httpx.get(f"{base}/api/v1/sources", timeout=5).json()["items"] == []
        writer = open_store(str(db), upgrade=False)
        import_catalog(writer, write_catalog(tmp_path / "toy.jsonl", toy_lines()))
        writer.close()
        for _ in range(16):
            items = httpx.get(f"{base}/api/v1/sources", timeout=5).json()["items"]
            assert [s["slug"] for s in items] == ["toy-source"]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_ranked_groups_are_kept_until_the_store_changes(store, tmp_path):
    lines = toy_lines()
    import_catalog(store, write_catalog(tmp_path / "toy.jsonl", lines))
    first_run, second_run = run_rows(lines)
    key = first_run["comparisonKey"]
    with store.engine.connect() as conn:
        first = ranked_groups(conn, [key])[key]
        assert ranked_groups(conn, [key])[key] is first  # kept: not ranked again
    assert first.leader.run.run_id == first_run["id"]
    with store.begin() as conn:
        conn.exec_driver_sql(f"UPDATE runs SET primary_value = 1 WHERE id = '{second_run['id']}'")
    with store.engine.connect() as conn:
        assert ranked_groups(conn, [key])[key].leader.run.run_id == second_run["id"]


def test_reads_on_sqlite_go_through_read_only_connections(store, site):
    app, _ = site
    if store.dialect != "sqlite":
        assert app.state.read_engine is store.engine  # PostgreSQL: the store's own pool
        return
    with app.state.read_engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT value FROM store_generation").scalar() == 0
        with pytest.raises(OperationalError, match="readonly"):
            conn.exec_driver_sql("UPDATE store_generation SET value = 5")


def test_a_group_ranked_inside_a_write_is_not_kept(store, tmp_path):
    lines = toy_lines()
    import_catalog(store, write_catalog(tmp_path / "toy.jsonl", lines))
    first_run, second_run = run_rows(lines)
    key = first_run["comparisonKey"]
    with pytest.raises(RuntimeError), store.begin() as conn:
        conn.exec_driver_sql(f"UPDATE runs SET primary_value = 1 WHERE id = '{second_run['id']}'")
        assert ranked_groups(conn, [key])[key].leader.run.run_id == second_run["id"]
        raise RuntimeError("roll the write back")
    with store.begin() as conn:  # another write brings the generation to the number the rolled-back one had
        conn.exec_driver_sql(
            "INSERT INTO sources (id, slug, kind, name, export_row) VALUES "
            "('01900000-0000-7000-8000-00000000fffd', 'other', 'leaderboard', 'Other', '{}')"
        )
    with store.engine.connect() as conn:
        assert ranked_groups(conn, [key])[key].leader.run.run_id == first_run["id"]
