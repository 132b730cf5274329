"""Storing what the harness built: an evaluation's records, or a problem folder's records.

Nothing here imports the harness: the harness builds plain data (`harness.records`), this module
writes it through the store's writer on a connection the caller holds, so a use case can store
an evaluation, sign its runs and append leader changes in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernelindex.records.canonical import digest
from kernelindex.store.writer import Writer

if TYPE_CHECKING:
    from sqlalchemy import Connection


@dataclass
class StoredEvaluation:
    run_ids: dict[str, str | None]  # run digest -> stored id (None: that digest was already stored)
    suite_run_digest: str
    case_run_digests: list[str]

    @property
    def new_runs(self) -> int:
        return sum(1 for v in self.run_ids.values() if v)


def store_evaluation(conn: Connection, evaluation: Any, private_key=None) -> StoredEvaluation:
    """Store an evaluation's records (a `harness.records.EvaluationRecords`) on `conn`, and sign
    its runs with the runner's key when one is given (then the key id is the runner id).

    Idempotent: the same records again store nothing new. The caller owns the transaction.
    """
    from kernelindex.store.evidence.records import sign_stored_record

    runner_id, runner_host = evaluation.runner_id, evaluation.runner_host
    if private_key is not None:
        from kernelindex.records.signing import key_id

        runner_id = key_id(private_key.public_key())
    writer = Writer(conn)
    writer.ensure_source(*evaluation.source)
    for record in evaluation.records():
        writer.add_record(record)
    writer.add_artifact(
        run_id=None,
        role="source",
        kind="implementation_source",
        media_type="application/json",
        content=evaluation.sources,
    )
    run_ids: dict[str, str | None] = {}
    for bundle in evaluation.bundles():
        run_ids[digest(bundle["run"])] = writer.add_run_bundle(bundle, runner_id=runner_id, runner_host=runner_host)
    for artifact in evaluation.artifacts:
        run_id = run_ids.get(artifact.run_digest)
        if run_id:
            writer.add_artifact(
                run_id=run_id,
                role=artifact.role,
                kind=artifact.kind,
                media_type=artifact.media_type,
                content=artifact.content,
            )
    if private_key is not None:
        for run_digest in run_ids:
            sign_stored_record(conn, run_digest, private_key)
    return StoredEvaluation(run_ids, digest(evaluation.suite_run), [digest(r) for r in evaluation.case_runs])


def store_problem_records(conn: Connection, records: list[dict], where: str):
    """Store a problem folder's records (OperationSpec, WorkloadCases, WorkloadSuite) on `conn`.

    Returns an `ImportReport`; raises `ImportFailed` naming the record that does not fit.
    """
    from kernelindex.ingest.catalog import ImportReport
    from kernelindex.ingest.problems import ImportFailed, ImportProblem
    from kernelindex.store.rows import RowError

    report = ImportReport(where)
    writer = Writer(conn)
    for record in records:
        report.lines += 1
        try:
            writer.add_record(record)
        except RowError as exc:
            raise ImportFailed([ImportProblem(where, None, exc.field, exc.reason)]) from None
    report.absorb(writer)
    return report


def import_problem_folder(store, path, blob_root: str | None = None) -> Any:
    """`kernelindex import PROBLEM_DIR`: the folder's records (`formats.records.problem_records`),
    stored in one transaction. A folder that does not parse raises `ImportFailed`."""
    from kernelindex.formats.errors import FormatError
    from kernelindex.formats.records import problem_records
    from kernelindex.ingest.problems import ImportFailed, ImportProblem
    from kernelindex.records.errors import RecordError

    try:
        records = problem_records(path, blob_root)
    except RecordError as exc:
        raise ImportFailed([ImportProblem(str(path), None, None, str(exc))]) from None
    except FormatError as exc:
        raise ImportFailed([ImportProblem(exc.file, exc.line, exc.field, exc.reason)]) from None
    with store.begin() as conn:
        return store_problem_records(conn, records, str(path))
