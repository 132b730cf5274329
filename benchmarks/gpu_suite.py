"""Both problem suites on this GPU, in one call: our kernels and the references through the harness.

1. Measures the machine: device-to-device copy bandwidth (bytes read + written per second) and the
   bf16 matrix rate (large square product), and derives each case's T_SOL for this GPU from the
   packs' declared flops and bytes: max(flops / rate, bytes / bandwidth).
2. Runs our two solutions in-process once per case to compile their Triton kernels (so the harness's
   per-case processes find them in Triton's cache) and to measure 009's peak extra device memory.
3. Runs both suites through the harness (own processes, seeded fresh inputs, L2 flushed, reference
   timed in the same run) and prints a per-case table, suite figures and the issue's targets.
4. Writes everything under $OUT (or --out): a JSON summary, upstream trace lines, and the KernelIndex
   records of both evaluations when the record libraries are importable here.

    benchmarks/gpu_suite.sh            (wraps this with a time limit)
    python benchmarks/gpu_suite.py --smoke --device cpu   (plumbing check on scaled packs, no figures)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kernelindex import kernels, problems  # noqa: E402
from kernelindex.formats.axes import evaluate as eval_expr  # noqa: E402
from kernelindex.formats.problem import load_problem  # noqa: E402
from kernelindex.formats.solution import load_solution  # noqa: E402
from kernelindex.harness.inputs import load_reference, seed_for  # noqa: E402
from kernelindex.harness.runner import EvalOptions, evaluate, write_traces  # noqa: E402


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _best_s(fn, device, repeats: int) -> float:
    """Best of `repeats` timed calls after two warm-ups (peaks are best cases by definition)."""
    for _ in range(2):
        fn()
    _sync(device)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        _sync(device)
        best = min(best, time.perf_counter() - start)
    return best


def measure_machine(device, copy_bytes: int, matrix_n: int) -> dict:
    src = torch.empty(copy_bytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    src.fill_(1)
    copy_s = _best_s(lambda: dst.copy_(src), device, 20)
    del src, dst
    a = torch.randn(matrix_n, matrix_n, device=device).to(torch.bfloat16)
    b = torch.randn(matrix_n, matrix_n, device=device).to(torch.bfloat16)
    c = torch.empty_like(a)
    mm_s = _best_s(lambda: torch.mm(a, b, out=c), device, 10)
    return {
        "copy_bandwidth_Bps": 2 * copy_bytes / copy_s,
        "bf16_matrix_flops": 2 * matrix_n**3 / mm_s,
        "copy_bytes": copy_bytes,
        "matrix_n": matrix_n,
    }


def _solution_entry(solution_path):
    module = __import__(f"kernelindex.kernels.{solution_path.parent.name}.kernel", fromlist=["run"])
    return getattr(module, load_solution(solution_path).entry_function)


def warm_and_measure_memory(problem, solution_path, device) -> dict[str, dict]:
    """One in-process call per case: compiles every tile configuration, and records the peak device
    memory the call allocates beyond its inputs and outputs, against the size of the outputs."""
    reference = load_reference(problem.definition)
    run = _solution_entry(solution_path)
    found = {}
    for case in problem.cases:
        axes = problem.definition.resolve_axes(case.axes)
        torch.manual_seed(seed_for(case.uuid, "round", 0, "<custom>"))
        inputs = list(reference.make_inputs(axes, str(device)).values())
        outs = [
            torch.empty(problem.definition.shape(s, axes), dtype=getattr(torch, s.dtype), device=device)
            for s in problem.definition.outputs.values()
        ]
        out_bytes = sum(o.numel() * o.element_size() for o in outs)
        peak = 0
        if device.type == "cuda":
            _sync(device)
            torch.cuda.reset_peak_memory_stats(device)
            base = torch.cuda.memory_allocated(device)
            with torch.no_grad():
                run(*inputs, *outs)
            _sync(device)
            peak = torch.cuda.max_memory_allocated(device) - base
        else:
            with torch.no_grad():
                run(*inputs, *outs)
        found[case.uuid] = {"peak_extra_bytes": peak, "output_bytes": out_bytes}
        del inputs, outs
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return found


def case_rows(problem, suite, machine, memory) -> list[dict]:
    d = problem.definition
    rows = []
    for number, result in enumerate(suite.cases):
        case = result.case
        axes = d.resolve_axes(case.axes)
        flops = float(eval_expr(d.flops, axes))
        moved = float(eval_expr(d.bytes, axes))
        t_sol = max(flops / machine["bf16_matrix_flops"], moved / machine["copy_bandwidth_Bps"]) * 1e3
        t_k = result.latency.median / 1e6 if result.passed and result.latency else None
        t_ref = result.reference_latency.median / 1e6 if result.reference_latency else None
        row = {
            "case": problem.cases.index(case),
            "uuid": case.uuid,
            "axes": dict(case.axes),
            "status": result.status,
            "t_k_ms": t_k,
            "t_k_p05_ms": result.latency.p05 / 1e6 if t_k else None,
            "t_k_p95_ms": result.latency.p95 / 1e6 if t_k else None,
            "t_ref_ms": t_ref,
            "speedup_vs_reference": t_ref / t_k if t_k and t_ref else None,
            "t_sol_ms_here": t_sol,
            "sol_ratio_here": t_sol / t_k if t_k else None,
            "achieved_Bps": moved / (t_k / 1e3) if t_k else None,
            "copy_fraction": moved / (t_k / 1e3) / machine["copy_bandwidth_Bps"] if t_k else None,
            "t_sol_ms_b200": case.t_sol_ms,
            "t_b_ms_b200": case.t_b_ms,
            "harness_sol_score_spec_peaks": result.score.sol if result.score else None,
            "min_matched_ratio": min((o.matched_ratio for o in result.outputs), default=None),
            **memory.get(case.uuid, {}),
        }
        if row.get("output_bytes"):
            row["peak_extra_over_outputs"] = row["peak_extra_bytes"] / row["output_bytes"]
        rows.append(row)
    return rows


def _fmt(value, spec):
    return format(value, spec) if value is not None else "-"


def print_table(title, rows, with_memory):
    print(f"\n{title}")
    head = (
        f"{'#':>2} {'uuid':8} {'axes':<40} {'status':<20} {'T_k ms':>9} {'T_ref ms':>9} {'×ref':>7} "
        f"{'T_SOL ms':>9} {'SOL/T_k':>7} {'GB/s':>7} {'copy%':>6}"
    )
    print(head + ("  extra/out" if with_memory else ""))
    for r in rows:
        axes = ",".join(f"{k}={v}" for k, v in r["axes"].items())
        line = (
            f"{r['case']:>2} {r['uuid'][:8]} {axes:<40} {r['status']:<20} {_fmt(r['t_k_ms'], '9.4f')} "
            f"{_fmt(r['t_ref_ms'], '9.4f')} {_fmt(r['speedup_vs_reference'], '7.2f')} "
            f"{_fmt(r['t_sol_ms_here'], '9.4f')} {_fmt(r['sol_ratio_here'], '7.3f')} "
            f"{_fmt(r['achieved_Bps'] and r['achieved_Bps'] / 1e9, '7.0f')} "
            f"{_fmt(r['copy_fraction'] and 100 * r['copy_fraction'], '6.1f')}"
        )
        if with_memory:
            line += f"  {_fmt(r.get('peak_extra_over_outputs'), '9.3f')}"
        print(line)


def _geo(values):
    values = [v for v in values if v]
    return statistics.geometric_mean(values) if values else None


def targets(balance_rows, scatter_rows) -> list[dict]:
    """The issue's figures, each with its measured value and whether it is met."""
    out = []

    def add(name, value, ok):
        out.append({"target": name, "value": value, "met": bool(ok)})

    if balance_rows:
        largest = sorted(balance_rows, key=lambda r: -r["axes"]["batch_seq_len"])[:4]
        fractions = [r["copy_fraction"] for r in largest]
        add(
            "042: >= 85% of copy bandwidth on the four largest cases",
            fractions,
            all(f is not None and f >= 0.85 for f in fractions),
        )
        speedups = [r["speedup_vs_reference"] for r in balance_rows]
        add(
            "042: >= 5x the reference on every case",
            min((s or 0) for s in speedups),
            all(s is not None and s >= 5 for s in speedups),
        )
        add(
            "042: all 16 cases pass",
            sum(r["status"] == "PASSED" for r in balance_rows),
            all(r["status"] == "PASSED" for r in balance_rows),
        )
    if scatter_rows:
        ratios = [r["sol_ratio_here"] for r in scatter_rows]
        geo = _geo(ratios) if all(ratios) else None
        add("009: geomean T_SOL/T_k >= 0.5 over the 16 cases", geo, geo is not None and geo >= 0.5)
        speedups = [r["speedup_vs_reference"] for r in scatter_rows]
        geo = _geo(speedups) if all(speedups) else None
        add("009: geomean >= 10x the f32 reference", geo, geo is not None and geo >= 10)
        extra = [r.get("peak_extra_over_outputs") for r in scatter_rows]
        worst = max((e for e in extra if e is not None), default=None)
        add("009: peak extra device memory < 1.5x the outputs", worst, worst is not None and worst < 1.5)
        add(
            "009: all 16 cases pass",
            sum(r["status"] == "PASSED" for r in scatter_rows),
            all(r["status"] == "PASSED" for r in scatter_rows),
        )
    return out


def save_records(suites, out_dir: Path) -> str:
    try:
        from kernelindex.formats.records import records_for
        from kernelindex.harness.records import evaluation_records
    except ImportError as exc:
        return f"records not written: {exc} (traces are; record them where the record libraries are installed)"
    folder = out_dir / "records"
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, suite in suites.items():
        made = evaluation_records(suite)
        bundle = {"problem": records_for(suite.problem).all(), "evaluation": made.bundles()}
        (folder / f"{name}.json").write_text(json.dumps(bundle, indent=1))
        count += len(bundle["problem"]) + len(bundle["evaluation"])
    return f"records written: {count} under {folder}"


def _scaled(problem_dir, consts, dest) -> Path:
    """Smoke mode: a copy of a pack with smaller const axes and three cases."""
    definition = json.loads((problem_dir / "definition.json").read_text())
    for key, value in consts.items():
        definition["axes"][key]["value"] = value
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "definition.json").write_text(json.dumps(definition))
    lines = (problem_dir / "workload.jsonl").read_text().splitlines()
    (dest / "workload.jsonl").write_text("\n".join(lines[:3]) + "\n")
    return dest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp(prefix="gpu-suite-results-"))
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--only", choices=["009", "042"], help="run one suite")
    parser.add_argument("--smoke", action="store_true", help="scaled packs, tiny measurements: checks the plumbing")
    args = parser.parse_args()
    device = torch.device(args.device)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()

    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        print(f"device: {name}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    else:
        name = "cpu"
        print(f"device: cpu (smoke={args.smoke}): figures below are not GPU figures")
    machine = measure_machine(device, (1 << 20) * (8 if args.smoke else 2048), 256 if args.smoke else 8192)
    print(
        f"measured copy bandwidth {machine['copy_bandwidth_Bps'] / 1e9:.0f} GB/s (read + write), "
        f"bf16 matrix rate {machine['bf16_matrix_flops'] / 1e12:.0f} TFLOP/s  [{time.time() - started:.0f} s]"
    )

    packs = {
        "042": (problems.LOAD_BALANCE_BWD, kernels.LOAD_BALANCE_BWD, {"n_routed_experts": 64}),
        "009": (problems.TOKEN_SCATTER_BWD, kernels.TOKEN_SCATTER_BWD, {"hidden_dim": 64, "ffn_dim": 224}),
    }
    scratch = Path(tempfile.mkdtemp(prefix="gpu-suite-"))
    # every checked call's outputs travel to the reference process as files: 009's are ~0.4 GB a call,
    # so it gets fewer checked calls than the harness default (disk and time on a lent machine)
    rounds_of = {"042": 3, "009": 2}  # correctness rounds (every timed call is checked too)
    suites, rows = {}, {}
    for key, (problem_dir, solution_path, consts) in packs.items():
        if args.only and key != args.only:
            continue
        if args.smoke:
            problem_dir = _scaled(problem_dir, consts, scratch / key)
        problem = load_problem(problem_dir)
        memory = warm_and_measure_memory(problem, solution_path, device)
        print(
            f"{key}: in-process warm-up of {len(problem.cases)} cases done  [{time.time() - started:.0f} s]", flush=True
        )

        def progress(result, key=key):
            t = result.latency.median / 1e6 if result.latency else None
            print(
                f"  {key} {result.case.uuid[:8]} {result.status} T_k {_fmt(t, '.4f')} ms  "
                f"[{time.time() - started:.0f} s]",
                flush=True,
            )

        options = EvalOptions(
            device=str(device),
            rounds=rounds_of[key],
            warmup=args.warmup,
            iterations=args.iterations,
            timeout_s=180,
        )
        suite = evaluate(problem, load_solution(solution_path), options, progress=progress)
        suites[key] = suite
        rows[key] = case_rows(problem, suite, machine, memory)
        write_traces(suite, out_dir / f"trace-{key}.jsonl")
        partial = {"device": name, "machine": machine, "cases": rows, "complete": False}
        (out_dir / "gpu_suite.json").write_text(json.dumps(partial, indent=1, default=str))

    if "042" in rows:
        print_table("042 moe_load_balance_bwd: ours vs the reference (harness medians)", rows["042"], False)
    if "009" in rows:
        print_table("009 moe_token_scatter_bwd: ours vs the f32 reference (harness medians)", rows["009"], True)
    print("\nsuite figures")
    for key, suite in suites.items():
        s = suite.score
        ratios = [r["sol_ratio_here"] for r in rows[key]]
        print(
            f"  {key}: passed {s.passed}/{s.cases}, geomean latency {_fmt(s.geomean_latency_ms, '.4f')} ms, "
            f"geomean speedup vs reference {_fmt(s.geomean_speedup_vs_reference, '.2f')}, "
            f"geomean T_SOL/T_k here {_fmt(_geo(ratios) if all(ratios) else None, '.3f')}, "
            f"harness SOL score (spec-sheet peaks) {_fmt(s.sol_score, '.3f')}"
        )
    results = targets(rows.get("042", []), rows.get("009", []))
    print("\ntargets")
    for t in results:
        print(f"  [{'MET' if t['met'] else 'NOT MET'}] {t['target']}: {t['value']}")
    note = save_records(suites, out_dir)
    print(note)
    summary = {
        "device": name,
        "torch": torch.__version__,
        "machine": machine,
        "smoke": args.smoke,
        "options": {
            k: {f: getattr(suite.options, f) for f in ("rounds", "warmup", "iterations", "pairs", "batch_target_ms")}
            for k, suite in suites.items()
        },
        "cases": rows,
        "suites": {k: s.score.to_dict() for k, s in suites.items()},
        "targets": results,
        "records": note,
        "elapsed_s": time.time() - started,
        "complete": True,
    }
    (out_dir / "gpu_suite.json").write_text(json.dumps(summary, indent=1, default=str))
    print(f"wrote {out_dir / 'gpu_suite.json'} in {time.time() - started:.0f} s")
    return 0 if all(t["met"] for t in results) else 1


if __name__ == "__main__":
    sys.exit(main())
