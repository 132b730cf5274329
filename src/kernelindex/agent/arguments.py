"""Tool arguments checked in one place for every tool: an argument a tool does not take is refused by
name, as the HTTP API refuses an unknown query parameter, and a value that fails its tool's input
schema is one short line per problem (``query: at most 200 characters``), never pydantic's report
with its model names and links."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult
from mcp.types import Tool as McpTool
from pydantic import ValidationError
from pydantic_core import ErrorDetails

KINDS = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "an array",
}
"""Pydantic's type errors, as the JSON value the argument must be."""


class ToolServer(MCPServer[Any]):
    """The SDK's server, with every tool's input schema closed (``additionalProperties: false``) and
    its arguments held to it with short, plain errors."""

    async def list_tools(self) -> list[McpTool]:
        """Every tool, its input schema saying that it takes no argument it does not name."""
        return [
            tool.model_copy(update={"input_schema": {**tool.input_schema, "additionalProperties": False}})
            for tool in await super().list_tools()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Refuse an argument the tool does not take; say what is wrong with a value the tool's schema refuses."""
        schema = next((tool.input_schema for tool in await super().list_tools() if tool.name == name), None)
        if schema is not None:
            allowed = sorted(schema.get("properties", {}))
            unknown = sorted(set(arguments) - set(allowed))
            if unknown:
                named = ", ".join(_shown(n) for n in unknown)
                raise ToolError(f"unknown argument(s): {named}; allowed: {', '.join(allowed) or 'none'}")
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            # the SDK's mark of arguments its input model refused (anything the tool raises has another cause)
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(argument_problems(exc.__cause__, arguments)) from exc.__cause__
            raise


def argument_problems(error: ValidationError, arguments: dict[str, Any]) -> str:
    """One line per argument (or part of one) that ``error`` refuses: where, then what is wrong."""
    reasons: dict[str, list[str]] = {}
    kinds: dict[str, list[str]] = {}
    for detail in error.errors(include_url=False):
        where = _where(detail["loc"], arguments, detail["type"] == "missing")
        reasons.setdefault(where, [])
        if detail["type"] in KINDS:  # a union's members each add the kind they would take
            kinds.setdefault(where, []).append(KINDS[detail["type"]])
        else:
            reasons[where].append(_reason(detail))
    for where, wanted in kinds.items():
        reasons[where].append("must be " + " or ".join(dict.fromkeys(wanted)))
    return "\n".join(f"{where}: {'; '.join(said)}" for where, said in reasons.items())


def _where(loc: tuple[int | str, ...], arguments: Any, missing: bool) -> str:
    """The path of ``loc`` that is in ``arguments`` (and the name a missing one lacks), as
    ``queries[0].operation``; the parts past it name a union's members (``int``, ``str``), not a place."""
    path: list[int | str] = []
    at = arguments
    for part in loc:
        if isinstance(at, dict):
            inside = part in at
        else:
            inside = isinstance(at, list) and isinstance(part, int) and part < len(at)
        if not inside:
            if missing:
                path.append(part)
            break
        at = at[part]
        path.append(part)
    text = _shown(str(path[0])) if path else "arguments"
    for part in path[1:]:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{_shown(part)}" if part.isidentifier() else f"[{json.dumps(_shown(part))}]"
    return text


def _shown(name: str) -> str:
    """A name from the caller, cut short enough for an error line."""
    return name if len(name) <= 40 else name[:39] + "…"


def _reason(detail: ErrorDetails) -> str:
    """What is wrong with a value, in a few words."""
    ctx = detail.get("ctx", {})
    match detail["type"]:
        case "missing":
            return "required"
        case "extra_forbidden":
            return "unknown field"
        case "string_too_long":
            return f"at most {_count(ctx['max_length'], 'character')}"
        case "string_too_short":
            return f"at least {_count(ctx['min_length'], 'character')}"
        case "too_long":
            return f"at most {_count(ctx['max_length'], 'item')}{_given(ctx)}"
        case "too_short":
            return f"at least {_count(ctx['min_length'], 'item')}{_given(ctx)}"
        case "greater_than_equal":
            return f"at least {ctx['ge']}"
        case "less_than_equal":
            return f"at most {ctx['le']}"
        case "greater_than":
            return f"more than {ctx['gt']}"
        case "less_than":
            return f"less than {ctx['lt']}"
        case "literal_error":
            return f"must be one of {ctx['expected']}"
    return detail["msg"].removeprefix("Value error, ")


def _given(ctx: dict[str, Any]) -> str:
    """How many items were given, where pydantic says."""
    return f" (got {ctx['actual_length']})" if ctx.get("actual_length") is not None else ""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
