"""Changes to the transparency log made straight in the database, as an operator or an attacker would:
plain SQL on ``log_blocks`` (leaves packed 32 bytes each, seqs 8 bytes little-endian), no store code."""

from __future__ import annotations

from sqlalchemy import Connection, text

_AT = text("SELECT first_idx, digests, seqs FROM log_blocks WHERE first_idx <= :i ORDER BY first_idx DESC LIMIT 1")


def _block(conn: Connection, index: int) -> tuple[int, bytearray, bytearray]:
    first, digests, seqs = conn.execute(_AT, {"i": index}).one()
    return int(first), bytearray(digests), bytearray(seqs)


def _write(conn: Connection, first: int, digests: bytes, seqs: bytes) -> None:
    update = text("UPDATE log_blocks SET digests = :d, seqs = :s WHERE first_idx = :f")
    assert conn.execute(update, {"d": bytes(digests), "s": bytes(seqs), "f": first}).rowcount == 1


def leaves(conn: Connection) -> list[bytes]:
    """Every leaf's digest, in order."""
    data = b"".join(bytes(d) for d in conn.execute(text("SELECT digests FROM log_blocks ORDER BY first_idx")).scalars())
    return [data[at : at + 32] for at in range(0, len(data), 32)]


def forge_leaf(conn: Connection, index: int, digest: bytes) -> None:
    """Leaf ``index`` made to hold ``digest``."""
    first, digests, seqs = _block(conn, index)
    at = 32 * (index - first)
    digests[at : at + 32] = digest
    _write(conn, first, digests, seqs)


def swap_leaves(conn: Connection, i: int, j: int) -> None:
    """Leaves ``i`` and ``j`` trade their digests."""
    every = leaves(conn)
    a, b = every[i], every[j]
    forge_leaf(conn, i, b)
    forge_leaf(conn, j, a)


def keep_leaves(conn: Connection, size: int) -> None:
    """The log cut to its first ``size`` leaves."""
    first, digests, seqs = _block(conn, size)
    conn.execute(text("DELETE FROM log_blocks WHERE first_idx >= :n"), {"n": size})
    if first < size:
        _write(conn, first, digests[: 32 * (size - first)], seqs[: 8 * (size - first)])


def retable_leaf(conn: Connection, index: int, table_id: int | None = None) -> None:
    """The block of leaf ``index`` said to be of another table: runs' (8) or measurements' (9), or ``table_id``."""
    first = _block(conn, index)[0]
    new = table_id if table_id is not None else "CASE WHEN table_id = 8 THEN 9 ELSE 8 END"
    conn.execute(text(f"UPDATE log_blocks SET table_id = {new} WHERE first_idx = :f"), {"f": first})
