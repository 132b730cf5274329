"""Scaled-down copies of a problem pack, written by tests into tmp_path."""

from __future__ import annotations

import json
from pathlib import Path


def write_scaled_pack(source: Path, dest: Path, consts: dict[str, int], cases: list[dict]) -> Path:
    """A copy of a problem folder with smaller const axes and chosen cases (same arithmetic, same reference).

    Each item of `cases` is {"uuid": ..., optionally "axes": {...}}; published latencies are dropped,
    since they do not apply to the scaled problem.
    """
    definition = json.loads((source / "definition.json").read_text())
    for name, value in consts.items():
        assert definition["axes"][name]["type"] == "const", name
        definition["axes"][name]["value"] = value
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "definition.json").write_text(json.dumps(definition, indent=2))
    originals = {}
    for text in (source / "workload.jsonl").read_text().splitlines():
        line = json.loads(text)
        originals[line["uuid"]] = line
    lines = []
    for override in cases:
        line = dict(originals[override["uuid"]])
        line["axes"] = override.get("axes", line["axes"])
        for key in ("t_sol_ms", "t_b_ms", "sol_hardware"):
            line.pop(key, None)
        lines.append(json.dumps(line))
    (dest / "workload.jsonl").write_text("\n".join(lines) + "\n")
    return dest
