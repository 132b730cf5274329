"""`kernelindex keys`, `sign`, `verify-signatures` and `corrections` against a real SQLite store."""

from __future__ import annotations

import json
import re
import stat

from evidence_fixtures import add_harness_run, seed_bundle
from sqlalchemy import select, update
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.records.signing import sign_record_digest
from kernelindex.store.evidence.records import add_correction_request, authenticate, create_api_key
from kernelindex.store.evidence.tables import signatures
from kernelindex.store.tables import record_events

runner = CliRunner()


def _db(store) -> str:
    return str(store.engine.url)


def test_keys_sign_and_verify_offline(store, seed_digest, tmp_path, rng):
    made = runner.invoke(app, ["keys", "new", "runner-a", "--dir", str(tmp_path)])
    assert made.exit_code == 0, made.output
    private = tmp_path / "runner-a.key"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert runner.invoke(app, ["keys", "new", "runner-a", "--dir", str(tmp_path)]).exit_code == 1  # never overwrite
    kid = re.search(r"key id (sha256:[0-9a-f]{64})", made.output).group(1)

    signed = runner.invoke(app, ["sign", seed_digest, "--key", str(private), "--label", "runner a", "--db", _db(store)])
    assert signed.exit_code == 0, signed.output
    unknown = runner.invoke(app, ["sign", "sha256:" + "5" * 64, "--key", str(private), "--db", _db(store)])
    assert unknown.exit_code == 1 and "no stored record" in unknown.output
    listed = runner.invoke(app, ["keys", "list", "--db", _db(store)])
    assert kid in listed.output and "runner a" in listed.output

    ok = runner.invoke(app, ["verify-signatures", "--db", _db(store)])
    assert ok.exit_code == 0 and "1 valid, 0 invalid" in ok.output
    # Tamper with the stored envelope: offline verification catches it.
    from kernelindex.records.signing import private_key_from_pem

    key = private_key_from_pem(private.read_bytes())
    with store.begin() as conn:
        conn.execute(
            update(signatures).values(envelope=sign_record_digest(key, "sha256:" + "6" * 64, "BenchmarkRun", "x"))
        )
    bad = runner.invoke(app, ["verify-signatures", "--db", _db(store)])
    assert bad.exit_code == 1 and "BAD signature" in bad.output and "covers record" in bad.output


def test_export_file_signature_checks_offline(tmp_path):
    runner.invoke(app, ["keys", "new", "exporter", "--dir", str(tmp_path)])
    runner.invoke(app, ["keys", "new", "stranger", "--dir", str(tmp_path)])
    export = tmp_path / "export.jsonl"
    export.write_text('{"table": "sources", "row": {}}\n')
    db = f"sqlite:///{tmp_path / 'empty.db'}"
    assert runner.invoke(app, ["sign", "--file", str(export), "--key", str(tmp_path / "exporter.key")]).exit_code == 0
    good = runner.invoke(
        app, ["verify-signatures", "--db", db, "--file", str(export), "--public-key", str(tmp_path / "exporter.pub")]
    )
    assert good.exit_code == 0 and "ok " in good.output
    wrong_key = runner.invoke(
        app, ["verify-signatures", "--db", db, "--file", str(export), "--public-key", str(tmp_path / "stranger.pub")]
    )
    assert wrong_key.exit_code == 1
    export.write_text('{"table": "sources", "row": {"x": 1}}\n')
    altered = runner.invoke(
        app, ["verify-signatures", "--db", db, "--file", str(export), "--public-key", str(tmp_path / "exporter.pub")]
    )
    assert altered.exit_code == 1 and "BAD" in altered.output


def test_api_key_lifecycle(store):
    made = runner.invoke(
        app, ["keys", "api-key", "ci bot", "--scopes", "attest", "--daily-limit", "5", "--db", _db(store)]
    )
    assert made.exit_code == 0, made.output
    token = made.output.strip().splitlines()[-1]
    with store.begin() as conn:
        key_id = authenticate(conn, token, "attest")
    assert token not in runner.invoke(app, ["keys", "list", "--db", _db(store)]).output
    assert runner.invoke(app, ["keys", "api-key", "x", "--scopes", "root", "--db", _db(store)]).exit_code == 1
    assert runner.invoke(app, ["keys", "revoke", key_id, "--db", _db(store)]).exit_code == 0
    assert "revoked" in runner.invoke(app, ["keys", "list", "--db", _db(store)]).output
    assert runner.invoke(app, ["keys", "revoke", key_id, "--db", _db(store)]).exit_code == 1


def test_maintainer_answers_correction_requests(store, seed_digest, tmp_path, rng):
    with store.begin() as conn:
        reporter = create_api_key(conn, "reporter", frozenset({"report"}))
        first = add_correction_request(
            conn, seed_digest, "withdrawn_by_author", "author withdrew it", "retract", reporter.key_id
        )
    listed = runner.invoke(app, ["corrections", "list", "--db", _db(store)])
    assert first in listed.output and "1 request(s)" in listed.output
    done = runner.invoke(
        app, ["corrections", "resolve", first, "--retract", "--reason", "withdrawn", "--db", _db(store)]
    )
    assert done.exit_code == 0, done.output
    with store.begin() as conn:
        causes = [r.cause for r in conn.execute(select(record_events.c.cause))]
    assert causes == ["retracted"]
    again = runner.invoke(app, ["corrections", "resolve", first, "--reject", "--reason", "x", "--db", _db(store)])
    assert again.exit_code == 1 and "no open correction request" in again.output

    # Supersede: the maintainer stores a corrected bundle that names the old run.
    corrected = seed_bundle()
    corrected["run"]["spec"]["timing"]["latencyNs"]["mean"] += rng.randrange(1, 100)
    path = tmp_path / "corrected.json"
    path.write_text(json.dumps(corrected))
    with store.begin() as conn:
        second = add_correction_request(conn, seed_digest, "wrong_value", "mean is off", "supersede", reporter.key_id)
    twice = tmp_path / "twice.json"  # json.loads would keep the second run; a reader of the file sees the first
    twice.write_text(json.dumps(corrected)[:-1] + ', "run": {}}')
    refused = runner.invoke(
        app,
        ["corrections", "resolve", second, "--supersede-with", str(twice), "--reason", "x", "--db", _db(store)],
    )
    assert refused.exit_code == 1 and "duplicate key 'run'" in refused.output
    done = runner.invoke(
        app,
        ["corrections", "resolve", second, "--supersede-with", str(path), "--reason", "fixed mean", "--db", _db(store)],
    )
    assert done.exit_code == 0, done.output
    assert "accepted" in runner.invoke(app, ["corrections", "list", "--status", "all", "--db", _db(store)]).output


def test_sign_every_harness_run_of_a_key(store, tmp_path, rng):
    runner.invoke(app, ["keys", "new", "runner", "--dir", str(tmp_path)])
    from kernelindex.records.signing import private_key_from_pem

    key = private_key_from_pem((tmp_path / "runner.key").read_bytes())
    digests = [
        add_harness_run(store, seed_bundle(), f"h{i}", key=key, sign=False, seed=rng.randrange(2**32))[0]
        for i in range(2)
    ]
    signed = runner.invoke(app, ["sign", "--harness-runs", "--key", str(tmp_path / "runner.key"), "--db", _db(store)])
    assert signed.exit_code == 0 and all(d in signed.output for d in digests)


def test_attest_links_a_harness_repeat_and_refuses_bad_input(store, seed_digest, tmp_path, rng):
    from kernelindex.ranking.evidence_facts import evidence_for_run

    runner.invoke(app, ["keys", "new", "r", "--dir", str(tmp_path)])
    from kernelindex.records.signing import private_key_from_pem

    key = private_key_from_pem((tmp_path / "r.key").read_bytes())
    repeat, _ = add_harness_run(store, seed_bundle(), "host-z", key=key, seed=rng.randrange(2**32))
    made = runner.invoke(
        app,
        [
            "attest",
            seed_digest,
            "--reproduction",
            repeat,
            "--key",
            str(tmp_path / "r.key"),
            "--name",
            "harness on host-z",
            "--db",
            _db(store),
        ],
    )
    assert made.exit_code == 0, made.output
    with store.begin() as conn:
        assert evidence_for_run(conn, seed_digest).level == "verified"
    note = runner.invoke(
        app,
        [
            "attest",
            seed_digest,
            "--claim",
            "environment_note",
            "--note",
            "<b>x</b>",
            "--key",
            str(tmp_path / "r.key"),
            "--name",
            "n",
            "--db",
            _db(store),
        ],
    )
    assert note.exit_code == 1 and "plain text" in note.output


def test_verify_with_signatures_checks_them_offline(store, seed_digest, tmp_path):
    runner.invoke(app, ["keys", "new", "k", "--dir", str(tmp_path)])
    runner.invoke(app, ["sign", seed_digest, "--key", str(tmp_path / "k.key"), "--db", _db(store)])
    ok = runner.invoke(app, ["verify", "--signatures", "--db", _db(store)])
    assert ok.exit_code == 0, ok.output
    assert "signatures: 1 valid, 0 invalid" in ok.output
    as_json = runner.invoke(app, ["verify", "--signatures", "--json", "--db", _db(store)])
    assert json.loads(as_json.stdout)["signatures"] == {"valid": 1, "invalid": []}
    with store.begin() as conn:
        envelope = conn.execute(select(signatures.c.envelope)).scalar_one()
        envelope = dict(envelope, payloadType="text/plain")
        conn.execute(update(signatures).values(envelope=envelope))
    bad = runner.invoke(app, ["verify", "--signatures", "--db", _db(store)])
    assert bad.exit_code == 1 and "payloadType" in bad.output
