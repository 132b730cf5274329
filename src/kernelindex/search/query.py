"""One query parser for the search page, ``GET /api/v1/search`` and ``kernelindex search``.

A query is free text such as ``009 moe backward N=2048 bf16 H200 verified``. Each token is read
as exactly one thing, in this order:

- ``key:value`` filters: ``gpu:``, ``arch:``, ``dtype:``, ``evidence:``, ``license:``/``licence:``,
  ``source:``, ``op:`` (an operation word kept whole);
- ``axis=value`` pairs (``N=300``, ``batch_seq_len=4096``; ``<``/``>`` are not supported);
- a digest or digest prefix (``sha256:…`` or 8+ hex characters with a digit: ``149b7c1a``);
- an evidence level (``verified``, ``replicated``, ``reproducible``, ``reported``);
- a dtype (``bf16``, ``fp32``, ``float16`` …), a GPU product (``H200``, ``MI300X``) or an
  architecture (``sm_90``, ``gfx942``, ``hopper``);
- a source slug the caller knows of (``sol-execbench``);
- a filler word typed on its own (``best kernel for 042 on B200``: ``best``, ``kernel``, ``for``,
  ``on``), left out while anything else remains, so it never picks operations by itself;
- otherwise a word, matched against operation names, aliases and families, then against
  implementations, projects and authors. ``moe_token_scatter_bwd`` is split into its words.

Pure: no I/O, so it is tested alone and used the same way by every caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from kernelindex.records.refusal import Refusal, RefusalKind
from kernelindex.records.vocabulary import EvidenceLevel

MAX_QUERY_CHARS = 500
MAX_TOKENS = 40

DTYPES = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "f16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "fp32": "fp32",
    "f32": "fp32",
    "float32": "fp32",
    "fp64": "fp64",
    "f64": "fp64",
    "float64": "fp64",
    "tf32": "tf32",
    "fp8": "fp8",
    "e4m3": "fp8_e4m3",
    "fp8_e4m3": "fp8_e4m3",
    "float8_e4m3fn": "fp8_e4m3",
    "e5m2": "fp8_e5m2",
    "fp8_e5m2": "fp8_e5m2",
    "fp4": "fp4",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4",
    "int8": "int8",
    "int4": "int4",
    "int32": "int32",
    "int64": "int64",
}
ARCHITECTURE_NAMES = {
    "volta": "sm_70",
    "turing": "sm_75",
    "ampere": "sm_80",
    "ada": "sm_89",
    "lovelace": "sm_89",
    "hopper": "sm_90",
    "blackwell": "sm_100",
    "cdna3": "gfx942",
    "cdna4": "gfx950",
}
ARCHITECTURE = re.compile(r"^(sm_?\d{2,3}a?|gfx\d{3,4}[a-z]?)$")
GPU_PRODUCT = re.compile(r"^(gb|gh|rtx|mi|[abhltvk])\d{2,4}[a-z]{0,4}$")
HEX_PREFIX = re.compile(r"^(?:sha256:)?([0-9a-f]{8,64})$")
NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
AXIS_PAIR = re.compile(r"^([A-Za-z_][A-Za-z0-9_]{0,63})=(.{1,64})$")
FILTER_KEYS = {
    "gpu": "gpu",
    "hardware": "gpu",
    "arch": "arch",
    "architecture": "arch",
    "dtype": "dtype",
    "evidence": "evidence",
    "license": "license",
    "licence": "license",
    "source": "source",
    "op": "word",
    "operation": "word",
}
WORD_SPLIT = re.compile(r"[\s_\-/·.,;:()\[\]]+")
SYNONYMS = {
    "bwd": "backward",
    "fwd": "forward",
    "grad": "backward",
    "norm": "normalization",
    "attn": "attention",
    "matmul": "gemm",
    "mm": "gemm",
}


FILLER_WORDS = frozenset(
    "a an the for on of in at to with and or by from is are me show find which what best fastest fast top "
    "kernel kernels gpu gpus implementation implementations impl".split()
)
"""Words that ask a question rather than name a record. Only a whole token counts (``single_kernel`` keeps
its ``kernel``), and a query of filler words alone is read as words (``kernel`` still finds operations)."""


class QueryError(Refusal, ValueError):
    """A query the parser refuses (too long), with the reason to show."""

    kind = RefusalKind.BAD_REQUEST

    @property
    def code(self) -> str:
        return "bad_query"


@dataclass(frozen=True)
class AxisPin:
    """``name=value`` as typed; ``value`` is a number when it reads as one."""

    name: str
    value: float | int | str

    @property
    def numeric(self) -> bool:
        return isinstance(self.value, (int, float))


@dataclass(frozen=True)
class Query:
    text: str
    words: tuple[str, ...] = ()
    axes: tuple[AxisPin, ...] = ()
    dtypes: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    architectures: tuple[str, ...] = ()
    evidence: str | None = None
    license: str | None = None
    sources: tuple[str, ...] = ()
    digests: tuple[str, ...] = ()
    ignored: tuple[str, ...] = field(default=())
    fillers: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.words
            or self.axes
            or self.digests
            or self.dtypes
            or self.gpus
            or self.architectures
            or self.evidence
            or self.license
            or self.sources
        )

    @property
    def has_filters(self) -> bool:
        return bool(self.dtypes or self.gpus or self.architectures or self.evidence or self.license or self.sources)

    def as_dict(self) -> dict:
        return {
            "text": self.text,
            "words": list(self.words),
            "axes": [{"name": a.name, "value": a.value} for a in self.axes],
            "dtypes": list(self.dtypes),
            "gpus": list(self.gpus),
            "architectures": list(self.architectures),
            "evidence": self.evidence,
            "license": self.license,
            "sources": list(self.sources),
            "digests": list(self.digests),
            "ignored": list(self.ignored),
            "fillers": list(self.fillers),
        }


def _number(text: str) -> float | int | None:
    if not NUMBER.match(text):
        return None
    value = float(text)
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _digest_prefix(lowered: str) -> str | None:
    """The hex of ``sha256:…`` or of a bare 8+ hex word that has a digit and a letter (not ``042``)."""
    hexed = HEX_PREFIX.match(lowered)
    if not hexed:
        return None
    text = hexed.group(1)
    if lowered.startswith("sha256:") or (any(c.isdigit() for c in text) and not text.isdigit()):
        return text
    return None


def normalize_architecture(text: str) -> str | None:
    lowered = text.lower()
    if lowered in ARCHITECTURE_NAMES:
        return ARCHITECTURE_NAMES[lowered]
    if ARCHITECTURE.match(lowered):
        return lowered if not lowered.startswith("sm") or "_" in lowered else "sm_" + lowered[2:]
    return None


def split_words(text: str) -> list[str]:
    """``moe_token_scatter_bwd`` → ``moe token scatter backward`` (lower case, synonyms applied)."""
    return [SYNONYMS.get(w, w) for w in WORD_SPLIT.split(text.lower()) if w]


def _clean(text: str) -> str:
    """Control, bidi and zero-width characters read as spaces: they can't hide inside a word."""
    return "".join(
        " "
        if (
            ord(c) < 32
            or 0x7F <= ord(c) < 0xA0
            or 0x200B <= ord(c) <= 0x200F
            or 0x202A <= ord(c) <= 0x202E
            or 0x2066 <= ord(c) <= 0x2069
            or c == "\ufeff"
        )
        else c
        for c in text
    )


def parse(text: str, sources: Iterable[str] = ()) -> Query:
    """Read ``text`` into a :class:`Query`; ``sources`` are the source slugs a bare word may name."""
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(text)} characters long; at most {MAX_QUERY_CHARS} are read")
    known_sources = {s.lower() for s in sources}
    words: list[str] = []
    axes: list[AxisPin] = []
    dtypes: list[str] = []
    gpus: list[str] = []
    archs: list[str] = []
    srcs: list[str] = []
    digests: list[str] = []
    ignored: list[str] = []
    fillers: list[str] = []
    evidence = license = None
    tokens = _clean(text).split()
    for token in tokens[MAX_TOKENS:]:
        ignored.append(token)
    for token in tokens[:MAX_TOKENS]:
        lowered = token.lower()
        key, sep, value = token.partition(":")
        kind = FILTER_KEYS.get(key.lower()) if sep and value and not lowered.startswith("sha256:") else None
        if kind == "gpu":
            gpus.append(value.lower())
        elif kind == "arch":
            archs.append(normalize_architecture(value) or value.lower())
        elif kind == "dtype":
            dtypes.append(DTYPES.get(value.lower(), value.lower()))
        elif kind == "evidence":
            if EvidenceLevel.named(value.lower()) is not None:
                evidence = value.lower()
            else:
                ignored.append(token)
        elif kind == "license":
            license = value
        elif kind == "source":
            srcs.append(value.lower())
        elif kind == "word":
            words.extend(split_words(value))
        elif pair := AXIS_PAIR.match(token):
            number = _number(pair.group(2))
            axes.append(AxisPin(pair.group(1), number if number is not None else pair.group(2)))
        elif prefix := _digest_prefix(lowered):
            digests.append(prefix)
        elif EvidenceLevel.named(lowered) is not None:
            evidence = lowered
        elif lowered in DTYPES:
            dtypes.append(DTYPES[lowered])
        elif (arch := normalize_architecture(lowered)) is not None:
            archs.append(arch)
        elif GPU_PRODUCT.match(lowered) and any(c.isdigit() for c in lowered):
            gpus.append(lowered)
        elif lowered in known_sources:
            srcs.append(lowered)
        else:
            (fillers if lowered in FILLER_WORDS else words).extend(split_words(token))
    return _unless_only_filler(
        Query(
            text=text,
            words=tuple(dict.fromkeys(words)),
            axes=tuple(axes),
            dtypes=tuple(dict.fromkeys(dtypes)),
            gpus=tuple(dict.fromkeys(gpus)),
            architectures=tuple(dict.fromkeys(archs)),
            evidence=evidence,
            license=license,
            sources=tuple(dict.fromkeys(srcs)),
            digests=tuple(dict.fromkeys(digests)),
            ignored=tuple(ignored),
            fillers=tuple(dict.fromkeys(fillers)),
        )
    )


def _unless_only_filler(query: Query) -> Query:
    """A query of nothing but filler words: those are the words asked for."""
    return replace(query, words=query.fillers, fillers=()) if query.empty and query.fillers else query


def gpu_matches(product: str, hardware_model: str | None) -> bool:
    """``h200`` names ``NVIDIA H200`` (a whole word of the model, case-insensitive), not ``GH200``."""
    return bool(hardware_model) and product.lower() in split_words(hardware_model or "")


def word_score(words: Iterable[str], tokens: set[str], numbers: set[str]) -> int:
    """How many query words name this operation: a token, a number prefix (``042``, ``42``), or a
    prefix of a token of four letters or more (``scat`` → ``scatter``)."""
    score = 0
    for w in words:
        if w in tokens:
            score += 1
        elif w.isdigit():
            score += any(n.lstrip("0") == w.lstrip("0") for n in numbers)
        elif len(w) >= 4 and any(t.startswith(w) for t in tokens):
            score += 1
    return score


def resolve_axis(name: str, axis_names: Iterable[str]) -> str | None:
    """Which axis ``name`` means: the axis itself (any case), else the one axis whose first letter
    is ``name`` (``N`` → ``num_tokens``), else the one axis with a word starting with it (``S`` →
    ``batch_seq_len``); None when no axis or several fit."""
    names = list(axis_names)
    lowered = name.lower()
    for n in names:
        if n.lower() == lowered:
            return n
    if len(lowered) != 1:
        return None
    for pick in (
        lambda n: n.lower().startswith(lowered),
        lambda n: any(part.startswith(lowered) for part in n.lower().split("_")),
    ):
        found = [n for n in names if pick(n)]
        if len(found) == 1:
            return found[0]
        if found:
            return None
    return None
