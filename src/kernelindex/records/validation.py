"""Validating one record against the model of its kind, with pydantic's errors turned into one
:class:`RecordError` (field path and reason per problem)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from kernelindex.records.envelope import Record
from kernelindex.records.errors import RecordError

R = TypeVar("R", bound=Record)


def validate(model: type[R], data: Mapping[str, Any], where: str = "") -> R:
    """``data`` as ``model`` (its apiVersion checked first), or :class:`RecordError`."""
    api_version = data.get("apiVersion")
    if api_version != model.API_VERSION:
        reason = f"unsupported apiVersion {api_version!r} for {model.KIND} (expected {model.API_VERSION!r})"
        raise RecordError(where, [("apiVersion", reason)])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RecordError(where, [_problem(error) for error in exc.errors()]) from None


def _problem(error: Mapping[str, Any]) -> tuple[str, str]:
    return _field_path(error["loc"]), _reason(error)


def _field_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part == "[key]":
            path += " (key)"
        else:
            path += f".{part}" if path else str(part)
    return path


def _reason(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "value_error":
        return str(error["ctx"]["error"])
    if kind == "missing":
        return "required field is missing"
    if kind == "literal_error":
        return f"{error['msg']}, got {error['input']!r}"
    if kind in ("string_pattern_mismatch", "string_too_long", "string_type", "too_short", "too_long"):
        return f"{error['msg']}, got {_short(error['input'])}"
    return error["msg"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
