"""`kernelindex stats`: counts of what the store holds."""

from __future__ import annotations

from kernelindex.cli.common import AsJson, Db, open_store_or_fail, out_console, print_json


def stats_command(db: Db = None, as_json: AsJson = False) -> None:
    """Counts of what the store holds."""
    from kernelindex.store.reads.stats import store_stats

    store = open_store_or_fail(db, read_only=True)
    with store.read() as conn:
        stats = store_stats(conn)
    if as_json:
        print_json(stats)
        return
    from rich.table import Table

    table = Table(title="store")
    table.add_column("what")
    table.add_column("count", justify="right")
    for name, count in stats["tables"].items():
        table.add_row(name, str(count))
    table.add_row("cohorts (comparison keys)", str(stats["cohorts"]))
    for name, count in stats["pendingLinks"].items():
        table.add_row(f"runs waiting for their {name}", str(count))
    for name, count in stats["runsBySource"].items():
        table.add_row(f"runs from {name}", str(count))
    out_console().print(table)
