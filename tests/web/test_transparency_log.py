"""The log's HTTP API over a store of real records, on SQLite and PostgreSQL: the signed
checkpoint opens with the verifier key it names, and every proof verifies with the independent
RFC 9162 verifier of ``tests/rfc9162_kit.py`` against the checkpoint's root."""

from __future__ import annotations

import base64
import random

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from kernelindex.records.checkpoint import open_checkpoint
from kernelindex.records.signing import new_private_key
from kernelindex.services.log_checkpoints import CheckpointSigner
from kernelindex.store.tables import runs
from kernelindex.web.app import create_app
from rfc9162_kit import rfc_leaf, root_from_path, roots_from_consistency


@pytest.fixture
def log_client(web_filled):
    app = create_app(store=web_filled[0])
    app.state.log_signer = CheckpointSigner(new_private_key(), "test.kernelindex/log")
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c, web_filled[0]


def test_checkpoint_is_a_signed_note_of_the_whole_tree(log_client):
    client, _ = log_client
    body = client.get("/api/v1/log/checkpoint").json()
    checkpoint = open_checkpoint(body["note"], body["verifierKey"])
    assert (checkpoint.origin, checkpoint.size, checkpoint.root.hex()) == (
        "test.kernelindex/log",
        body["size"],
        body["rootHash"],
    )
    assert body["size"] > 0
    note = client.get("/api/v1/log/checkpoint.txt")
    assert note.headers["content-type"].startswith("text/plain") and note.text == body["note"]
    tampered = body["note"].replace(f"\n{body['size']}\n", f"\n{body['size'] - 1}\n")
    with pytest.raises(ValueError):
        open_checkpoint(tampered, body["verifierKey"])


def test_every_runs_inclusion_proof_verifies_independently(log_client):
    client, store = log_client
    checkpoint = client.get("/api/v1/log/checkpoint").json()
    root = bytes.fromhex(checkpoint["rootHash"])
    with store.read() as conn:
        digests = list(conn.execute(select(runs.c.run_digest)).scalars())
    assert digests
    for digest in digests:
        proof = client.get("/api/v1/log/proof/inclusion", params={"digest": digest, "size": checkpoint["size"]}).json()
        leaf = rfc_leaf(bytes.fromhex(digest.removeprefix("sha256:")))
        assert proof["leafHash"] == leaf.hex() and proof["table"] == "runs"
        path = [bytes.fromhex(p) for p in proof["proof"]]
        assert root_from_path(proof["leafIndex"], checkpoint["size"], leaf, path) == root


def test_consistency_proofs_verify_independently(log_client):
    client, _ = log_client
    size = client.get("/api/v1/log/checkpoint").json()["size"]
    rng = random.Random(34)
    for old in {1, size - 1, *(rng.randrange(1, size) for _ in range(20))}:
        if not 0 < old < size:
            continue
        proof = client.get("/api/v1/log/proof/consistency", params={"from": old, "to": size}).json()
        old_root, new_root = bytes.fromhex(proof["fromRoot"]), bytes.fromhex(proof["toRoot"])
        got = roots_from_consistency(old, size, old_root, [bytes.fromhex(p) for p in proof["proof"]])
        assert got == (old_root, new_root)
        whole = client.get("/api/v1/log/proof/inclusion", params={"digest": "x" * 8}).status_code
        assert whole == 404


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/api/v1/log/proof/inclusion?digest=sha256:" + "0" * 64, 404),
        ("/api/v1/log/proof/inclusion", 400),
        ("/api/v1/log/proof/inclusion?digest=a&size=-1", 400),
        ("/api/v1/log/proof/inclusion?digest=a&size=9223372036854775808", 400),
        ("/api/v1/log/proof/consistency?from=5&to=2", 400),
        ("/api/v1/log/proof/consistency?from=99999999", 400),
        ("/api/v1/log/proof/consistency?from=abc", 400),
        ("/api/v1/log/checkpoint?size=3", 400),
    ],
)
def test_bad_requests_are_problems(log_client, url, status):
    client, _ = log_client
    answer = client.get(url)
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith("application/problem+json")


@pytest.fixture
def private_log_client(tmp_path):
    """A store of its own (the session's shared one must not gain a retraction other tests would see)."""
    import random
    import secrets

    from web_storefill import fill

    from kernelindex.store.database import open_store

    store = open_store(f"sqlite:///{tmp_path / 'log.db'}")
    fill(store, random.Random(secrets.randbits(32)).randrange(2**32))
    app = create_app(store=store)
    app.state.log_signer = CheckpointSigner(new_private_key(), "test.kernelindex/log")
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c, store
    store.close()


def test_a_store_write_moves_the_checkpoint_and_old_checkpoints_stay_consistent(private_log_client):
    client, store = private_log_client
    before = client.get("/api/v1/log/checkpoint").json()
    from kernelindex.store.writer import Writer

    with store.begin() as conn:
        run_id = conn.execute(select(runs.c.id).limit(1)).scalar_one()
        Writer(conn).retract_run(run_id, "test: a retraction is a record too")
    after = client.get("/api/v1/log/checkpoint").json()
    assert after["size"] == before["size"] + 1
    proof = client.get("/api/v1/log/proof/consistency", params={"from": before["size"], "to": after["size"]}).json()
    old_root = base64.b64decode(before["note"].split("\n")[2])
    assert roots_from_consistency(
        before["size"], after["size"], old_root, [bytes.fromhex(p) for p in proof["proof"]]
    ) == (
        old_root,
        bytes.fromhex(after["rootHash"]),
    )


def test_the_run_page_and_its_json_show_the_runs_leaf_and_proof(log_client):
    client, store = log_client
    with store.read() as conn:
        run_id, digest = conn.execute(select(runs.c.id, runs.c.run_digest).limit(1)).one()
    proof = client.get("/api/v1/log/proof/inclusion", params={"digest": digest}).json()
    view = client.get(f"/api/v1/runs/{run_id}").json()
    assert view["log"]["leafIndex"] == proof["leafIndex"]
    assert view["log"]["proof"].endswith(f"/api/v1/log/proof/inclusion?digest={digest}")
    page = client.get(f"/runs/{run_id}").text
    assert f'<span data-field="log-index">{proof["leafIndex"]}</span>' in page
    assert f"/api/v1/log/proof/inclusion?digest={digest}" in page


def test_the_signers_watcher_ends_with_its_app(web_filled):
    """An app that served a checkpoint leaves no polling thread behind once it shuts down (many apps
    made over one store would otherwise share its connections with pollers nobody stops)."""
    import threading

    app = create_app(store=web_filled[0])
    app.state.log_signer = CheckpointSigner(new_private_key(), "test.kernelindex/log")
    with TestClient(app, raise_server_exceptions=False) as c:
        assert c.get("/api/v1/log/checkpoint").status_code == 200
        watcher = app.state.log_signer._watcher
        assert watcher is not None and watcher.is_alive()
    assert not watcher.is_alive() and watcher not in threading.enumerate()
