"""Finding problem folders (definition.json + workload.jsonl) under a directory, and one by name."""

from __future__ import annotations

import json
from pathlib import Path


def is_problem_folder(path: Path) -> bool:
    return (path / "definition.json").is_file()


def problem_folders(root: Path) -> list[Path]:
    """The problem folders directly under ``root``, sorted by name."""
    return sorted(p for p in root.iterdir() if is_problem_folder(p))


def definition_name(folder: Path) -> str | None:
    """The ``name`` a folder's definition.json gives, or None when it cannot be read."""
    try:
        name = json.loads((folder / "definition.json").read_text(encoding="utf-8")).get("name")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) else None


def find_pack(root: Path, name: str) -> Path | None:
    """The folder under ``root`` called ``name`` (``-`` for ``_`` too) or whose definition is named ``name``."""
    for folder in problem_folders(root):
        if name in (folder.name, folder.name.replace("_", "-")) or definition_name(folder) == name:
            return folder
    return None
