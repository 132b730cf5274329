"""Tables of the rerun queue: registered runner keys, rerun requests and their leases
(revision 0500_rerun_queue, on the store's shared ``metadata``).

These are operational rows, not records: a request moves queued -> leased -> done | failed |
cancelled, a lease moves active -> completed | expired | refused | cancelled. What a runner
produced is stored as ordinary records (runs, artifacts, signatures); a lease only names the
digests. The problem and the solution a request names are artifacts (content-addressed), so
two requests for the same sources share one copy.
"""

from __future__ import annotations

from sqlalchemy import JSON, Column, ForeignKey, Index, Integer, String, Table, Text

from kernelindex.store.tables import DIGEST, ID, TIME, metadata

runner_keys = Table(
    "runner_keys",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("key_id", DIGEST, nullable=False, unique=True),  # sha256 of the raw Ed25519 public key
    Column("public_key", String(64), nullable=False),  # base64 of the raw 32 bytes
    Column("label", String(200), nullable=False),
    Column("machine", String(300), nullable=False),  # the host its runs are stored under (runner_host)
    Column("hardware", String(120), nullable=False),  # GPU product it serves, or "cpu"
    Column("created_at", TIME, nullable=False),
    Column("revoked_at", TIME),
)

rerun_requests = Table(
    "rerun_requests",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", ID, nullable=False, unique=True),
    Column("problem_name", String(300), nullable=False),  # the definition's name
    Column("problem_digest", DIGEST, nullable=False),  # artifact: the problem folder's files
    Column("solution_name", String(300), nullable=False),
    Column("solution_digest", DIGEST, nullable=False, index=True),  # artifact: the sources bundle
    Column("document_digest", DIGEST, nullable=False),  # artifact: solution.json with its sources inline
    Column("entry_point", String(300), nullable=False),
    Column("hardware", String(120), nullable=False),  # GPU product wanted, or "cpu"
    Column("replicas", Integer, nullable=False),  # independent runner keys that must complete it
    Column("protocol", JSON, nullable=False),  # rounds, warmup, iterations, timeout
    Column("state", String(20), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("max_attempts", Integer, nullable=False),
    Column("submitted_by", String(200), nullable=False),  # "cli" or the API key id
    Column("rerun_of", DIGEST),  # the run this request repeats, when it came from "Rerun this run"
    Column("created_at", TIME, nullable=False),
    Column("updated_at", TIME, nullable=False),
    Column("finished_at", TIME),
    Column("failure", Text),
)

rerun_leases = Table(
    "rerun_leases",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", ID, nullable=False, unique=True),
    Column("request_id", ID, ForeignKey("rerun_requests.id"), nullable=False, index=True),
    Column("runner_key_id", DIGEST, ForeignKey("runner_keys.key_id"), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("state", String(20), nullable=False),
    Column("leased_at", TIME, nullable=False),
    Column("heartbeat_at", TIME, nullable=False),
    Column("expires_at", TIME, nullable=False),
    Column("finished_at", TIME),
    Column("reason", Text),
    Column("suite_run_digest", DIGEST),
    Column("run_digests", JSON),  # every run the completed lease stored
    Column("timings", JSON),  # seconds: queue wait, harness, upload (as the runner and server saw them)
)

# The lease read: the oldest queued request for a hardware; the expiry sweep: active leases past due.
Index("ix_rerun_requests_state_hardware", rerun_requests.c.state, rerun_requests.c.hardware, rerun_requests.c.seq)
Index("ix_rerun_leases_state_expires", rerun_leases.c.state, rerun_leases.c.expires_at)
