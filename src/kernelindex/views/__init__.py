"""The read layer: one function per resource turning stored facts into what a page, the JSON API, the CLI
and the MCP tools show (web renders these; nothing here knows HTTP)."""
