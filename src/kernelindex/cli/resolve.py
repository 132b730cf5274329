"""`kernelindex resolve kernel`: the kernel resolver on the command line (what ``POST
/api/v1/resolve/kernel`` answers; ``--json`` prints that document)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kernelindex.cli.common import AsJson, Db, fail, out_console, print_json
from kernelindex.cli.reads import Server, reads

resolve_app = typer.Typer(no_args_is_help=True, help="Resolve a workload to the fastest correct implementation.")


def _axis(text: str) -> tuple[str, int | float | str]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        fail(f"shape {text!r}: expected AXIS=VALUE, e.g. N=300", code=2)
    for kind in (int, float):
        try:
            return name, kind(value)
        except ValueError:
            continue
    return name, value


@resolve_app.command("kernel")
def resolve_kernel_command(
    operation: Annotated[str, typer.Argument(help="operation slug, name, alias or digest, e.g. 042")],
    shape: Annotated[list[str] | None, typer.Argument(help="workload axes as AXIS=VALUE, e.g. N=300 H=4096")] = None,
    dtype: Annotated[str | None, typer.Option(help="e.g. bf16")] = None,
    gpu: Annotated[str | None, typer.Option(help="GPU product or architecture, e.g. B200, sm_90")] = None,
    license: Annotated[str | None, typer.Option("--license", help="text the licence must contain")] = None,
    min_evidence: Annotated[
        str | None, typer.Option("--min-evidence", help="reported, reproducible, verified or replicated")
    ] = None,
    db: Db = None,
    as_json: AsJson = False,
    server: Server = None,
) -> None:
    """The fastest correct implementation of OPERATION at SHAPE (with its evidence level, interval and
    source), or the nearest measured cases when no measured case matches."""
    from pydantic import ValidationError

    from kernelindex.views.kernel_resolve import KernelQuery

    try:
        ask = KernelQuery.model_validate(
            {
                "operation": operation,
                "shape": dict(_axis(a) for a in shape or []),
                "dtype": dtype,
                "gpu": gpu,
                "constraints": {"license": license, "minEvidence": min_evidence},
            }
        )
    except ValidationError as exc:
        fail([f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False)], code=2)
    with reads(db, server) as source:
        answer = source.resolve_kernel(ask).model_dump(mode="json", by_alias=True)
    if as_json:
        print_json(answer)
        return
    _print(answer)


def _print(answer: dict[str, Any]) -> None:
    console = out_console()
    say = lambda text, style=None: console.print(text, markup=False, style=style)  # noqa: E731
    op = answer["operation"]
    say(f"{op['name'] or op['slug']}: {answer['match']} match", "bold")
    for note in answer["notes"]:
        say(f"note: {note}", "yellow")
    best = answer["best"]
    if best:
        interval = f" (95% interval {best['interval']['display']})" if best["interval"] else ""
        say(f"fastest: {best['implementation'] or best['title']}  {best['display']}{interval}")
        say(
            f"  evidence {best['evidence']['level']} · rank {best['rank']} of {best['groupSize']} · source {best['source']}"
        )
        say(f"  {best['hardware']} · {best['permalink']}")
        for reason in best["evidence"]["reasons"]:
            say(f"  - {reason}")
    for alt in answer["alternatives"]:
        say(
            f"other group: {alt['title']}  {alt['display']}  ({alt['evidence']}, {alt['hardware']})  {alt['permalink']}"
        )
    for case in answer["nearest"]:
        axes = ", ".join(f"{k}={v}" for k, v in case["axes"].items()) or case["title"]
        found = case["best"]
        tail = (
            f"{found['title']}  {found['display']} ({found['evidence']})  {found['permalink']}" if found else "no run"
        )
        say(f"nearest ({case['relation']}): {axes}: {tail}")
