"""Wall time of a whole sandboxed `kernelindex eval` of our kernels on both packs, in two trees side by side.

Each round runs the same command in every tree given (alternating, so drift of the machine hits all
alike): `kernelindex eval PACK --solution OURS --cases ...` with the demo's small protocol, through
the same interpreter with the tree's `src` first on the path. Prints per tree and pack the median
wall time, and each tree's ratio against the first (the baseline) measured in the same run.

Run: .venv/bin/python benchmarks/eval_time.py --tree before=../old/src --tree after=src [--rounds 3]
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
# (pack folder, our solution, cases: the smallest of each pack, so a round takes minutes, not hours)
PACKS = {
    "042 moe_load_balance_bwd": ("moe_load_balance_bwd", ["60b6e5ee", "21f99877"]),
    "009 moe_token_scatter_bwd": ("moe_token_scatter_bwd", ["65d4e462"]),
}
PROTOCOL = ["--rounds", "3", "--warmup", "5", "--iterations", "20", "--pairs", "10"]


def eval_once(src: Path, pack: str, cases: list[str]) -> tuple[float, int]:
    """(seconds, exit status) of one sandboxed eval, run with `src` as the package's source tree."""
    problem = src / "kernelindex" / "problems" / pack
    solution = src / "kernelindex" / "kernels" / pack / "solution.json"
    env = {**os.environ, "PYTHONPATH": str(src.resolve())}
    command = [sys.executable, "-m", "kernelindex.cli", "eval", str(problem), "--solution", str(solution)]
    command += [*PROTOCOL, "--sandbox", "required", "--cases", *cases]
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=tmp, capture_output=True, text=True)
        return time.perf_counter() - started, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH of a src folder; first is baseline")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    trees = [(name, Path(path)) for name, _, path in (t.partition("=") for t in args.tree)]
    times: dict[tuple[str, str], list[float]] = {}
    for round_number in range(args.rounds):
        for label, (pack, cases) in PACKS.items():
            for name, src in trees:
                seconds, status = eval_once(src, pack, cases)
                times.setdefault((name, label), []).append(seconds)
                print(f"round {round_number + 1}: {name:>8} {label}: {seconds:7.1f} s (exit {status})", flush=True)
    print(f"\nmedian wall time of a sandboxed eval over {args.rounds} round(s); ratio against {trees[0][0]}")
    for label in PACKS:
        base = statistics.median(times[(trees[0][0], label)])
        for name, _ in trees:
            median = statistics.median(times[(name, label)])
            print(f"  {label:<28} {name:>8}: {median:7.1f} s  ({median / base:.2f}x)")


if __name__ == "__main__":
    main()
