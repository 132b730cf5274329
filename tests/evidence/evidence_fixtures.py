"""Run bundles for evidence tests: the seed runs, and harness reruns of them as the harness writes them."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

from kernelindex.records.canonical import digest
from kernelindex.records.signing import key_id, new_private_key
from kernelindex.records.vocabulary import HARNESS_SOURCE
from kernelindex.store.writer import Writer

SAMPLE = Path(__file__).resolve().parents[2] / "src" / "kernelindex" / "sample"


def seed_bundle(name: str = "sol-042-ac4k-submission-19969.json") -> dict:
    return json.loads((SAMPLE / name).read_text())


def harness_bundle(original: dict, host: str, *, status: str = "passed", seed: int | None = None) -> dict:
    """A controlled rerun of ``original``'s implementation and workload, as the harness writes one:
    our own protocol, the runner machine's environment, source ``kernelindex-harness``."""
    rng = random.Random(seed)
    bundle = copy.deepcopy(original)
    protocol, environment, run = bundle["protocol"], bundle["environment"], bundle["run"]
    protocol["metadata"] = {"name": "kernelindex-harness-v1"}
    protocol["spec"] = {
        "harness": {"name": "kernelindex harness", "version": "1"},
        "correctness": {"reference": "definition reference", "comparator": "elementwise_close"},
        "measurement": {"timer": "cuda_events", "primaryStatistic": "median"},
        "comparability": {"family": "kernelindex_harness"},
    }
    environment["metadata"] = {"name": f"env-{host}"}
    environment["spec"] = {
        "hardware": {"vendor": "nvidia", "product": "NVIDIA H200", "architecture": "sm_90"},
        "software": {"libraries": {"torch": "2.13.0"}},
    }
    run["metadata"] = {"name": f"harness-{host}"}
    run["spec"] = {
        "implementationDigest": run["spec"]["implementationDigest"],
        "workloadDigest": run["spec"]["workloadDigest"],
        "protocolDigest": digest(protocol),
        "environmentDigest": digest(environment),
        "status": status,
        "timing": {"primaryStatistic": "median", "latencyNs": {"median": rng.randrange(7000, 9000)}},
        "sourceNative": {"source": HARNESS_SOURCE, "externalId": f"{host}-{rng.randrange(10**9)}"},
        "observedAt": "2026-11-29T16:%02d:%02d.000Z" % (rng.randrange(60), rng.randrange(60)),
    }
    return bundle


def add_harness_run(
    store, original: dict, host: str, *, key=None, sign: bool = True, status: str = "passed", seed=None
):
    """Store a harness run made on ``host`` with runner key ``key`` (signed unless told not to)."""
    from kernelindex.store.evidence.records import sign_stored_record

    key = key or new_private_key()
    bundle = harness_bundle(original, host, status=status, seed=seed)
    with store.begin() as conn:
        Writer(conn).add_run_bundle(bundle, runner_id=key_id(key.public_key()), runner_host=host)
        if sign:
            sign_stored_record(conn, digest(bundle["run"]), key, label=f"runner {host}")
    return digest(bundle["run"]), key
