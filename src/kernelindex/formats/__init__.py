"""Upstream benchmark documents, read as they are written (pure: no I/O, nothing executed)."""
