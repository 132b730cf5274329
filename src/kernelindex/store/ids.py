"""UUIDv7 ids for rows we create ourselves (Python 3.11 has no ``uuid.uuid7``).

Time-ordered like the ids of the public exports, so rows we add sort among theirs by creation time.
"""

from __future__ import annotations

import os
import time
import uuid


def uuid7() -> str:
    """RFC 9562 version 7: 48-bit Unix milliseconds, then 74 random bits."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    rand_a = rand >> 68  # 12 bits
    rand_b = rand & ((1 << 62) - 1)
    value = (millis & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=value))
