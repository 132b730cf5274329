"""Remote runners as subprocesses against a live server on 127.0.0.1: two keys replicate a run, a
killed runner's job is done by the other, and submissions over HTTP are checked like the CLI's."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from queue_kit import VECTOR_ADD, counts, vector_add_submission

from kernelindex.records.signing import new_private_key, private_key_to_pem, public_key_to_text
from kernelindex.services import harness_adapter as harness
from kernelindex.services import queue as service
from kernelindex.store.evidence.records import create_api_key
from kernelindex.store.reads import queue as reads
from kernelindex.web.app import create_app
from live_kit import serving

pytestmark = pytest.mark.slow


def _runner_key(store, folder, name: str) -> str:
    """A key file for a runner subprocess, registered on a machine of its own; returns the file."""
    private_key = new_private_key()
    path = folder / f"{name}.key"
    path.write_bytes(private_key_to_pem(private_key))
    service.register_runner(
        store, public_key_to_text(private_key.public_key()), label=name, machine=f"machine-{name}", hardware="cpu"
    )
    return str(path)


def _runner(url: str, key: str, *extra: str, **popen) -> subprocess.Popen:
    command = [sys.executable, "-m", "kernelindex.cli", "runner", "--server", url, "--key", key, *extra]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def _finish(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, (out, err)
    return json.loads(out.strip().splitlines()[-1])


def test_two_runners_with_different_keys_make_a_replicated_run(store, tmp_path):
    request_id = service.submit(store, vector_add_submission(replicas=2))
    keys = [_runner_key(store, tmp_path, name) for name in ("alpha", "beta")]
    with serving(create_app(store=store)) as url:
        runners = [_runner(url, key, "--once") for key in keys]
        outcomes = [_finish(process) for process in runners]
        assert all(o["accepted"] for o in outcomes), outcomes
        detail = httpx.get(f"{url}/api/v1/rerun-requests/{request_id}").json()
        assert detail["state"] == "done"
        assert [lease["evidence"] for lease in detail["leases"]] == ["replicated", "replicated"]
        signers = {lease["signatures"][0]["keyId"] for lease in detail["leases"] if lease["signatures"][0]["valid"]}
        assert len(signers) == 2
        page = httpx.get(url + detail["leases"][0]["runPage"]).text
        assert page.count('data-signature="valid"') >= 2  # its own signature, and both runners' in the queue panel
        for signer in signers:
            assert signer[:19] in page
        evidence = httpx.get(
            url + detail["leases"][1]["runPage"].replace("/runs/", "/api/v1/runs/") + "/evidence"
        ).json()
        assert evidence["level"] == "replicated"
        assert httpx.get(f"{url}/queue/{request_id}").status_code == 200
        assert request_id in httpx.get(f"{url}/queue").text


def _slow_solution(folder) -> dict:
    """The vector-add solution, but every call takes a while: time to kill its runner mid-job."""
    document = harness.inline_solution(VECTOR_ADD.parent.parent / "solutions" / "vector_add_torch" / "solution.json")
    document["name"] = "vector_add_slow"
    document["sources"] = [
        {
            "path": "add.py",
            "content": "import time\n\nimport torch\n\n\ndef run(x, y, z):\n    time.sleep(0.4)\n"
            "    torch.add(x, y, out=z)\n",
        }
    ]
    return document


def test_a_killed_runners_job_is_done_by_the_other(store, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELINDEX_LEASE_SECONDS", "3")
    request_id = service.submit(store, vector_add_submission(solution=_slow_solution(tmp_path)))
    first, second = (_runner_key(store, tmp_path, name) for name in ("first", "second"))
    with serving(create_app(store=store)) as url:
        doomed = _runner(url, first, "--poll", "0.2", start_new_session=True)
        deadline = time.monotonic() + 120
        lease = None
        while lease is None or lease.state != "active":  # until the doomed runner holds the job
            assert time.monotonic() < deadline and doomed.poll() is None, "the first runner never took the job"
            with store.engine.connect() as conn:
                lease = next(iter(reads.leases_of(conn, request_id)), None)
            time.sleep(0.1)
        os.killpg(doomed.pid, signal.SIGKILL)  # the runner and its harness processes die mid-job
        doomed.communicate(timeout=30)
        with store.engine.connect() as conn:
            expires = datetime.fromisoformat(reads.lease_row(conn, lease.id).expires_at.replace("Z", "+00:00"))
        time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.2)  # its lease's own deadline
        outcome = _finish(_runner(url, second, "--once"))
    assert outcome["accepted"] and outcome["requestState"] == "done"
    with store.engine.connect() as conn:
        leases = reads.leases_of(conn, request_id)
        row = reads.request_row(conn, request_id)
    assert [(lease.state, lease.attempt) for lease in leases] == [("expired", 1), ("completed", 2)]
    assert row.state == "done" and row.attempts == 2


def test_submissions_over_http(store):
    with store.begin() as conn:
        token = create_api_key(conn, "submitter", frozenset({"submit"}), daily_limit=3).token
        attest_only = create_api_key(conn, "attester", frozenset({"attest"})).token
    good = vector_add_submission()
    body = {
        "problem": good.problem_files,
        "solution": good.solution,
        "hardware": "cpu",
        "replicas": 2,
        "protocol": good.protocol,
    }
    with serving(create_app(store=store)) as url:

        def post(data, key=token, **kw):
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            return httpx.post(f"{url}/api/v1/rerun-requests", json=data, headers=headers, **kw)

        before = counts(store)
        assert post(body, key=None).status_code == 401
        assert post(body, key=attest_only).status_code == 403
        assert post({**body, "problem": "no_such_problem"}).json()["type"].endswith("unknown-problem")
        missing_entry = {
            **body,
            "solution": {**good.solution, "spec": {**good.solution["spec"], "entry_point": "x.py::run"}},
        }
        refused = post(missing_entry)
        assert refused.status_code == 422 and "x.py" in refused.json()["detail"]
        big = {**body, "solution": {**good.solution, "sources": [{"path": "add.py", "content": "#" * 600_000}]}}
        assert post(big).status_code == 413
        assert post({**body, "colour": "red"}).status_code == 400
        nested = httpx.post(
            f"{url}/api/v1/rerun-requests",
            content="[" * 100_000,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        assert nested.status_code == 400
        assert counts(store) == before
        created = post(body)
        assert created.status_code == 201
        request_id = created.json()["id"]
        listing = httpx.get(f"{url}/api/v1/rerun-requests?state=queued").json()
        assert [item["id"] for item in listing["items"]] == [request_id] and listing["counts"] == {"queued": 1}
        by_name = post({**body, "problem": "vector_add_f32"})
        assert by_name.status_code == 201
        assert post(body).status_code == 201
        assert post(body).status_code == 429  # the key's daily limit of 3
        assert (
            httpx.get(f"{url}/api/v1/rerun-requests?state=nonsense").status_code == 400
        )  # an unknown state word: the one 400 of every bad parameter
        assert httpx.get(f"{url}/api/v1/rerun-requests/unknown").status_code == 404
        lease = httpx.post(f"{url}/api/v1/runner/lease")
        assert lease.status_code == 401  # unsigned runner call


def _form(client: httpx.Client, path: str, fields: dict) -> httpx.Response:
    """Post a same-origin form the way the browser does: the page sets the anti-forgery cookie and
    carries the form's token (derived from that cookie) in a hidden field; the form sends both back."""
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/submit").text).group(1)
    return client.post(path, data={"csrf_token": token, **fields}, headers={"Sec-Fetch-Site": "same-origin"})


def test_submit_page_and_rerun_this_run(store, vector_suite):
    from sqlalchemy import select

    from kernelindex.store.tables import runs

    with store.begin() as conn:
        token = create_api_key(conn, "submitter", frozenset({"submit"})).token
    service.submit(store, vector_add_submission())  # the problem is known here from now on
    suite_run, _ = harness.record(store, vector_suite)
    from kernelindex import sample
    from kernelindex.store.writer import Writer

    seed = json.loads((Path(sample.__file__).parent / "sol-042-ac4k-submission-19969.json").read_text())
    with store.begin() as conn:
        imported = Writer(conn).add_run_bundle(seed)
    good = vector_add_submission()
    with serving(create_app(store=store)) as url, httpx.Client(base_url=url) as client:
        assert "Submit a kernel for verification" in client.get("/submit").text
        made = _form(
            client,
            "/submit",
            {
                "api_key": token,
                "problem": "vector_add_f32",
                "solution": json.dumps(good.solution),
                "hardware": "cpu",
                "replicas": "2",
            },
        )
        assert made.status_code == 303 and made.headers["location"].startswith("/queue/")
        assert (
            _form(
                client,
                "/submit",
                {"api_key": token, "problem": "vector_add_f32", "solution": "{", "hardware": "cpu", "replicas": "1"},
            ).status_code
            == 422
        )
        with store.engine.connect() as conn:
            run_id = conn.execute(select(runs.c.id).where(runs.c.run_digest == suite_run)).scalar_one()
        page = client.get(f"/runs/{run_id}").text
        assert "Rerun this run" in page and f'action="/runs/{suite_run}/rerun"' in page
        imported_page = client.get(f"/runs/{imported}").text  # an imported run whose sources are not here
        assert "Rerun requests" in imported_page and "Rerun this run" not in imported_page
        refused = _form(client, f"/runs/{imported}/rerun", {"api_key": token, "hardware": "cpu", "replicas": "1"})
        assert refused.status_code == 422 and "sources are not stored" in refused.text
        rerun = _form(client, f"/runs/{suite_run}/rerun", {"api_key": token, "hardware": "cpu", "replicas": "1"})
        assert rerun.status_code == 303
        request_id = rerun.headers["location"].rsplit("/", 1)[1]
        detail = client.get(f"/api/v1/rerun-requests/{request_id}").json()
    implementation = next(
        r for r in harness.evaluation_payload(vector_suite)["records"] if r["kind"] == "ImplementationRevision"
    )
    assert detail["rerunOf"] == suite_run and detail["state"] == "queued"
    assert detail["solutionDigest"] == implementation["spec"]["source"]["contentDigest"]


def test_hostile_runner_calls_get_clear_refusals(store):
    from kernelindex.client import ApiError
    from kernelindex.services.remote_runner import connect

    service.submit(store, vector_add_submission())
    private_key = new_private_key()
    service.register_runner(store, public_key_to_text(private_key.public_key()), label="h", machine="h", hardware="cpu")
    with serving(create_app(store=store)) as url:
        forged = {
            "X-Kernelindex-Key": "sha256:" + "0" * 64,
            "X-Kernelindex-Time": "yesterday",
            "X-Kernelindex-Signature": "!!",
        }
        assert httpx.post(f"{url}/api/v1/runner/lease", headers=forged).status_code == 401
        runner = connect(url, private_key)
        job = runner.api.lease()
        with pytest.raises(ApiError) as caught:
            runner.api.post_result(job["lease"], {"records": "x"}, {})
        assert caught.value.status == 422
        with pytest.raises(ApiError) as caught:  # the refused result closed the lease
            runner.api.heartbeat(job["lease"])
        assert caught.value.status == 409
        with pytest.raises(ApiError) as caught:
            runner.api.runner_blob("sha256:" + "1" * 64)
        assert caught.value.status == 404
        runner.close()
    assert counts(store)["runs"] == 0


def test_a_runner_runs_only_the_cases_it_is_given(store, tmp_path):
    """`runner --cases` (a case that runs out of memory here, left out): the server takes the result of just
    that case, with the suite of exactly it, as the lease's result."""
    second = "3a1f0e2c-0000-4000-8000-000000000002"
    request_id = service.submit(store, vector_add_submission())  # the request asks for both cases
    key = _runner_key(store, tmp_path, "narrow")
    with serving(create_app(store=store)) as url:
        outcome = _finish(_runner(url, key, "--once", "--cases", second[:36], "--memory-mb", "8192"))
        assert outcome["accepted"], outcome
        detail = httpx.get(f"{url}/api/v1/rerun-requests/{request_id}").json()
        suite = httpx.get(url + detail["leases"][0]["runPage"].replace("/runs/", "/api/v1/runs/")).json()
        stored = httpx.get(f"{url}/api/v1/runs", params={"limit": 50}).json()["items"]
    assert detail["state"] == "done" and len(stored) == 2, stored  # the one case's run and its suite's
    assert "1 of 2 cases" in suite["identity"]["workload"]["title"], suite["identity"]["workload"]


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def test_the_fork_server_and_its_workers_die_with_a_killed_runner(store, tmp_path):
    """The OOM killer's SIGKILL, on the runner alone (the fork server runs in a session of its own, so a
    signal to the runner's process group would not reach it): nothing the runner started stays behind."""
    service.submit(store, vector_add_submission(solution=_slow_solution(tmp_path)))
    key = _runner_key(store, tmp_path, "doomed")
    env = {k: v for k, v in os.environ.items() if k != "KERNELINDEX_HARNESS_SPAWN"}
    with serving(create_app(store=store)) as url:
        runner = _runner(url, key, "--sandbox", "off", "--poll", "0.2", env=env)
        try:
            deadline, workers, server = time.monotonic() + 120, [], None
            while not workers:  # until the fork server has forked a worker for the job
                assert time.monotonic() < deadline and runner.poll() is None, "the runner never ran a worker"
                servers = [p for p in _children(runner.pid) if b"forkserver" in _cmdline(p)]
                server = servers[0] if servers else None
                workers = _children(server) if server else []
                time.sleep(0.05)
            os.kill(runner.pid, signal.SIGKILL)
            runner.communicate(timeout=30)
            deadline = time.monotonic() + 10
            while any(_alive(p) for p in [server, *workers]) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert [p for p in [server, *workers] if _alive(p)] == []
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.communicate(timeout=30)


def _cmdline(pid: int) -> bytes:
    """A process's command line; empty once it has ended (a short-lived child may go between the listing
    and the read)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""
