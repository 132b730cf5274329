"""The `kernelindex` command line: one Typer app over the same core the web site uses.

One module per noun; ``common`` holds what they share (the --db option, opening the store,
failing with one clear line, loading keys).
"""

from __future__ import annotations

import typer

from kernelindex.cli import (
    campaign,
    compare,
    corrections,
    demo,
    evaluate,
    export,
    imports,
    keys,
    log,
    mcp_server,
    queue,
    rank,
    resolve,
    runner,
    runs,
    schemas,
    search,
    serve,
    signatures,
    stats,
    sync,
    verify,
)

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__.splitlines()[0])


@app.callback()
def _commands() -> None:
    """Keeps `kernelindex COMMAND` form even while only one command is registered."""


# Commands in the order a newcomer meets them: the demo, the store, the site, reruns, evidence.
app.command("demo")(demo.demo)
app.command("import")(imports.import_command)
app.command("verify")(verify.verify_command)
app.command("runs")(runs.runs_command)
app.command("show")(runs.show_command)
app.command("export")(export.export_command)
app.command("sync")(sync.sync_command)
app.command("stats")(stats.stats_command)
app.command("serve")(serve.serve)
app.command("search")(search.search_command)
app.command("rank")(rank.rank)
app.command("cases")(search.cases_command)
app.command("mcp")(mcp_server.mcp_command)
app.command("compare")(compare.compare_command)
app.command("eval")(evaluate.eval_command)
app.command("submit")(queue.submit_command)
app.command("runner")(runner.runner_command)
app.command("campaign")(campaign.campaign_command)
app.add_typer(queue.queue_app, name="queue")
app.add_typer(queue.runners_app, name="runners")
app.add_typer(keys.keys_app, name="keys")
app.add_typer(corrections.corrections_app, name="corrections")
app.add_typer(log.log_app, name="log")
app.command("sign")(signatures.sign)
app.command("attest")(signatures.attest)
app.command("verify-signatures")(signatures.verify_signatures)
app.command("schemas")(schemas.schemas)
app.add_typer(resolve.resolve_app, name="resolve")


def main() -> None:
    app()
