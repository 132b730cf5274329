"""Wall time of a whole sandboxed `kernelindex eval` of our kernels on both packs, in two trees side by side.

Each round runs the same command in every tree given (alternating, so drift of the machine hits all
alike): `kernelindex eval PACK --solution OURS --cases ...` with a small protocol per pack, through
the same interpreter with the tree's `src` first on the path. Prints per tree and pack the median
wall time, and each tree's ratio against the first (the baseline) measured in the same run.

Run: .venv/bin/python benchmarks/eval_time.py --tree before=../old/src --tree after=src [--rounds 3] [--pack '009 moe_token_scatter_bwd']
(`git worktree add ../old COMMIT` makes the old tree.)
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
# (pack folder, cases, protocol): the smallest case(s) of each pack, so a round takes minutes, not hours.
# 009's calls take seconds each on a CPU (4096 x 14336 weights), so it gets a shorter protocol.
PACKS = {
    "042 moe_load_balance_bwd": (
        "moe_load_balance_bwd",
        ["60b6e5ee", "21f99877"],
        ["--rounds", "3", "--warmup", "5", "--iterations", "20", "--pairs", "10"],
    ),
    "009 moe_token_scatter_bwd": (
        "moe_token_scatter_bwd",
        ["4a23c849"],
        ["--rounds", "2", "--warmup", "1", "--iterations", "4", "--pairs", "2", "--timeout", "900"],
    ),
}


def eval_once(src: Path, pack: str, cases: list[str], protocol: list[str]) -> float | None:
    """Seconds of one sandboxed eval (None if it failed), run with `src` as the package's source tree."""
    problem = src / "kernelindex" / "problems" / pack
    solution = src / "kernelindex" / "kernels" / pack / "solution.json"
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, "-m", "kernelindex.cli", "eval", str(problem), "--solution", str(solution)]
    command += [*protocol, "--sandbox", "required", "--cases", *cases]
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=tmp, capture_output=True, text=True)
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        # a failed eval is no timing: show what failed and leave it out of the medians
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        print(f"  eval of {pack} in {src} exited {done.returncode} after {seconds:.1f} s:", *tail, sep="\n    ")
        return None
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH of a src folder; first is baseline")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pack", action="append", choices=sorted(PACKS), help="time only these packs (default: all)")
    args = parser.parse_args()
    packs = {label: PACKS[label] for label in args.pack or PACKS}
    trees = [(name, Path(path).resolve()) for name, _, path in (t.partition("=") for t in args.tree)]
    times: dict[tuple[str, str], list[float]] = {}
    failed: dict[tuple[str, str], int] = {}
    for round_number in range(args.rounds):
        for label, (pack, cases, protocol) in packs.items():
            for name, src in trees:
                seconds = eval_once(src, pack, cases, protocol)
                if seconds is None:
                    failed[(name, label)] = failed.get((name, label), 0) + 1
                    continue
                times.setdefault((name, label), []).append(seconds)
                print(f"round {round_number + 1}: {name:>8} {label}: {seconds:7.1f} s", flush=True)
    print(f"\nmedian wall time of a passing sandboxed eval over {args.rounds} round(s); ratio against {trees[0][0]}")
    for label in packs:
        done = times.get((trees[0][0], label))
        base = statistics.median(done) if done else None
        for name, _ in trees:
            runs, lost = times.get((name, label), []), failed.get((name, label), 0)
            note = f", {lost} failed" if lost else ""
            if not runs:
                print(f"  {label:<28} {name:>8}: no passing eval{note}")
                continue
            median = statistics.median(runs)
            ratio = f"{median / base:.2f}x" if base else "no baseline"
            print(f"  {label:<28} {name:>8}: {median:7.1f} s  ({ratio}{note})")


if __name__ == "__main__":
    main()
