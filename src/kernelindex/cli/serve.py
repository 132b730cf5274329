"""`kernelindex serve`: the web site and JSON API over the store."""

from __future__ import annotations

import typer

from kernelindex.cli.common import Db, check_store_url


def serve(
    db: Db = None,
    host: str = typer.Option("127.0.0.1", help="address to listen on"),
    port: int = typer.Option(8000, help="port to listen on"),
) -> None:
    """Serve the read-only site and the JSON API (/api/v1/) over the store."""
    import uvicorn

    from kernelindex.web.app import create_app

    check_store_url(db)
    typer.echo(f"kernelindex: serving http://{host}:{port}/ (API: /api/v1/, OpenAPI: /api/v1/openapi.json)")
    uvicorn.run(create_app(db), host=host, port=port, log_level="warning")
