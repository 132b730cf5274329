"""The one verdict type of the harness: the records' run statuses, as an enum.

`Verdict` is the records' `RunStatus` (records/vocabulary.py), so the harness cannot grow a status
the records do not know. Only the parent process (`runner.decide`) turns what it observed into a
verdict; the upstream trace format's upper-case names are a mapping from it
(`formats.trace.upstream_status`), nothing more.
"""

from __future__ import annotations

from kernelindex.records.vocabulary import RunStatus as Verdict

__all__ = ["Verdict"]
