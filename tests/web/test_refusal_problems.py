"""The web maps refusals once (web/problems.py): every code the write routes know gets the status
their own tables give it today, so moving a route onto ``refusal_problem`` changes no answer."""

from __future__ import annotations

import pytest

from kernelindex.records.refusal import BadParameter, RefusalKind
from kernelindex.search.query import QueryError
from kernelindex.store.evidence.records import EvidenceError
from kernelindex.store.queue.writes import QueueError
from kernelindex.store.reads.lookup import LookupFailed
from kernelindex.web.problems import HTTP_STATUS, lookup_problem, refusal_problem
from kernelindex.web.routes import evidence as evidence_routes
from kernelindex.web.routes import queue as queue_routes


def test_every_kind_has_a_status():
    assert set(HTTP_STATUS) == set(RefusalKind)


@pytest.mark.parametrize("code", sorted({*evidence_routes.STATUS, "unknown_request", "something_new"}))
def test_evidence_codes(code):
    problem = refusal_problem(EvidenceError(code, "why"))
    assert (problem.status, problem.slug, problem.detail) == (
        evidence_routes.STATUS.get(code, 400),
        code.replace("_", "-"),
        "why",
    )


@pytest.mark.parametrize("code", sorted({*queue_routes.STATUS, "something_new"}))
def test_queue_codes(code):
    problem = refusal_problem(QueueError(code, "why"))
    assert (problem.status, problem.slug, problem.detail) == (
        queue_routes.STATUS.get(code, 400),
        code.replace("_", "-"),
        "why",
    )


def test_lookups_and_queries_keep_their_problems():
    ambiguous = LookupFailed(RefusalKind.AMBIGUOUS, "run", "abcdef12", "2 runs", candidates=2, spelled="digest prefix")
    assert vars(refusal_problem(ambiguous)) == vars(lookup_problem(ambiguous))
    assert refusal_problem(ambiguous).status == 409
    query = refusal_problem(QueryError("too long"))
    assert (query.status, query.slug) == (400, "bad-query")  # what search_docs.answer_or_problem says


def test_a_views_bad_parameter_is_a_400_naming_the_parameter():
    problem = refusal_problem(BadParameter("bad-run-count", "compare takes 2 to 8 runs, got 1", parameter="run"))
    assert (problem.status, problem.slug, problem.detail, problem.extra) == (
        400,
        "bad-run-count",
        "compare takes 2 to 8 runs, got 1",
        {"parameter": "run"},
    )
