"""Our two solutions run through the harness itself (own processes, seeded inputs, checked timed calls)
on scaled-down copies of the packs written into tmp_path."""

from __future__ import annotations

from scaled_packs import write_scaled_pack

from kernelindex import kernels, problems
from kernelindex.formats.problem import load_problem
from kernelindex.formats.solution import load_solution
from kernelindex.harness.runner import EvalOptions, evaluate

QUICK = EvalOptions(device="cpu", rounds=2, warmup=1, iterations=3, timeout_s=240)


def _assert_all_passed(suite, expected_cases):
    assert [c.case.uuid for c in suite.cases] == expected_cases
    for result in suite.cases:
        assert result.status == "PASSED", f"{result.case.uuid}: {result.status}\n{result.log[-2000:]}"
        assert result.outputs and all(o.matched_ratio >= 0.99 for o in result.outputs)
        assert len(result.samples_ns) == QUICK.iterations and all(s > 0 for s in result.samples_ns)
    assert suite.score.passed == len(expected_cases)


def test_token_scatter_solution_passes_scaled_cases(tmp_path):
    # case 11 (N=215) and case 7 (N=2048) are the precision-critical shapes; case 14 the smallest
    uuids = [
        "8582f851-03e2-5a0f-9702-b4f4de4786fc",
        "62f47880-d869-5609-8768-1e35702f9c32",
        "4a23c849-8559-5cfd-862c-7ad61fb4038d",
    ]
    pack = write_scaled_pack(
        problems.TOKEN_SCATTER_BWD,
        tmp_path / "scatter",
        {"hidden_dim": 64, "ffn_dim": 224},
        [{"uuid": u} for u in uuids],
    )
    suite = evaluate(load_problem(pack), load_solution(kernels.TOKEN_SCATTER_BWD), QUICK)
    _assert_all_passed(suite, uuids)


def test_load_balance_solution_passes_cases(tmp_path):
    # 042 is cheap: two published cases at full size, and a copy with fewer experts
    uuids = ["60b6e5ee-0d8e-58dd-aaee-c5c18a476c94", "ddb7f6d5-0384-5a62-880f-d9b6a855c17b"]
    suite = evaluate(
        load_problem(problems.LOAD_BALANCE_BWD),
        load_solution(kernels.LOAD_BALANCE_BWD),
        EvalOptions(**{**QUICK.__dict__, "cases": uuids}),
    )
    _assert_all_passed(suite, uuids)
    pack = write_scaled_pack(
        problems.LOAD_BALANCE_BWD,
        tmp_path / "balance",
        {"n_routed_experts": 64},
        [{"uuid": uuids[0], "axes": {"batch_seq_len": 333}}],
    )
    _assert_all_passed(evaluate(load_problem(pack), load_solution(kernels.LOAD_BALANCE_BWD), QUICK), uuids[:1])
