"""solution.json of SOL-ExecBench (``spec.languages``) and FlashInfer-Bench (``spec.language``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeGuard

from kernelindex.formats.errors import FormatError
from kernelindex.formats.json_files import line_of, read_json, read_text
from kernelindex.records.fields import PRODUCT_MAX

# SOL-ExecBench solutions list ``spec.languages``; FlashInfer-Bench solutions name one ``spec.language``
# (python, triton, cpp, cuda, tilelang). Both vocabularies are read; each name is Python-side or compiled.
PYTHON_LANGUAGES = {"pytorch", "triton", "cute_dsl", "cutile", "cudnn_frontend", "python", "tilelang"}
COMPILED_LANGUAGES = {"cuda_cpp", "cutlass", "cudnn", "cublas", "cpp", "cuda"}


@dataclass(frozen=True)
class SourceFile:
    path: str
    content: str


@dataclass(frozen=True)
class Solution:
    name: str
    definition: str
    sources: tuple[SourceFile, ...]
    languages: tuple[str, ...]
    entry_file: str
    entry_function: str
    destination_passing_style: bool = True
    author: str | None = None
    description: str | None = None
    target_hardware: tuple[str, ...] = ()
    compile_options: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict, compare=False, repr=False)
    path: str = ""

    @property
    def entry_point(self) -> str:
        return f"{self.entry_file}::{self.entry_function}"

    @property
    def compiled(self) -> bool:
        return bool(set(self.languages) & COMPILED_LANGUAGES)


def _safe_relative(path: Any) -> TypeGuard[str]:
    """A source's path: relative, inside the solution's folder, and a name a filesystem can hold."""
    if not isinstance(path, str) or not path or "\\" in path or "\x00" in path or len(path) > 1024:
        return False
    pure = PurePosixPath(path)
    return (
        not pure.is_absolute()
        and ".." not in pure.parts
        and pure.parts[0] not in ("", ".")
        and all(len(part.encode("utf-8", "surrogatepass")) <= 255 for part in pure.parts)
    )


def _solution_languages(path: Path, text: str, spec: dict) -> tuple[list[str], str]:
    """The languages of a solution and the key that named them: SOL-ExecBench's ``languages`` (a list)
    or FlashInfer-Bench's ``language`` (one string); a solution giving both must say the same."""
    listed, single = spec.get("languages"), spec.get("language")
    if single is not None and not isinstance(single, str):
        raise FormatError(path, line_of(text, "language"), "spec.language", "must be one language name (a string)")
    if listed is not None and (not isinstance(listed, list) or not all(isinstance(x, str) for x in listed)):
        raise FormatError(path, line_of(text, "languages"), "spec.languages", "must be a list of language names")
    if listed and single and listed != [single]:
        raise FormatError(
            path, line_of(text, "language"), "spec.language", f"says {single!r} but spec.languages says {listed!r}"
        )
    if listed:
        return listed, "languages"
    if single:
        return [single], "language"
    raise FormatError(
        path,
        line_of(text, "languages") or line_of(text, "language"),
        "spec.languages",
        "must name the solution's language (spec.languages, or spec.language)",
    )


def _sources(raw: dict, path: Path, text: str, entry_file: str) -> list[SourceFile]:
    """The solution's sources: inline, or read from the file beside solution.json."""
    sources = []
    raw_sources = raw.get("sources") or []
    if not isinstance(raw_sources, list):
        raise FormatError(path, line_of(text, "sources"), "sources", "must be a list of {path, content}")
    for index, item in enumerate(raw_sources):
        where = f"sources[{index}]"
        rel = item.get("path") if isinstance(item, dict) else None
        if not _safe_relative(rel):
            raise FormatError(
                path, line_of(text, "sources"), f"{where}.path", f"must be a relative path without '..', got {rel!r}"
            )
        content = item.get("content")
        if content is None:
            beside = path.parent / rel
            if not beside.is_file():
                raise FormatError(
                    path, line_of(text, "sources"), f"{where}.content", f"no content and no file {beside}"
                )
            content = read_text(beside)
        if not isinstance(content, str):
            raise FormatError(path, line_of(text, "sources"), f"{where}.content", "must be a string")
        sources.append(SourceFile(rel, content))
    if not sources and (path.parent / entry_file).is_file():
        sources.append(SourceFile(entry_file, read_text(path.parent / entry_file)))
    paths = [s.path for s in sources]
    if len(set(paths)) != len(paths):
        raise FormatError(path, line_of(text, "sources"), "sources", "two sources share a path")
    if entry_file not in paths:
        raise FormatError(
            path, line_of(text, "entry_point"), "spec.entry_point", f"{entry_file!r} is not among the sources"
        )
    return sources


def load_solution(path: str | Path) -> Solution:
    """solution.json; a source entry without content is read from the file beside it."""
    path = Path(path)
    raw, text = read_json(path)
    for key in ("name", "definition", "spec"):
        if key not in raw:
            raise FormatError(path, None, key, "required field is missing")
    spec = raw["spec"]
    if not isinstance(spec, dict):
        raise FormatError(path, line_of(text, "spec"), "spec", "must be an object")
    languages, key = _solution_languages(path, text, spec)
    known = PYTHON_LANGUAGES | COMPILED_LANGUAGES
    for language in languages:
        if language not in known:
            raise FormatError(
                path, line_of(text, key), f"spec.{key}", f"unknown language {language!r}; one of {sorted(known)}"
            )
    if set(languages) & PYTHON_LANGUAGES and set(languages) & COMPILED_LANGUAGES:
        raise FormatError(
            path,
            line_of(text, key),
            f"spec.{key}",
            "mixes Python-side and compiled languages; a solution uses one group",
        )
    entry = spec.get("entry_point")
    if not isinstance(entry, str) or entry.count("::") != 1:
        raise FormatError(path, line_of(text, "entry_point"), "spec.entry_point", "must read 'file.py::function'")
    entry_file, entry_function = entry.split("::")
    sources = _sources(raw, path, text, entry_file)
    dps = spec.get("destination_passing_style", True)
    if not isinstance(dps, bool):
        raise FormatError(
            path, line_of(text, "destination_passing_style"), "spec.destination_passing_style", "must be true or false"
        )
    hardware = spec.get("target_hardware") or []
    hardware = hardware if isinstance(hardware, list) else [hardware]
    if not all(isinstance(h, str) and len(h) <= PRODUCT_MAX for h in hardware):  # the record's productsTested
        raise FormatError(
            path,
            line_of(text, "target_hardware"),
            "spec.target_hardware",
            f"must be GPU names of at most {PRODUCT_MAX} characters",
        )
    compile_options = spec.get("compile_options") or {}
    if not isinstance(compile_options, dict):
        raise FormatError(path, line_of(text, "compile_options"), "spec.compile_options", "must be an object")
    for key in ("name", "definition"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise FormatError(path, line_of(text, key), key, "must be a non-empty string")
    for key in ("author", "description"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise FormatError(path, line_of(text, key), key, "must be a string")
    return Solution(
        name=raw["name"],
        definition=raw["definition"],
        sources=tuple(sources),
        languages=tuple(languages),
        entry_file=entry_file,
        entry_function=entry_function,
        destination_passing_style=dps,
        author=raw.get("author"),
        description=raw.get("description"),
        target_hardware=tuple(hardware),
        compile_options=compile_options,
        raw=raw,
        path=str(path),
    )
