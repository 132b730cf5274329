"""A property-based fuzz of every route in the OpenAPI document (schemathesis) against a real
served app on a store with sample data: no answer is a 5xx, and every problem's ``type`` resolves.

Schemathesis draws each operation's parameters and bodies from the document itself, valid ones and
invalid ones; Hypothesis runs them seeded (``derandomize``) and bounded per operation, so a run
repeats and stays inside CI's time.
"""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("schema-fuzz")]

EXAMPLES = 10  # per operation and mode: about 40 operations x 2 modes x this, under a minute of CPU
PROBLEM = "application/problem+json"


def test_no_route_answers_a_5xx(live_server):
    schema = schemathesis.openapi.from_url(f"{live_server}/api/v1/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30, "the document lists every route"
    failures: list[str] = []
    types: dict[str, int] = {}
    calls = 0

    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
                database=None,
            )
            def fuzz(case) -> None:
                nonlocal calls
                calls += 1
                response = case.call(base_url=live_server, timeout=30)
                try:
                    case.validate_response(response, checks=[not_a_server_error])
                except Exception as exc:  # one line per failing operation, all reported at the end
                    failures.append(f"{operation.label}: {response.status_code} for {case.as_curl_command()}: {exc}")
                    return
                if response.headers.get("content-type", [""])[0].startswith(PROBLEM):
                    kind = response.json()["type"]
                    if kind not in types:
                        types[kind] = httpx.get(live_server + kind).status_code
                    if types[kind] != 200:
                        failures.append(f"{operation.label}: problem type {kind} answers {types[kind]}")

            try:
                fuzz()
            except Unsatisfiable:
                assert mode is GenerationMode.NEGATIVE, operation.label  # nothing to make invalid (no parameters)
            except Exception as exc:  # a case that could not even be built or sent
                failures.append(f"{operation.label} ({mode.value}): {type(exc).__name__}: {exc}")
    assert calls > len(operations) * 10
    assert failures == [], "\n".join(sorted(set(failures))[:20])
