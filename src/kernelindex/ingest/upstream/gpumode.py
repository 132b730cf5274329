"""GPU MODE KernelBot data (Hugging Face ``GPUMODE/kernelbot-data``, datasets-server row responses):
the ``leaderboards`` rows and a board's ``successful_submissions`` rows, into v1alpha1 records.

A leaderboard becomes an OperationSpec (its signature is not in the data: one opaque input of the
benchmark axes) and a WorkloadSuite of the benchmark cases its ranked runs report; a submission's
ranked run becomes an ImplementationRevision and a BenchmarkRun scored, like the leaderboard, by
the geometric mean of the cases in seconds. Only each user's best ranked run per board is kept.
"""

from __future__ import annotations

import re
from pathlib import Path

from kernelindex.ingest.upstream.common import (
    Provenance,
    Records,
    UpstreamError,
    iso_time,
    meta,
    need,
    read_json,
    record,
    retrieved_at,
    snapshot_files,
)
from kernelindex.records.canonical import digest
from kernelindex.records.hardware import architecture, vendor
from kernelindex.records.names import UPSTREAM_NAME_LIMIT, slug
from kernelindex.records.vocabulary import RunStatus

DATASET = "https://huggingface.co/datasets/GPUMODE/kernelbot-data"
PROVENANCE = Provenance(
    slug="gpumode-kernelbot",
    kind="leaderboard",
    name="GPU MODE KernelBot",
    url=DATASET,
    license="June 9 Researcher Reciprocity License v1.0",
    terms="Redistribution and public display permitted with notice retention and attribution; "
    "use for AI training requires researcher reciprocity.",
    attribution="GPU Mode and the KernelBot dataset",
)
_SPEC_ITEM = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*:\s*(-?\d+)\s*$")


def read(path: Path, *, retrieved: str | None = None) -> Records:
    files = snapshot_files(path, "*.json")
    boards: dict[int, dict] = {}
    submissions: list[tuple[Path, int, dict]] = []
    for file in files:
        rows = need(read_json(file), "rows", list, file, None)
        for index, wrapped in enumerate(rows):
            row = need(wrapped, "row", dict, file, None, f"rows[{index}]")
            if "leaderboard_id" in row or "submission_id" in row:
                submissions.append((file, index, row))
            elif "gpu_types" in row or "deadline" in row:
                need(row, "name", str, file, None, f"rows[{index}].row")
                gpu_types = row.get("gpu_types")
                if gpu_types is not None and not (
                    isinstance(gpu_types, list) and all(isinstance(g, str) for g in gpu_types)
                ):
                    raise UpstreamError(file, None, f"rows[{index}].row.gpu_types", "must be a list of GPU names")
                boards[need(row, "id", int, file, None, f"rows[{index}].row")] = row
            else:
                raise UpstreamError(file, None, f"rows[{index}].row", "neither a leaderboard nor a submission row")
    records = Records(Provenance(**{**PROVENANCE.__dict__, "retrieved_at": retrieved or retrieved_at(files[0])}))
    records.lines = len(submissions)
    best: dict[tuple[int, int], tuple[Path, int, dict]] = {}
    for file, index, row in submissions:
        where = f"rows[{index}].row"
        board, user = need(row, "leaderboard_id", int, file, None, where), need(row, "user_id", int, file, None, where)
        if need(row, "run_mode", str, file, None, where) != "leaderboard":
            records.skip("not a ranked (leaderboard) run")
            continue
        passed = need(row, "run_passed", bool, file, None, where)
        score = need(row, "run_score", (int, float), file, None, where) if passed else None
        if not passed:
            records.skip("ranked run did not pass")
            continue
        if board not in boards:
            raise UpstreamError(
                file, None, f"{where}.leaderboard_id", f"leaderboard {board} is not among the leaderboards rows given"
            )
        kept = best.get((board, user))
        if kept is None or score < kept[2]["run_score"]:
            if kept is not None:
                records.skip("not the user's best ranked run on the board")
            best[(board, user)] = (file, index, row)
        else:
            records.skip("not the user's best ranked run on the board")
    suites: dict[int, tuple[str, str, list]] = {}
    for (board, _), (file, index, row) in sorted(best.items()):
        cases = _cases(file, index, row)
        if board not in suites:
            suites[board] = _board(records, boards[board], cases, file)
        elif [c["axes"] for c in cases] != suites[board][2]:
            raise UpstreamError(
                file,
                None,
                f"rows[{index}].row.run_result",
                "its benchmark cases differ from another ranked run of the same board",
            )
        _run(records, file, index, row, boards[board], suites[board])
    return records


def _cases(file: Path, index: int, row: dict) -> list[dict]:
    where = f"rows[{index}].row.run_result"
    result = need(row, "run_result", dict, file, None, f"rows[{index}].row")
    try:
        count = int(need(result, "benchmark-count", str, file, None, where))
    except ValueError:
        raise UpstreamError(file, None, f"{where}.benchmark-count", "not a whole number") from None
    cases = []
    for n in range(count):
        text = need(result, f"benchmark.{n}.spec", str, file, None, where)
        axes = {}
        for part in text.split(";"):
            match = _SPEC_ITEM.match(part)
            if not match:
                raise UpstreamError(
                    file, None, f"{where}.benchmark.{n}.spec", f"expected 'name: integer; ...', got {text!r}"
                )
            axes[match.group(1)] = int(match.group(2))
        cases.append({"externalId": str(n), "axes": axes})
    if not cases:
        raise UpstreamError(file, None, f"{where}.benchmark-count", "the ranked run reports no benchmark cases")
    return cases


def _board(records: Records, board: dict, cases: list[dict], file: Path) -> tuple[str, str, list]:
    name = board["name"]
    names = sorted({axis for case in cases for axis in case["axes"]})
    operation = record(
        "OperationSpec",
        {
            "family": slug(name, limit=UPSTREAM_NAME_LIMIT).replace(".", "-").replace("_", "-"),
            "axes": {axis: {"role": "variable", "type": "integer"} for axis in names},
            "inputs": [{"name": "data", "tensor": {"dtype": "unspecified", "shape": names}}],
            "outputs": [{"name": "output", "tensor": {"dtype": "unspecified", "shape": names}}],
            "semantics": {"mutation": "none", "determinism": "unspecified"},
        },
        meta(f"gpumode-{name}", name, description=str(board.get("description") or "")[:2000]),
        file,
        None,
    )
    op_digest = records.parent(None, operation)
    suite = record(
        "WorkloadSuite",
        {
            "operationSpecDigest": op_digest,
            "cases": cases,
            "aggregation": {"metric": "score", "statistic": "geomean"},
            "correctness": {"comparator": "kernelbot_eval"},
        },
        meta(f"gpumode-{name}-suite", f"{name} · leaderboard suite"),
        file,
        None,
    )
    return op_digest, records.parent(None, suite), [c["axes"] for c in cases]


def _run(records: Records, file: Path, index: int, row: dict, board: dict, suite: tuple[str, str, list]) -> None:
    where = f"rows[{index}].row"
    op_digest, suite_digest, _ = suite
    sid = need(row, "submission_id", int, file, None, where)
    info = row.get("run_system_info") or {}
    if not isinstance(info, dict):
        raise UpstreamError(file, None, f"{where}.run_system_info", "must be an object")
    product = str(info.get("gpu") or (board.get("gpu_types") or ["unknown"])[0])
    arch = architecture(product)
    impl = record(
        "ImplementationRevision",
        {
            "projectRevision": {"version": f"submission-{sid}"},
            "operation": {"specDigest": op_digest},
            "callable": {"language": "python"},
            "support": {"dtypes": ["unspecified"], "productsTested": [product[:100]], "hardwareArchitectures": [arch]},
            "licensing": {},
        },
        meta(
            f"kernelbot-submission-{sid}",
            f"{board['name']} · submission {sid}",
            DATASET,
            description=str(row.get("file_name") or ""),
        ),
        file,
        None,
    )
    records.parent(None, impl)
    protocol = record(
        "BenchmarkProtocol",
        {
            "harness": {
                "name": "reference-kernels eval.py",
                "repository": "https://github.com/gpu-mode/reference-kernels",
            },
            "correctness": {"reference": "problem reference implementation", "comparator": "kernelbot_eval"},
            "measurement": {"timer": "wall_clock", "primaryStatistic": "geomean"},
            "comparability": {
                "family": "gpumode_kernelbot",
                "notes": "Aggregate leaderboard score in seconds over the problem's published benchmark "
                "suite, as computed by the upstream ranked run. Comparable only within one "
                "leaderboard problem and runner type.",
            },
        },
        meta("gpumode-kernelbot-leaderboard-geomean", "GPU MODE KernelBot ranked leaderboard run"),
        file,
        None,
    )
    environment = record(
        "ExecutionEnvironment",
        {
            "hardware": {"vendor": vendor(product), "product": product[:200], "architecture": arch},
            "software": {"framework": {"name": "torch", "version": str(info["torch"])[:100]}}
            if info.get("torch")
            else {},
        },
        meta(f"gpumode-kernelbot-{product}", f"KernelBot runner · {product}"),
        file,
        None,
    )
    score = float(row["run_score"])
    run = record(
        "BenchmarkRun",
        {
            "implementationDigest": digest(impl),
            "workloadDigest": suite_digest,
            "protocolDigest": digest(protocol),
            "environmentDigest": digest(environment),
            "status": RunStatus.PASSED.value,
            "observedAt": iso_time(
                row.get("run_end_time") or row.get("submission_time"), file, None, f"{where}.run_end_time"
            ),
            "measurements": [{"metric": "score", "statistic": "geomean", "unit": "s", "value": score}],
            "sourceNative": {
                "source": PROVENANCE.slug,
                "benchmark": str(board["name"])[:200],
                "externalId": f"submission/{sid}",
                "metrics": {"leaderboard_score_s": score},
            },
        },
        meta(f"kernelbot-{sid}-leaderboard", f"{board['name']} · submission {sid} · leaderboard score"),
        file,
        None,
    )
    records.run(None, run, protocol, environment)
