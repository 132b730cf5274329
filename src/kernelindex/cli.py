"""The `kernelindex` command line: one Typer app over the same core the web site uses."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
