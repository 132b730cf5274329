"""The one place the queue, the runner and the campaign call the harness.

Everything else in the rerun queue talks in plain data (file maps, JSON documents, record
dicts); this module turns that data into the harness's objects, runs ``evaluate`` and turns a
suite result into records. Keeping these calls here lets the harness change inside without
the queue noticing.
"""

from __future__ import annotations

import base64
import json
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kernelindex.formats.errors import FormatError
from kernelindex.formats.problem import load_problem
from kernelindex.formats.records import records_for, sources_bundle, workload_suite
from kernelindex.formats.solution import load_solution
from kernelindex.harness.records import SOURCE_KIND, SOURCE_NAME, SOURCE_SLUG, evaluation_records
from kernelindex.harness.scores import CaseScore, suite_score
from kernelindex.records.canonical import digest

if TYPE_CHECKING:  # the runner (and NumPy with it) loads when a case is run: web workers never run one
    from kernelindex.harness.runner import EvalOptions, SuiteResult

__all__ = ["FormatError"]

PROBLEM_FILES = ("definition.json", "workload.jsonl")


def problem_files(folder: str | Path) -> dict[str, str]:
    """The files of a problem folder that a runner needs, as text, after checking the folder loads."""
    folder = Path(folder)
    load_problem(folder)
    return {name: (folder / name).read_text(encoding="utf-8") for name in PROBLEM_FILES}


def write_problem(files: Mapping[str, str], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in PROBLEM_FILES:
        (folder / name).write_text(files[name], encoding="utf-8")
    return folder


def problem_summary(files: Mapping[str, str]) -> tuple[str, list[str]]:
    """(definition name, case uuids) of a problem given as files; FormatError when it doesn't load
    or its records cannot be made (what a run of it posts)."""
    with tempfile.TemporaryDirectory(prefix="kernelindex-problem-") as tmp:
        problem = load_problem(write_problem(files, Path(tmp) / "problem"))
        records_for(problem)
        return problem.definition.name, [case.uuid for case in problem.cases]


def expected_problem_digests(files: Mapping[str, str], ran: list[str] | None = None) -> set[str]:
    """Digests of the OperationSpec, WorkloadCases and WorkloadSuite a correct run of this problem posts;
    a run of some of its cases (``ran``: uuids) posts the suite of exactly those too."""
    with tempfile.TemporaryDirectory(prefix="kernelindex-problem-") as tmp:
        problem = load_problem(write_problem(files, Path(tmp) / "problem"))
        made = records_for(problem)
        expected = {digest(record) for record in made.all()}
        if ran is not None and set(ran) != {c.uuid for c in problem.cases}:
            chosen = [c for c in problem.cases if c.uuid in set(ran)]
            op = digest(made.operation)
            expected.add(digest(workload_suite(problem.definition, chosen, op, total=len(problem.cases))))
        return expected


def inline_solution(path: str | Path) -> dict[str, Any]:
    """solution.json with every source's content inlined (sources beside the file are read)."""
    solution = load_solution(path)
    document = dict(solution.raw)
    document["sources"] = [{"path": s.path, "content": s.content} for s in solution.sources]
    return document


def write_solution(document: Mapping[str, Any], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "solution.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def solution_bundle(document: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
    """(the sources bundle an ImplementationRevision names by digest, facts about the solution).

    Raises FormatError when the document is not a loadable solution (entry point among its sources).
    """
    with tempfile.TemporaryDirectory(prefix="kernelindex-solution-") as tmp:
        solution = load_solution(write_solution(document, Path(tmp)))
    facts = {
        "name": solution.name,
        "definition": solution.definition,
        "entry_point": solution.entry_point,
        "source_bytes": sum(len(s.content.encode()) for s in solution.sources),
    }
    return sources_bundle(solution), facts


def evaluation_options(
    protocol: Mapping[str, Any], device: str, cases: list[str] | None = None, memory_bytes: int | None = None
) -> EvalOptions:
    """The harness options of a job's protocol. The sandbox mode, the memory cap of each worker and the blob
    root are the runner's own (``sandbox``, ``memory_mb`` and ``blob_root`` in the protocol as the runner
    passes it on, never the server's word); without them the sandbox is required, the harness's default
    cap applies and the blob root is the worker's KERNELINDEX_BLOB_ROOT. ``memory_bytes``: the host memory
    the evaluation is granted (a Ray task's), which its memory plan keeps within."""
    from kernelindex.harness.runner import EvalOptions

    memory = protocol.get("memory_mb")
    options = EvalOptions(
        device=device,
        rounds=int(protocol["rounds"]),
        warmup=int(protocol["warmup"]),
        iterations=int(protocol["iterations"]),
        timeout_s=float(protocol["timeout_s"]),
        cases=cases,
        sandbox=str(protocol.get("sandbox", "required")),
        blob_root=protocol.get("blob_root"),
        memory_budget_bytes=memory_bytes,
    )
    return replace(options, memory_limit_mb=int(memory)) if memory else options


def planned_task_bytes(
    files: Mapping[str, str],
    protocol: Mapping[str, Any],
    device: str,
    cases: list[str] | None = None,
    offered: int | None = None,
) -> int:
    """Host memory an evaluation of these cases of this problem needs under this protocol, by the harness's
    own plan fitted to ``offered`` bytes (a node's memory; None: as the cases want it): what a Ray task asks
    its scheduler for, so tasks that would over-commit a node wait instead of meeting the OOM killer. The
    task, granted exactly this, fits to the same plan. Raises memory.DoesNotFit where no plan fits."""
    from kernelindex.harness import memory
    from kernelindex.harness.runner import memory_plan

    with tempfile.TemporaryDirectory(prefix="kernelindex-problem-") as tmp:
        problem = load_problem(write_problem(files, Path(tmp) / "problem"))
    options = evaluation_options(protocol, device, cases, offered)
    chosen = [problem.case(uuid) for uuid in cases] if cases else problem.cases
    plan = memory_plan(problem, options, None, chosen)
    return memory.task_bytes(plan, device)


def pick_cases(cases: list[str], wanted: list[str]) -> list[str]:
    """The problem's case uuids that ``wanted`` names (whole uuids or unique prefixes, as ``eval --cases``
    takes them), in the order given; ValueError naming the first that names none or several."""
    picked = []
    for want in wanted:
        found = [c for c in cases if c == want] or [c for c in cases if want and c.startswith(want)]
        if len(found) != 1:
            problem = "no case" if not found else f"{len(found)} cases"
            raise ValueError(f"case {want!r}: {problem} of the problem's {len(cases)} start with it")
        picked.append(found[0])
    return list(dict.fromkeys(picked))


def narrowed_cases(job_cases: list[str] | None, mine: list[str] | None) -> list[str] | None:
    """The cases a runner runs of a job: the job's (all when it names none), kept to the runner's own
    ``--cases`` prefixes when it has some; ValueError when the two leave none."""
    if not mine:
        return job_cases
    if job_cases is None:
        return mine
    kept = [c for c in job_cases if any(c.startswith(p) for p in mine)]
    if not kept:
        raise ValueError(f"none of this runner's --cases ({', '.join(mine)}) is among the job's cases")
    return kept


SANDBOX_MODES = ("required", "auto", "off")


def sandbox_refusal(mode: str) -> str | None:
    """Why runs cannot start in ``mode`` here (None when they can): a runner or campaign that requires
    the sandbox refuses up front, before it leases a job or starts a worker, instead of failing each run."""
    from kernelindex.harness import sandbox

    if mode not in SANDBOX_MODES:
        return f"--sandbox must be one of {', '.join(SANDBOX_MODES)}, not {mode!r}"
    usable, why = sandbox.available()
    if mode == "required" and not usable:
        return (
            f"no sandbox here ({why}): runs would be reproducible, not verified; fix that, or pass --sandbox auto "
            "to run them unverified"
        )
    return None


def missing_devices(devices: list[str]) -> list[str]:
    """The ``cuda:N`` devices of ``devices`` this machine lacks, so a runner refuses to start rather
    than lease jobs it can only give back. Counting GPUs does not start a CUDA context."""
    wanted = [d for d in devices if d.startswith("cuda")]
    if not wanted:
        return []
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return [d for d in wanted if int(d.partition(":")[2] or 0) >= count]


def run(
    problem_dir: Path, solution_path: Path, options: EvalOptions, progress: Callable[[Any], None] | None = None
) -> SuiteResult:
    from kernelindex.harness.runner import evaluate

    return evaluate(load_problem(problem_dir), load_solution(solution_path), options, progress=progress)


def run_many(problem_dir: Path, solution_paths: list[Path], options: EvalOptions) -> list[SuiteResult]:
    """Several solutions of one problem in one harness call (`runner.evaluate_many`), a suite result each."""
    from kernelindex.harness.runner import evaluate_many

    return evaluate_many(load_problem(problem_dir), [load_solution(path) for path in solution_paths], options)


def merge(parts: list[SuiteResult]) -> SuiteResult:
    """One suite result from batches of cases of the same problem and solution, in workload order. A blob that
    two batches read with different contents (its file changed in between) is refused (ValueError): no one
    record could say what its cases were given."""
    order = {case.uuid: n for n, case in enumerate(parts[0].problem.cases)}
    cases = sorted((c for part in parts for c in part.cases), key=lambda c: order[c.case.uuid])
    first = parts[0]
    blob_digests: dict[str, str] = {}
    for part in parts:
        for path, read in part.blob_digests.items():
            if blob_digests.setdefault(path, read) != read:
                raise ValueError(
                    f"safetensors file {path} changed between batches: read as {blob_digests[path]}, then {read}"
                )
    return replace(
        first,
        cases=cases,
        options=replace(first.options, cases=None),
        # as runner.evaluate scores a suite: every case that ran carries its score
        score=suite_score(cast(list[CaseScore], [c.score for c in cases]), [c.passed for c in cases]),
        started_at=min(p.started_at for p in parts),
        finished_at=max(p.finished_at for p in parts),
        blob_digests=blob_digests,
    )


def evaluation_payload(suite: SuiteResult) -> dict[str, Any]:
    """The records of an evaluation as JSON a runner posts: records (the suite of just the cases that ran
    too, when they are not all of the problem's), run bundles and artifacts."""
    records = evaluation_records(suite)
    return {
        "records": records.records(),
        "bundles": records.bundles(),
        "suiteRun": digest(records.suite_run),
        "artifacts": [
            {
                "runDigest": a.run_digest,
                "role": a.role,
                "kind": a.kind,
                "mediaType": a.media_type,
                "content": base64.b64encode(a.content).decode("ascii"),
            }
            for a in records.artifacts
        ],
    }


def record(
    store, suite: SuiteResult, *, runner_id: str | None = None, runner_host: str | None = None, private_key=None
) -> tuple[str, list[str]]:
    """Store an evaluation through the one use case (records, signatures, leader events in one
    transaction): (suite run digest, every run digest stored)."""
    from kernelindex.services.evaluations import record_evaluation

    recorded = record_evaluation(store, suite, runner_id=runner_id, runner_host=runner_host, private_key=private_key)
    return recorded.stored.suite_run_digest, list(recorded.stored.run_ids)


SOURCE = (SOURCE_SLUG, SOURCE_KIND, SOURCE_NAME)
