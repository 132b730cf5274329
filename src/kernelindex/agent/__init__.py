"""The MCP server: KernelIndex's answers as tools for coding agents (``kernelindex mcp``)."""
