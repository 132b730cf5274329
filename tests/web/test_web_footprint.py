"""What a web worker holds in memory: the modules its app pulls in, and what the gunicorn master builds
before it forks the workers.

Each worker pays for every module in its import graph (issue #13: RSS after load <= 200 MiB over
all processes). These run in a fresh interpreter, so modules this test session imported do not count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from kernelindex.store.database import open_store
from kernelindex.web.server.workers import FORKING_APP, WORKER_CLASS, gunicorn_args

# Never needed to serve a page from a SQLite store without signatures: each is MiBs per worker.
KEPT_OUT = (
    "cryptography",  # imported where a key is used (records/signing.py)
    "sqlalchemy.dialects.postgresql",
    "psycopg",
    "alembic",  # `kernelindex serve` migrates before the workers start
    "kernelindex.harness",  # imported where a submission or a runner's result is checked (services/queue.py)
    "zstandard",  # imported where an export file is read (ingest/jsonlines.py)
    "numpy",
    "torch",
    "triton",
    "ray",
    "rich",
    # the app never imports the CLI (`kernelindex serve`'s own process holds the few CLI modules serve needs,
    # shared by the workers forked from it)
    "typer",
    "click",
    "kernelindex.cli",
)

SERVE_PAGES = """
import json, sys
from kernelindex.web.app import serving_app
from starlette.testclient import TestClient
client = TestClient(serving_app())
statuses = [client.get(path).status_code for path in ("/", "/api/v1/sources", "/api/v1/runs", "/?q=gemm")]
print(json.dumps({"statuses": statuses, "modules": sorted(sys.modules)}))
"""


def _fresh_interpreter(code: str, env: dict[str, str] | None = None) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env, timeout=120
    )
    return json.loads(result.stdout)


def _loaded(modules: list[str], top: str) -> list[str]:
    return [name for name in modules if name == top or name.startswith(top + ".")]


def test_a_worker_serving_pages_imports_nothing_it_does_not_use(tmp_path):
    open_store(str(tmp_path / "store.db")).close()  # migrated here, as `kernelindex serve` does
    env = {**os.environ, "KERNELINDEX_DATABASE_URL": str(tmp_path / "store.db")}
    seen = _fresh_interpreter(SERVE_PAGES, env)
    assert seen["statuses"] == [200, 200, 200, 200]
    assert "kernelindex.web.app" in seen["modules"] and "sqlalchemy.dialects.sqlite" in seen["modules"]
    assert {top: _loaded(seen["modules"], top) for top in KEPT_OUT if _loaded(seen["modules"], top)} == {}


def test_signatures_still_check_once_cryptography_is_imported_on_use():
    code = """
import json, sys
from kernelindex.records import signing
before = "cryptography" in sys.modules
key = signing.new_private_key()
digest = "sha256:" + "ab" * 32
envelope = signing.sign_record_digest(key, digest, "Run", "2026-12-01T00:00:00Z")
checked = signing.verify_envelope(envelope, signing.public_key_from_text(signing.public_key_to_text(key.public_key())))
other = signing.new_private_key().public_key()
try:
    signing.verify_envelope(envelope, other)
    refused = ""
except signing.SignatureError as exc:
    refused = str(exc)
print(json.dumps({"before": before, "digest": checked.record_digest, "refused": refused}))
"""
    seen = _fresh_interpreter(code)
    assert seen["before"] is False
    assert seen["digest"] == "sha256:" + "ab" * 32
    assert "no signature by key" in seen["refused"]


FORKED = """
import gc, json, os, threading
gc.disable()  # as the master does while it imports and builds the app
from kernelindex.web.app import forking_app
app = forking_app()
db = os.path.realpath(os.environ["KERNELINDEX_DATABASE_URL"])
fds = [os.path.realpath(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")]
env = app.state.templates.env
print(json.dumps({
    "store files open": [path for path in fds if path.startswith(db)],
    "threads": threading.active_count(),
    "templates": [len(env.cache), len(env.list_templates())],
    "frozen": gc.get_freeze_count(),
    "collecting": gc.isenabled(),
}))
"""


def test_the_gunicorn_master_builds_the_app_its_workers_are_forked_from(tmp_path):
    assert {f"--worker-class={WORKER_CLASS}", FORKING_APP, "--preload"} <= set(gunicorn_args("127.0.0.1", 8000, 2))
    open_store(str(tmp_path / "store.db")).close()
    env = {**os.environ, "KERNELINDEX_DATABASE_URL": str(tmp_path / "store.db")}
    seen = _fresh_interpreter(FORKED, env)
    # nothing that must not cross a fork: a connection to the store (its file held open), a thread
    assert seen["store files open"] == [] and seen["threads"] == 1
    loaded, templates = seen["templates"]
    assert loaded == templates > 10  # every template loaded once, for all the workers
    assert seen["frozen"] > 50_000 and seen["collecting"]  # the workers are forked collecting


def test_a_workers_app_is_left_out_of_the_collectors_full_scans(tmp_path):
    open_store(str(tmp_path / "store.db")).close()
    env = {**os.environ, "KERNELINDEX_DATABASE_URL": str(tmp_path / "store.db")}
    code = (
        "import gc, json; from kernelindex.web.app import serving_app; before = gc.get_freeze_count(); "
        "app = serving_app(); print(json.dumps([before, gc.get_freeze_count(), len(gc.get_objects())]))"
    )
    before, frozen, scanned = _fresh_interpreter(code, env)
    assert before == 0 and frozen > 50_000 and scanned < frozen // 10  # the app frozen; the collector walks little
