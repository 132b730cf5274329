"""Normalisers every importer and the harness share: tokens.

Slugs are in ``records.names``, GPU architectures in ``records.hardware``, the upstream trace
format's status words in ``formats.trace``. Pure functions; no I/O.
"""

from __future__ import annotations

import re


def token(text: str) -> str:
    """A value for the ``^[a-z][a-z0-9_]*$`` fields (library names, languages)."""
    value = re.sub(r"[^a-z0-9_]+", "_", str(text).lower()).strip("_")
    return value if value[:1].isalpha() else f"x_{value}"
