"""A definition of a FlashInfer-Bench trace set made a problem folder the harness runs (`formats.trace_set`
reads the set; writing the folder is the harness's, as for KernelBench's problems)."""

from __future__ import annotations

from pathlib import Path

from kernelindex.formats.trace_set import select


def problem_folder(definition_file: Path, into: Path) -> tuple[Path, Path]:
    """A trace set's definition written out as a problem folder under ``into`` (named for the definition's
    file); (that folder, the set's root: the blob root its safetensors paths start from)."""
    picked = select(definition_file)
    folder = into / definition_file.stem
    folder.mkdir(parents=True)
    (folder / "definition.json").write_text(picked.definition_text, encoding="utf-8")
    (folder / "workload.jsonl").write_text("".join(line + "\n" for line in picked.workload_lines), encoding="utf-8")
    return folder, picked.root
