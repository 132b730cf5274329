"""Validating one record against the model of its kind, with pydantic's errors turned into one
:class:`RecordError` (field path and reason per problem)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from types import MethodType
from typing import Any, TypeVar, cast

from pydantic import ValidationError
from pydantic_core import SchemaValidator

from kernelindex.records.envelope import Record, Strict
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


def check(model: type[Record], data: Mapping[str, Any], where: str = "") -> None:
    """:func:`validate` for a caller that only needs the verdict (an importer checking thousands
    of records): the model's own schema, read with every model a plain dict, passes a valid record
    in about 60 % of the time building the models takes. Anything it does not pass goes to
    :func:`validate`, so the model alone decides a refusal and names its problems."""
    if data.get("apiVersion") == model.API_VERSION and (checker := dict_checker(model)) is not None:
        try:
            checker.validate_python(data)
            return
        except ValidationError:
            pass
    validate(model, data, where)


@cache
def dict_checker(model: type[Record]) -> SchemaValidator | None:
    """A validator of ``model``'s core schema with each model (and nested model) read as a typed
    dict of the same fields, config and validators; None when the schema holds a part that needs
    the model object itself (a model-level validator, a custom ``__init__``, a root model).

    One validator is left out: the Python call on every field that refuses null
    (``Strict._refuse_null``), where what the field holds refuses null anyway once its
    ``nullable`` wrapper (there for the default) goes: the same verdict, in half the time."""
    if not model.__pydantic_complete__:
        model.model_rebuild()
    core = model.__pydantic_core_schema__
    definitions = {d["ref"]: d for d in core["definitions"]} if core.get("type") == "definitions" else {}
    schema = _as_typed_dicts(core, definitions)
    return None if schema is None else SchemaValidator(schema)


# validators handed what an inner schema built (a model object, where it builds one)
_GIVEN_THE_RESULT = frozenset({"function-after", "function-wrap"})
_NULL_CHECK = cast(MethodType, Strict._refuse_null).__func__
# schemas that refuse null whatever else they say (a model's or a typed dict's too)
_NOT_NULL = frozenset({"str", "int", "float", "bool", "list", "dict", "set", "tuple", "model", "typed-dict"})


def _as_typed_dicts(schema: Any, definitions: dict[str, Any]) -> Any:
    """``schema`` with its model nodes rewritten as typed dicts; None if any cannot be."""
    if isinstance(schema, list):
        items = [_as_typed_dicts(item, definitions) for item in schema]
        return None if any(item is None for item in items) else items
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind in _GIVEN_THE_RESULT and _holds_a_model(schema.get("schema")):
        return None  # a validator of a whole model would be handed a dict
    if kind == "function-before" and getattr(schema["function"]["function"], "__func__", None) is _NULL_CHECK:
        inner = schema["schema"]["schema"] if schema["schema"]["type"] == "nullable" else schema["schema"]
        if _refuses_null(inner, definitions):
            return _as_typed_dicts(inner, definitions)
    if kind == "model":
        inner = schema["schema"]
        if (
            schema.get("custom_init")
            or schema.get("root_model")
            or schema.get("post_init")
            or inner["type"] != "model-fields"
        ):
            return None
        fields = {}
        for name, field in inner["fields"].items():
            if (value := _as_typed_dicts(field["schema"], definitions)) is None:
                return None
            fields[name] = {"type": "typed-dict-field", "schema": value, "required": value["type"] != "default"}
            if "validation_alias" in field:
                fields[name]["validation_alias"] = field["validation_alias"]
        out = {"type": "typed-dict", "fields": fields, "config": schema.get("config", {})}
        for key in ("extra_behavior", "extras_schema", "strict"):
            if key in inner:
                out[key] = inner[key]
        if "ref" in schema:
            out["ref"] = schema["ref"]
        return out
    out = {}
    for key, value in schema.items():
        if isinstance(value, (dict, list)) and key not in ("metadata", "serialization"):
            if (value := _as_typed_dicts(value, definitions)) is None:
                return None
        out[key] = value
    return out


def _refuses_null(schema: dict[str, Any], definitions: dict[str, Any]) -> bool:
    """Whether ``schema`` refuses null on its own: a type that never holds it, a literal without
    it, a validator after one of those, a model it refers to, or a plain validator of ours that
    raises when handed None; anything else is not assumed to."""
    kind = schema["type"]
    if kind in _NOT_NULL:
        return True
    if kind == "literal":
        return None not in schema["expected"]
    if kind == "function-after":
        return _refuses_null(schema["schema"], definitions)
    if kind == "definition-ref":
        target = definitions.get(schema["schema_ref"])
        return target is not None and target["type"] in _NOT_NULL
    if kind == "function-plain" and schema["function"]["type"] == "no-info":
        try:
            schema["function"]["function"](None)
        except Exception:  # any refusal of None is one
            return True
    return False


def _holds_a_model(schema: Any) -> bool:
    if isinstance(schema, list):
        return any(_holds_a_model(item) for item in schema)
    if not isinstance(schema, dict):
        return False
    if schema.get("type") in ("model", "definition-ref"):
        return True
    return any(_holds_a_model(value) for key, value in schema.items() if key not in ("metadata", "serialization"))


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
