"""What the sandbox costs a whole `kernelindex eval`, as a user runs it: sandboxed against unsandboxed, side by side.

Each round runs the same command twice, ``--sandbox off`` and ``--sandbox required``, in an order that turns
every round (so drift of the machine hits both alike), for each problem below: the vector-add and softmax
fixtures with their torch solutions, and our 042 pack's kernel on its three smallest cases with the demo's
short protocol, recorded into a fresh store (``--record``; unsandboxed runs are stored as reproducible,
sandboxed ones as verified). Prints, per problem, the median wall time of each mode, the ratio of the medians
and the median of the rounds' paired ratios (issue 33's target: sandboxed <= 1.25x unsandboxed).

    .venv/bin/python benchmarks/sandbox_cost.py [--rounds 6] [--problem vector_add ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "harness" / "fixtures"
PACKS = ROOT / "src" / "kernelindex"
TARGET = 1.25
SHORT = ["--rounds", "3", "--warmup", "5", "--iterations", "20"]  # `kernelindex demo`'s rerun protocol
# name: (problem folder, solution.json, extra arguments)
PROBLEMS = {
    "vector_add": (FIXTURES / "problems/vector_add", FIXTURES / "solutions/vector_add_torch/solution.json", []),
    "softmax": (FIXTURES / "problems/softmax", FIXTURES / "solutions/softmax_torch/solution.json", []),
    "042 (3 cases, --record)": (
        PACKS / "problems/moe_load_balance_bwd",
        PACKS / "kernels/moe_load_balance_bwd/solution.json",
        [*SHORT, "--cases", "60b6e5ee", "21f99877", "30d53ea4", "--record"],
    ),
}
MODES = ("off", "required")


def eval_once(problem: Path, solution: Path, extra: list[str], mode: str, folder: Path) -> float:
    """Wall seconds of one whole `kernelindex eval` (a fresh process) in ``mode``; a failure ends the benchmark."""
    command = [sys.executable, "-m", "kernelindex.cli", "eval", str(problem), "--solution", str(solution), *extra]
    command += ["--sandbox", mode, "--db", str(folder / f"{mode}.db")]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=os.environ)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
        raise SystemExit(f"eval of {problem.name} with --sandbox {mode} exited {done.returncode}:\n{tail}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--problem", action="append", choices=sorted(PROBLEMS), help="only these (default: all)")
    args = parser.parse_args()
    chosen = {name: PROBLEMS[name] for name in args.problem or PROBLEMS}
    walls: dict[str, dict[str, list[float]]] = {name: {mode: [] for mode in MODES} for name in chosen}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for name, (problem, solution, extra) in chosen.items():
                for mode in MODES if round_ % 2 == 0 else MODES[::-1]:
                    seconds = eval_once(problem, solution, extra, mode, Path(tmp))
                    walls[name][mode].append(seconds)
                    print(f"round {round_ + 1}: {name} --sandbox {mode}: {seconds:.2f} s", flush=True)
    print(f"\n{args.rounds} rounds, order turning each round; load average {os.getloadavg()[0]:.1f}")
    print(
        f"{'problem':<26}{'off, median':>13}{'required, median':>18}{'ratio of medians':>18}  median of paired ratios"
    )
    for name, modes in walls.items():
        off, required = statistics.median(modes["off"]), statistics.median(modes["required"])
        paired = sorted(r / o for o, r in zip(modes["off"], modes["required"], strict=True))
        verdict = "met" if statistics.median(paired) <= TARGET else "missed"
        print(
            f"{name:<26}{off:>11.2f} s{required:>16.2f} s{required / off:>17.2f}x  "
            f"{statistics.median(paired):.2f}x ({paired[0]:.2f}-{paired[-1]:.2f}); target <= {TARGET}x: {verdict}"
        )


if __name__ == "__main__":
    main()
