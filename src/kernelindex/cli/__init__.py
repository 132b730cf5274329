"""The `kernelindex` command line: one Typer app over the same core the web site uses.

One module per noun; ``common`` holds what they share (the --db option, opening the store,
failing with one clear line, loading keys).
"""

from __future__ import annotations

import importlib
import sys

import typer

# Each command and command group: its module under kernelindex.cli and the function or Typer app there, in
# the order a newcomer meets them (the demo, the store, the site, reruns, evidence).
ENTRIES: dict[str, tuple[str, str]] = {
    "demo": ("demo", "demo"),
    "import": ("imports", "import_command"),
    "verify": ("verify", "verify_command"),
    "runs": ("runs", "runs_command"),
    "show": ("runs", "show_command"),
    "export": ("export", "export_command"),
    "sync": ("sync", "sync_command"),
    "stats": ("stats", "stats_command"),
    "serve": ("serve", "serve"),
    "search": ("search", "search_command"),
    "rank": ("rank", "rank"),
    "cases": ("search", "cases_command"),
    "mcp": ("mcp_server", "mcp_command"),
    "compare": ("compare", "compare_command"),
    "eval": ("evaluate", "eval_command"),
    "submit": ("queue", "submit_command"),
    "runner": ("runner", "runner_command"),
    "campaign": ("campaign", "campaign_command"),
    "queue": ("queue", "queue_app"),
    "runners": ("queue", "runners_app"),
    "keys": ("keys", "keys_app"),
    "corrections": ("corrections", "corrections_app"),
    "log": ("log", "log_app"),
    "sign": ("signatures", "sign"),
    "attest": ("signatures", "attest"),
    "verify-signatures": ("signatures", "verify_signatures"),
    "schemas": ("schemas", "schemas"),
    "resolve": ("resolve", "resolve_app"),
}


def _commands() -> None:
    """Keeps `kernelindex COMMAND` form even while only one command is registered."""


def build(names: list[str]) -> typer.Typer:
    """The CLI with these commands, importing only their modules."""
    built = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__.splitlines()[0])
    built.callback()(_commands)
    for name in names:
        module, attribute = ENTRIES[name]
        target = getattr(importlib.import_module(f"kernelindex.cli.{module}"), attribute)
        if isinstance(target, typer.Typer):
            built.add_typer(target, name=name)
        else:
            built.command(name)(target)
    return built


def __getattr__(name: str) -> typer.Typer:
    """``app``: the whole CLI, built when first asked for (tests and embedders invoke it)."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    whole = build(list(ENTRIES))
    globals()["app"] = whole
    return whole


def main() -> None:
    """The ``kernelindex`` script: a command named first loads that command's module alone (none of the
    others' imports on the way to ``serve``'s first page, or any command's start); anything else, the whole CLI."""
    named = sys.argv[1] if len(sys.argv) > 1 else None
    build([named] if named in ENTRIES else list(ENTRIES))()
