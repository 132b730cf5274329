"""Canonical JSON (RFC 8785) and the digests and keys computed from it.

These functions are the contract with the public KernelIndex site: a digest computed here must
equal the one the site publishes for the same record, byte for byte.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import rfc8785

from kernelindex import API_VERSION

DIGEST_PREFIX = "sha256:"


def canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes of a JSON value (sorted keys, no whitespace, ECMAScript numbers)."""
    return rfc8785.dumps(value)


def sha256_digest(data: bytes) -> str:
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def digest(record: Mapping[str, Any]) -> str:
    """Content digest of a record: metadata is left out so a retitle keeps the identity."""
    body = {
        "apiVersion": record.get("apiVersion", API_VERSION),
        "kind": record["kind"],
        "spec": record["spec"],
    }
    return sha256_digest(canonical_json(body))


def correctness_key(correctness: Any) -> str:
    """Key of a workload case's correctness policy (``workloadCase.spec.correctness``)."""
    return sha256_digest(canonical_json({"correctness": correctness}))


def metric_key(metric: str | None, statistic: str | None, unit: str | None) -> str:
    """``metric:statistic:unit`` of a run's primary metric, or ``none`` when it has none."""
    if not metric or not statistic or not unit:
        return "none"
    return f"{metric}:{statistic}:{unit}"


def comparison_key(
    *,
    operation: str | None,
    workload: str,
    protocol: str,
    environment: str,
    correctness: str | None,
    metric: str,
) -> str:
    """The cohort key: runs are ranked only against runs with the same key.

    The implementation is deliberately absent: implementations are what a cohort compares.
    """
    body = {
        "v": 1,
        "operation": operation,
        "workload": workload,
        "protocol": protocol,
        "environment": environment,
        "correctness": correctness,
        "metric": metric,
    }
    return sha256_digest(canonical_json(body))
