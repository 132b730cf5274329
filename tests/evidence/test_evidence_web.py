"""The evidence parts of the site over a real SQLite store: a page-submitted attestation shows up
with its signature checked, a run repeated on two machines reads "replicated", permalinks survive
corrections, and every attack on the write routes is refused with nothing stored."""

from __future__ import annotations

import base64
import copy
import json
import re

import pytest
from evidence_fixtures import add_harness_run, seed_bundle
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from kernelindex.records.attestation import new_attestation
from kernelindex.records.canonical import digest
from kernelindex.records.models import dump_record
from kernelindex.records.signing import key_id, new_private_key, public_key_to_text, sign_record_digest
from kernelindex.store.evidence.records import create_api_key, record_harness_reproduction, revoke_api_key
from kernelindex.store.evidence.tables import attestations, correction_requests, signatures
from kernelindex.store.tables import runs
from kernelindex.store.writer import Writer
from kernelindex.web.app import create_app

ORIGIN = "http://testserver"


@pytest.fixture()
def site(store):
    app = create_app(store=store)
    app.state.signing_key = new_private_key()
    app.state.signing_label = "this index (test)"
    with TestClient(app, raise_server_exceptions=True) as client:
        yield app, client


@pytest.fixture()
def keys(store):
    with store.begin() as conn:
        return {
            "writer": create_api_key(conn, "writer", frozenset({"attest", "report"})),
            "reporter": create_api_key(conn, "reporter", frozenset({"report"})),
            "revoked": create_api_key(conn, "revoked", frozenset({"attest", "report"})),
            "limited": create_api_key(conn, "limited", frozenset({"attest"}), daily_limit=1),
        }


def _run_id(store, run_digest: str) -> str:
    with store.begin() as conn:
        return conn.execute(select(runs.c.id).where(runs.c.run_digest == run_digest)).scalar_one()


def _counts(store) -> tuple[int, ...]:
    with store.begin() as conn:
        return tuple(
            conn.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (attestations, signatures, correction_requests)
        )


def _csrf(client: TestClient, run_id: str) -> str:
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200
    match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    # The field is the server's HMAC of the cookie's nonce, never the cookie itself.
    assert match and client.cookies.get("ki_csrf") and client.cookies.get("ki_csrf") != match.group(1)
    return match.group(1)


def test_attestation_submitted_through_the_page_appears_with_its_signature_checked(store, site, keys, seed_digest, rng):
    app, client = site
    run_id = _run_id(store, seed_digest)
    note = f"Matched within {rng.randrange(1, 9)} % on an H100; latency < 8 us."
    form = {
        "csrf_token": _csrf(client, run_id),
        "api_key": keys["writer"].token,
        "claim": "reproduced",
        "attester_name": "Ada Tester",
        "note": note,
        "measured_value": str(rng.randrange(7000, 8000)),
        "measured_unit": "ns",
    }
    reply = client.post(f"/runs/{run_id}/attestations", data=form, headers={"Origin": ORIGIN}, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    page = client.get(reply.headers["location"])
    assert page.status_code == 200
    item = re.search(r'<li id="att-[0-9a-f]{12}" data-claim="reproduced">(.*?)</li>', page.text, re.S)
    assert item, "the attestation is not on the run page"
    assert "Ada Tester" in item.group(1) and "latency &lt; 8 us" in item.group(1)
    server_key = key_id(app.state.signing_key.public_key())
    assert 'data-signature="valid"' in item.group(1) and "signature holds" in item.group(1)
    assert server_key[:19] in item.group(1)
    evidence = client.get(f"/api/v1/runs/{run_id}/evidence").json()
    (attestation,) = evidence["attestations"]
    (signature,) = attestation["signatures"]
    assert {k: signature[k] for k in ("keyId", "signer", "valid", "problem")} == {
        "keyId": server_key,
        "signer": "this index (test)",
        "valid": True,
        "problem": None,
    }
    assert signature["publicKey"] == public_key_to_text(app.state.signing_key.public_key())
    assert evidence["level"] == "reported"  # an attestation never moves the level


def test_client_signed_attestation_over_the_api(store, site, keys, seed_digest, rng):
    _, client = site
    key = new_private_key()
    spec = {
        "claim": "environment_note",
        "runDigest": seed_digest,
        "observedAt": "2026-11-29T16:20:00Z",
        "attester": {"name": "runner-bob", "keyId": key_id(key.public_key())},
        "note": f"driver 570.{rng.randrange(100)} shows the same number",
    }
    record = dump_record(new_attestation(spec))
    envelope = sign_record_digest(key, digest(record), "Attestation", "2026-11-29T16:20:01Z")
    reply = client.post(
        f"/api/v1/runs/{seed_digest}/attestations",
        json={"spec": spec, "signature": envelope, "publicKey": public_key_to_text(key.public_key())},
        headers={"Authorization": f"Bearer {keys['writer'].token}"},
    )
    assert reply.status_code == 201, reply.text
    assert reply.json()["digest"] == digest(record)
    (attestation,) = client.get(f"/api/v1/runs/{seed_digest}/evidence").json()["attestations"]
    assert {s["keyId"]: s["valid"] for s in attestation["signatures"]} == {
        key_id(key.public_key()): True,
        key_id(site[0].state.signing_key.public_key()): True,
    }
    # Its permalink leads to the run page, at the attestation.
    moved = client.get(f"/r/{digest(record)}", follow_redirects=False)
    assert moved.status_code == 302 and moved.headers["location"].endswith("#att-" + digest(record)[7:19])


def test_run_repeated_on_two_machines_shows_replicated(store, site, seed_digest, rng):
    _, client = site
    for host in ("gpu-host-a", "gpu-host-b"):
        harness_digest, key = add_harness_run(store, seed_bundle(), host, seed=rng.randrange(2**32))
        with store.begin() as conn:
            record_harness_reproduction(conn, seed_digest, harness_digest, key, runner_name=f"harness on {host}")
    page = client.get(f"/runs/{_run_id(store, seed_digest)}")
    assert 'class="evidence evidence-replicated"' in page.text
    assert 'data-level="replicated"' in page.text and "gpu-host-a" in page.text and "gpu-host-b" in page.text
    assert page.text.count('data-claim="reproduced"') == 2


def test_permalink_resolves_after_a_retraction_and_says_so(store, site, seed_digest):
    _, client = site
    run_id = _run_id(store, seed_digest)
    assert client.get(f"/r/{seed_digest}", follow_redirects=False).headers["location"] == f"/runs/{run_id}"
    with store.begin() as conn:
        Writer(conn).retract_run(run_id, "the source withdrew the submission")
    page = client.get(f"/r/{seed_digest}")
    assert page.status_code == 200
    assert 'data-field="correction"' in page.text and "the source withdrew the submission" in page.text
    assert client.get("/r/sha256:" + "0" * 64).status_code == 404
    csl = client.get(f"/api/v1/runs/{run_id}/evidence").json()["cslJson"]
    assert csl[0]["URL"].endswith(f"/r/{seed_digest}") and seed_digest in csl[0]["note"]


# --- attacks: each refused with a clear error, nothing stored --------------------------------


def _attest_form(client, run_id, token, **changes):
    form = {"csrf_token": _csrf(client, run_id), "api_key": token, "claim": "reproduced", "attester_name": "Eve"}
    form.update(changes)
    return {key: value for key, value in form.items() if value is not None}


def _refused(store, reply, status: int, message: str) -> None:
    assert reply.status_code == status, (reply.status_code, reply.text[:500])
    assert message in reply.text, reply.text[:500]


def test_cross_site_and_forged_form_posts_are_refused(store, site, keys, seed_digest):
    _, client = site
    run_id = _run_id(store, seed_digest)
    before = _counts(store)
    url = f"/runs/{run_id}/attestations"
    token = keys["writer"].token
    cases = [
        (_attest_form(client, run_id, token, csrf_token=None), {"Origin": ORIGIN}, 403, "anti-forgery token"),
        (_attest_form(client, run_id, token, csrf_token="x" * 43), {"Origin": ORIGIN}, 403, "anti-forgery token"),
        (_attest_form(client, run_id, token), {"Origin": "https://evil.example"}, 403, "evil.example"),
        (_attest_form(client, run_id, token), {"Sec-Fetch-Site": "cross-site"}, 403, "cross-site"),
        (_attest_form(client, run_id, token), {"Origin": "null", "Sec-Fetch-Site": "same-site"}, 403, "same-site"),
        (_attest_form(client, run_id, token), {"Origin": ORIGIN, "Sec-Fetch-Site": "cross-site"}, 403, "cross-site"),
    ]
    for form, headers, status, message in cases:
        _refused(store, client.post(url, data=form, headers=headers), status, message)
    # A cross-site page cannot read our cookie, so a post without it fails even with a guessed token.
    form = _attest_form(client, run_id, token)
    cookie = client.cookies.pop("ki_csrf")
    _refused(store, client.post(url, data=form, headers={"Origin": ORIGIN}), 403, "anti-forgery token")
    # A self-chosen cookie copied into the field (the old double-submit check) proves nothing now.
    client.cookies.set("ki_csrf", "c" * 43)
    _refused(
        store,
        client.post(url, data={**form, "csrf_token": "c" * 43}, headers={"Origin": ORIGIN}),
        403,
        "anti-forgery token",
    )
    client.cookies.set("ki_csrf", cookie)
    # Oversize and unreadable form bodies.
    big = _attest_form(client, run_id, token, note="x" * 20_000)
    _refused(store, client.post(url, data=big, headers={"Origin": ORIGIN}), 413, "over 16384 bytes")
    _refused(
        store,
        client.post(
            url,
            content=b"note=\xff\xfe",
            headers={"Origin": ORIGIN, "Content-Type": "application/x-www-form-urlencoded"},
        ),
        400,
        "cannot be read",
    )
    _refused(
        store,
        client.post(url, data=_attest_form(client, run_id, token, claim=["a", "b"]), headers={"Origin": ORIGIN}),
        400,
        "given twice",
    )
    _refused(
        store,
        client.post(url, data=_attest_form(client, run_id, token, level="replicated"), headers={"Origin": ORIGIN}),
        400,
        "unknown form field",
    )
    # The JSON API takes no form bodies (what a cross-site form could send).
    _refused(
        store,
        client.post(
            f"/api/v1/runs/{run_id}/attestations", data={"spec": "{}"}, headers={"Authorization": f"Bearer {token}"}
        ),
        415,
        "application/json",
    )
    assert _counts(store) == before


def test_keys_are_required_valid_unrevoked_and_scoped(store, site, keys, seed_digest):
    _, client = site
    run_id = _run_id(store, seed_digest)
    with store.begin() as conn:
        revoke_api_key(conn, keys["revoked"].key_id)
    before = _counts(store)
    url = f"/runs/{run_id}/attestations"
    for token, status, message in [
        (None, 401, "API key is required"),
        ("not-a-key", 401, "malformed"),
        (keys["writer"].token[:-2] + "zz", 401, "not valid"),
        (keys["revoked"].token, 401, "revoked"),
        (keys["reporter"].token, 403, "lacks the &#39;attest&#39; scope"),
    ]:
        _refused(
            store,
            client.post(url, data=_attest_form(client, run_id, token), headers={"Origin": ORIGIN}),
            status,
            message,
        )
    api = client.post(
        f"/api/v1/runs/{run_id}/corrections",
        json={"problem": "wrong_value", "details": "x", "requestedAction": "retract"},
        headers={"Authorization": f"Bearer {keys['revoked'].token}"},
    )
    _refused(store, api, 401, "revoked")
    assert _counts(store) == before


@pytest.mark.parametrize("field", ["attester_name", "note", "evidence_uri", "measured_unit"])
def test_html_in_every_form_field_is_refused(store, site, keys, seed_digest, field):
    _, client = site
    run_id = _run_id(store, seed_digest)
    before = _counts(store)
    changes = {field: '<img src=x onerror="alert(1)">'}
    if field == "evidence_uri":
        changes.update(evidence_uri="https://x.example/<script>", evidence_digest="sha256:" + "a" * 64)
    if field == "measured_unit":
        changes.update(measured_value="1")
    reply = client.post(
        f"/runs/{run_id}/attestations",
        data=_attest_form(client, run_id, keys["writer"].token, **changes),
        headers={"Origin": ORIGIN},
    )
    assert reply.status_code == 422
    assert "<img" not in reply.text and "<script>" not in reply.text.split("</head>")[-1]
    assert _counts(store) == before


def test_bad_api_bodies_and_signatures_are_refused(store, site, keys, seed_digest, rng):
    _, client = site
    url = f"/api/v1/runs/{seed_digest}/attestations"
    auth = {"Authorization": f"Bearer {keys['writer'].token}"}
    key = new_private_key()
    spec = {
        "claim": "could_not_reproduce",
        "runDigest": seed_digest,
        "observedAt": "2026-11-29T16:30:00Z",
        "attester": {"name": "mallory", "keyId": key_id(key.public_key())},
    }
    record = dump_record(new_attestation(spec))
    envelope = sign_record_digest(key, digest(record), "Attestation", "2026-11-29T16:30:00Z")
    public = public_key_to_text(key.public_key())
    forged = copy.deepcopy(envelope)
    raw = bytearray(base64.b64decode(forged["signatures"][0]["sig"]))
    raw[rng.randrange(64)] ^= 1 << rng.randrange(8)
    forged["signatures"][0]["sig"] = base64.b64encode(bytes(raw)).decode()
    other = sign_record_digest(key, seed_digest, "Attestation", "2026-11-29T16:30:00Z")
    before = _counts(store)
    cases = [
        (json.dumps({"spec": spec, "signature": forged, "publicKey": public}), 422, "forged or altered"),
        (json.dumps({"spec": spec, "signature": other, "publicKey": public}), 422, "covers record"),
        (
            json.dumps({"spec": dict(spec, note="<b>hi</b>"), "signature": envelope, "publicKey": public}),
            422,
            "plain text",
        ),
        (json.dumps({"spec": dict(spec, attester={"name": "<i>x</i>"})}), 422, "spec.attester.name"),
        (
            json.dumps(
                {
                    "spec": spec,
                    "metadata": {"name": "a", "title": "<script>x</script>"},
                    "signature": envelope,
                    "publicKey": public,
                }
            ),
            422,
            "plain text",
        ),
        (json.dumps({"spec": dict(spec, runDigest="sha256:" + "1" * 64)}), 422, "is not run"),
        (json.dumps({"spec": spec, "extra": 1}), 400, "unknown field"),
        (json.dumps({"spec": spec, "publicKey": "short"}), 422, "publicKey"),
        ('{"spec": {"claim": "reproduced"', 400, "not valid JSON"),
        ('{"spec": NaN}', 400, "not valid JSON"),
        ("[1, 2]", 400, "JSON object"),
        (json.dumps({"spec": dict(spec, note="x" * 200_000)}), 413, "over"),
    ]
    for body, status, message in cases:
        reply = client.post(url, content=body, headers={**auth, "Content-Type": "application/json"})
        _refused(store, reply, status, message)
        assert reply.headers["content-type"].startswith("application/problem+json")
    unknown = client.post(
        "/api/v1/runs/sha256:" + "2" * 64 + "/attestations",
        json={"spec": dict(spec, runDigest="sha256:" + "2" * 64)},
        headers=auth,
    )
    _refused(store, unknown, 404, "no run")
    assert _counts(store) == before
    ok = client.post(url, json={"spec": spec, "signature": envelope, "publicKey": public}, headers=auth)
    assert ok.status_code == 201
    after = _counts(store)
    replay = client.post(url, json={"spec": spec, "signature": envelope, "publicKey": public}, headers=auth)
    _refused(store, replay, 409, "replayed")
    assert _counts(store) == after


def test_rate_limit_and_correction_reports(store, site, keys, seed_digest):
    _, client = site
    url = f"/api/v1/runs/{seed_digest}/attestations"
    auth = {"Authorization": f"Bearer {keys['limited'].token}"}
    spec = {"claim": "environment_note", "attester": {"name": "busy"}, "observedAt": "2026-11-29T16:40:00Z"}
    assert client.post(url, json={"spec": spec}, headers=auth).status_code == 201
    before = _counts(store)
    _refused(
        store,
        client.post(url, json={"spec": dict(spec, observedAt="2026-11-29T16:41:00Z")}, headers=auth),
        429,
        "limit of 1 attestations per 24 hours",
    )
    assert _counts(store) == before

    run_id = _run_id(store, seed_digest)
    form = {
        "csrf_token": _csrf(client, run_id),
        "api_key": keys["reporter"].token,
        "problem": "wrong_value",
        "requested_action": "supersede",
        "details": "<a href=x>click</a>",
    }
    _refused(
        store, client.post(f"/runs/{run_id}/corrections", data=form, headers={"Origin": ORIGIN}), 422, "plain text"
    )
    assert _counts(store) == before
    form["details"] = "The mean is reported in ms, not us."
    reply = client.post(f"/runs/{run_id}/corrections", data=form, headers={"Origin": ORIGIN}, follow_redirects=False)
    assert reply.status_code == 303
    page = client.get(f"/runs/{run_id}")
    assert 'data-status="open"' in page.text and "wrong_value" in page.text


def test_a_signed_run_can_be_checked_offline_from_what_the_api_serves(store, site, seed_digest, tmp_path, rng):
    """Download the record, its envelope and the signer's public key; check them with no server."""
    from typer.testing import CliRunner

    from kernelindex.cli import app as cli

    _, client = site
    harness_digest, _ = add_harness_run(store, seed_bundle(), "host-offline", seed=rng.randrange(2**32))
    run_id = _run_id(store, harness_digest)
    run_record = client.get(f"/api/v1/runs/{run_id}").json()["manifest"]["run"]
    (served,) = client.get(f"/api/v1/records/{harness_digest}/signatures").json()["signatures"]
    assert served["valid"] is True
    (tmp_path / "run.json").write_text(json.dumps(run_record))
    (tmp_path / "run.json.dsse.json").write_text(json.dumps(served["envelope"]))
    (tmp_path / "signer.pub").write_text(served["publicKey"])
    empty_db = f"sqlite:///{tmp_path / 'nothing.db'}"
    args = [
        "verify-signatures",
        "--db",
        empty_db,
        "--record",
        str(tmp_path / "run.json"),
        "--public-key",
        str(tmp_path / "signer.pub"),
    ]
    ok = CliRunner().invoke(cli, args)
    assert ok.exit_code == 0 and "ok " in ok.output, ok.output
    run_record["spec"]["status"] = "timeout"  # one changed fact: the signature no longer covers it
    (tmp_path / "run.json").write_text(json.dumps(run_record))
    assert CliRunner().invoke(cli, args).exit_code == 1
