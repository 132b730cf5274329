"""Candidates per hour: many solutions of one problem in one `kernelindex eval` call against one call
per solution, side by side in one run, with the peak memory of each.

Problem: the `moe_load_balance_bwd` pack (042) on its two smallest cases (2048 and 2080 rows). The
candidates are written here: TEMPLATES correct and wrong PyTorch formulations, candidate i taking
template i % len(TEMPLATES), as a search loop would propose them. Both arms run the same CLI with the
same protocol, sandbox required:
  - many: one `eval PROBLEM --solution FOLDER` over all the candidates;
  - separate: one `eval PROBLEM --solution FILE` per candidate, for the first `--separate` of them
    (all of them take too long), half before the many call and half after it, so load drifts both
    ways; candidates per hour from their mean wall time.
Each call runs in a small wrapper process that reports `getrusage(RUSAGE_CHILDREN).ru_maxrss` (the
largest single process of the call's tree: the harness's parent, its sandboxes and children all
waited for); the benchmark also samples the whole tree's proportional set size (PSS: shared arenas
counted once) every 0.2 s, and each part of it: the harness's parent, the reference's worker, the
solutions' workers and the sandbox's helpers (peak RSS and PSS of each, and what each held at the
tree's PSS peak). The verdicts of the separate calls must equal the many call's for the
same candidates. A call's peak follows the timed batch it draws (sized from a warm-up call, 12-29
slots here); `--batch N` has every batch take N calls, so both arms are compared at the same batch.
Run it under `nice -n 5`:
  nice -n 5 .venv/bin/python benchmarks/many_candidates.py [--candidates 50] [--separate 4] [--batch 29]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "src" / "kernelindex" / "problems" / "moe_load_balance_bwd"
CASES = ["60b6e5ee", "21f99877"]  # its two smallest (batch_seq_len 2048 and 2080)
PROTOCOL = ["--rounds", "2", "--warmup", "1", "--iterations", "2", "--pairs", "1", "--sandbox", "required"]
SIGNATURE = "grad_tokens_per_expert, grad_expert_mask, grad_load_balance_loss, topk_idx, expert_mask, tokens_per_expert, training, out"
TEMPLATES = {
    "add_out": """
def run({sig}):
    seq, experts = grad_expert_mask.shape
    v = grad_tokens_per_expert.to(torch.float32)
    if bool(training[0]):
        v = v + float(grad_load_balance_loss[0]) * experts * (1.0 / experts) / (seq * topk_idx.shape[1])
    torch.add(grad_expert_mask, v[None, :], out=out)
""",
    "copy_then_add": """
def run({sig}):
    seq, experts = grad_expert_mask.shape
    c = float(grad_load_balance_loss[0]) / (seq * topk_idx.shape[1]) if bool(training[0]) else 0.0
    out.copy_(grad_expert_mask)
    out.add_((grad_tokens_per_expert + c).unsqueeze(0))
""",
    "device_constant": """
def run({sig}):
    seq, _ = grad_expert_mask.shape
    c = grad_load_balance_loss * training.to(torch.float32) / (seq * topk_idx.shape[1])
    torch.add(grad_expert_mask, (grad_tokens_per_expert + c).expand_as(grad_expert_mask), out=out)
""",
    "forgets_the_loss_term": """
def run({sig}):
    torch.add(grad_expert_mask, grad_tokens_per_expert[None, :], out=out)
""",
}
# Runs a command, then prints the largest resident set (KiB) any process of its tree reached.
WRAPPER = (
    "import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
    "print('maxrss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)"
)


def write_candidates(folder: Path, count: int) -> list[Path]:
    names = list(TEMPLATES)
    paths = []
    for i in range(count):
        template = names[i % len(names)]
        doc = {
            "name": f"candidate-{i:02d}-{template}",
            "definition": "042_moe_expert_load_balancing_and_token_capacity_backward",
            "author": "benchmarks/many_candidates.py",
            "spec": {
                "languages": ["pytorch"],
                "target_hardware": ["cpu"],
                "entry_point": "solution.py::run",
                "destination_passing_style": True,
            },
            "sources": [
                {"path": "solution.py", "content": "import torch\n" + TEMPLATES[template].format(sig=SIGNATURE)}
            ],
        }
        path = folder / f"candidate-{i:02d}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


def _tree(root: int) -> dict[int, int]:
    """The processes of root's tree, each with its parent's pid."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = {root: parents.get(root, 0)}, [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        found.update({pid: parents[pid] for pid in frontier})
    return found


def _rollup_kib(pid: int) -> dict[str, int]:
    """The process's Rss, Pss and Pss_Shmem (KiB); {} once it is gone."""
    found = {}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            key, value = line.split(":", 1)
            if key in ("Rss", "Pss", "Pss_Shmem"):
                found[key] = int(value.split()[0])
    except (OSError, ValueError):
        return {}
    return found


def _roles(seen: dict[int, dict], cli: int) -> dict[int, str]:
    """Each process by its part: the harness's parent (the CLI), the reference's worker (of the processes
    that map an arena, the one seen longest), the solutions' workers (the others that map one) and the
    sandbox's helpers (bubblewrap, the zygote, the processes that wait to be moved into a cgroup)."""
    workers = [pid for pid, p in seen.items() if p["shmem"] and pid != cli]
    reference = max(workers, key=lambda pid: seen[pid]["samples"], default=None)
    roles = {pid: "helpers" for pid in seen}
    roles.update({pid: "solution" for pid in workers})
    roles.update({cli: "parent"} if cli in seen else {})
    roles.update({reference: "reference"} if reference is not None else {})
    return roles


def timed_call(args: list[str], trace: Path) -> dict:
    """One CLI call in the wrapper: wall seconds, the tree's largest process RSS, its sampled peak PSS and,
    by part (`_roles`), each part's peak RSS and PSS and what each held at the tree's PSS peak."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}
    command = [sys.executable, "-c", WRAPPER, sys.executable, "-m", "kernelindex.cli", *args, "-o", str(trace)]
    peak, done = [0], threading.Event()
    seen: dict[int, dict] = {}  # per process: peak RSS and PSS, whether it maps shared memory, samples seen in
    at_peak: dict[int, int] = {}  # each process's PSS when the tree's was at its peak
    started = time.monotonic()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def sample() -> None:
        while not done.wait(0.2):
            tree = _tree(proc.pid)
            now = {pid: r for pid in tree if (r := _rollup_kib(pid)).get("Pss") is not None}
            for pid, r in now.items():
                p = seen.setdefault(pid, {"rss": 0, "pss": 0, "shmem": False, "samples": 0, "parent": tree[pid]})
                p["rss"], p["pss"] = max(p["rss"], r["Rss"]), max(p["pss"], r["Pss"])
                p["shmem"] |= r.get("Pss_Shmem", 0) > 0
                p["samples"] += 1
            total = sum(r["Pss"] for r in now.values())
            if total > peak[0]:
                peak[0] = total
                at_peak.clear()
                at_peak.update({pid: r["Pss"] for pid, r in now.items()})

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    wall = time.monotonic() - started
    done.set()
    sampler.join()
    maxrss = next((int(line.split()[1]) for line in err.splitlines() if line.startswith("maxrss_kib")), 0)
    cli = next((pid for pid, p in seen.items() if p["parent"] == proc.pid), -1)
    roles = _roles({pid: p for pid, p in seen.items() if pid != proc.pid}, cli)
    parts = {}
    for role in ("parent", "reference", "solution", "helpers"):
        mine = [pid for pid, r in roles.items() if r == role]
        parts[role] = {
            "rss_mib": max((seen[pid]["rss"] for pid in mine), default=0) / 1024,
            "pss_mib": max((seen[pid]["pss"] for pid in mine), default=0) / 1024,
            "at_peak_mib": sum(at_peak.get(pid, 0) for pid in mine) / 1024,
        }
    verdicts = {}
    if trace.exists():
        for line in trace.read_text().splitlines():
            row = json.loads(line)
            verdicts.setdefault(row["solution"], []).append(row["evaluation"]["status"])
    if not verdicts:
        raise SystemExit(f"no trace from {' '.join(args)}:\n{err[-3000:]}")
    return {
        "wall_s": wall,
        "maxrss_mib": maxrss / 1024,
        "tree_pss_mib": peak[0] / 1024,
        "parts": parts,
        "verdicts": verdicts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--separate", type=int, default=4, help="separate calls timed (the first candidates)")
    parser.add_argument(
        "--batch", type=int, help="every timed batch this many calls (one pair), so both arms hold the same batch"
    )
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kernelindex-many-") as tmp:
        folder = Path(tmp) / "candidates"
        folder.mkdir()
        paths = write_candidates(folder, opts.candidates)
        protocol = list(PROTOCOL)
        if opts.batch is not None:  # the fewest calls a batch takes, and (the case's timed slots being 29) the most
            protocol[protocol.index("--iterations") + 1] = str(opts.batch)
        base = ["eval", str(PROBLEM), "--cases", *CASES, *protocol]
        separate: list[dict] = []
        many: dict = {}
        order = ["separate"] * (opts.separate // 2) + ["many"] + ["separate"] * (opts.separate - opts.separate // 2)
        load = [os.getloadavg()[0]]
        for arm in order:
            if arm == "many":
                many = timed_call([*base, "--solution", str(folder)], Path(tmp) / "many.jsonl")
                print(f"many: {opts.candidates} candidates in {many['wall_s']:.1f} s", flush=True)
            else:
                n = len(separate)
                one = timed_call([*base, "--solution", str(paths[n])], Path(tmp) / f"one-{n}.jsonl")
                separate.append(one)
                print(f"separate {n}: {one['wall_s']:.1f} s", flush=True)
            load.append(os.getloadavg()[0])
    mean = sum(s["wall_s"] for s in separate) / len(separate)
    per_hour_separate = 3600 / mean
    per_hour_many = opts.candidates * 3600 / many["wall_s"]
    for one in separate:
        (name, verdict), *_ = one["verdicts"].items()
        assert many["verdicts"][name] == verdict, (name, many["verdicts"][name], verdict)
    passed = sum(all(v == "PASSED" for v in vs) for vs in many["verdicts"].values())
    print(f"load average (1 min) at each step: {', '.join(f'{x:.1f}' for x in load)}")
    print(f"verdicts: {passed} of {len(many['verdicts'])} candidates passed both cases; the separate calls agree")
    print("| arm | calls | wall | s per candidate | candidates per hour | largest process RSS | tree PSS peak |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| separate `eval` per candidate | {len(separate)} | {sum(s['wall_s'] for s in separate):.1f} s | "
        f"{mean:.1f} | {per_hour_separate:.0f} | {max(s['maxrss_mib'] for s in separate):.0f} MiB | "
        f"{max(s['tree_pss_mib'] for s in separate):.0f} MiB |"
    )
    print(
        f"| one `eval` of {opts.candidates} | 1 | {many['wall_s']:.1f} s | {many['wall_s'] / opts.candidates:.1f} | "
        f"{per_hour_many:.0f} | {many['maxrss_mib']:.0f} MiB | {many['tree_pss_mib']:.0f} MiB |"
    )
    print(f"candidates per hour, many / separate: {per_hour_many / per_hour_separate:.2f}x")
    print("separate walls (s): " + ", ".join(f"{s['wall_s']:.1f}" for s in separate))
    print("separate largest process RSS (MiB): " + ", ".join(f"{s['maxrss_mib']:.0f}" for s in separate))
    print("separate tree PSS peaks (MiB): " + ", ".join(f"{s['tree_pss_mib']:.0f}" for s in separate))
    print(
        "| call | parent RSS / PSS | reference worker RSS / PSS | a solution worker, most RSS / PSS | at the tree's PSS peak: parent + reference + solutions + helpers |"
    )
    print("|---|---|---|---|---|")
    for label, call in [
        *((f"separate {n}", one) for n, one in enumerate(separate)),
        (f"many of {opts.candidates}", many),
    ]:
        parts = call["parts"]
        cells = [f"{parts[r]['rss_mib']:.0f} / {parts[r]['pss_mib']:.0f}" for r in ("parent", "reference", "solution")]
        held = " + ".join(f"{parts[r]['at_peak_mib']:.0f}" for r in ("parent", "reference", "solution", "helpers"))
        print(f"| {label} | {' | '.join(cells)} | {held} MiB |")


if __name__ == "__main__":
    main()
