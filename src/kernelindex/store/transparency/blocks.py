"""A ``log_blocks`` row as its leaves: the two byte strings packed by an append and read back by the
proofs and ``verify``. Anything may have been written there behind the store's back (text in a SQLite
column, a length that is not a whole number of leaves): reading never fails on it, it shows as a block
whose lengths disagree, for ``verify`` to report."""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kernelindex.store.transparency.leaves import stored_leaf
from kernelindex.store.transparency.tables import BLOCK, DIGEST_BYTES, SEQ_BYTES, log_blocks

COLUMNS = ("first_idx", "table_id", "first_seq", "last_seq", "digests", "seqs")
SELECTED = tuple(log_blocks.c[name] for name in COLUMNS)
_SWAP = sys.byteorder != "little"  # seqs are stored little-endian whatever the machine


def pack_seqs(seqs: Sequence[int]) -> bytes:
    values = array("q", seqs)
    if _SWAP:
        values.byteswap()
    return values.tobytes()


def block_rows(first: int, table_id: int, digests: Sequence[bytes], seqs: Sequence[int]) -> list[tuple[Any, ...]]:
    """The ``log_blocks`` rows (:data:`COLUMNS`) of leaves ``first``, ``first + 1``, ... of one table's rows
    ``seqs`` (ascending), :data:`BLOCK` at a time; the byte strings as ``bytearray``, which the sqlite3
    module binds without looking for an adapter."""
    rows = []
    for k in range(0, len(seqs), BLOCK):
        part = seqs[k : k + BLOCK]
        packed = bytearray(b"".join(digests[k : k + BLOCK]))
        rows.append((first + k, table_id, part[0], part[-1], packed, bytearray(pack_seqs(part))))
    return rows


@dataclass(frozen=True)
class Block:
    first: int
    table_id: int
    first_seq: int
    last_seq: int
    digests: bytes
    seqs: bytes

    @classmethod
    def of_row(cls, row: Sequence[Any]) -> Block:
        """A row read by :data:`SELECTED`."""
        first, table_id, first_seq, last_seq, digests, seqs = row
        return cls(int(first), int(table_id), int(first_seq), int(last_seq), stored_leaf(digests), stored_leaf(seqs))

    @property
    def size(self) -> int:
        """How many leaves it holds (its digests' whole 32-byte pieces)."""
        return len(self.digests) // DIGEST_BYTES

    @property
    def end(self) -> int:
        """The index after its last leaf."""
        return self.first + self.size

    def leaf(self, index: int) -> bytes:
        """The digest of leaf ``index`` (of the whole log), which this block holds."""
        at = (index - self.first) * DIGEST_BYTES
        return self.digests[at : at + DIGEST_BYTES]

    def leaves(self) -> list[bytes]:
        data = self.digests
        return [data[at : at + DIGEST_BYTES] for at in range(0, self.size * DIGEST_BYTES, DIGEST_BYTES)]

    def row_seqs(self) -> list[int]:
        """Its rows' seqs, as many as whole 8-byte pieces it holds."""
        values = array("q")
        values.frombytes(self.seqs[: len(self.seqs) - len(self.seqs) % SEQ_BYTES])
        if _SWAP:
            values.byteswap()
        return values.tolist()

    def index_of_row(self, seq: int) -> int | None:
        """The leaf index of row ``seq``, if this block holds it."""
        seqs = self.row_seqs()
        k = bisect_left(seqs, seq)
        return self.first + k if k < min(len(seqs), self.size) and seqs[k] == seq else None
