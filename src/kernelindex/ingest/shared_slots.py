"""Memory the importing process and its forked workers share, for handing blocks over.

Through a process pool's pipe, a block and its converted lines each cost a pickle, two copies
through the kernel and an unpickle, in both processes (about a quarter of a CPU-second for the
real export's 37 MB of text and 50 MB of lines); through a mapping made before the workers fork,
each costs one copy. The mapping is anonymous, so nothing outlives the processes that hold it.

A slot holds one task's block and then its result. The caller hands tasks out and takes their
results in order, with at most :attr:`Slots.count` in flight, and gives task ``k`` slot
``k % count``: a slot is written again only after the task that had it was taken. What does not
fit a slot goes through the pipe as before.
"""

from __future__ import annotations

import mmap


class Slots:
    def __init__(self, count: int, block_size: int, result_size: int) -> None:
        self.count, self.block_size, self.result_size = count, block_size, result_size
        self._stride = block_size + result_size
        # MAP_SHARED | MAP_ANONYMOUS: the processes forked after this share it (a mapping is never empty)
        self._memory = mmap.mmap(-1, max(1, count * self._stride))

    def put_block(self, slot: int, block: bytes) -> bool:
        """Write ``block`` to ``slot``; False (nothing written) when it does not fit."""
        if len(block) > self.block_size:
            return False
        start = slot * self._stride
        self._memory[start : start + len(block)] = block
        return True

    def block(self, slot: int, size: int) -> bytes:
        start = slot * self._stride
        return self._memory[start : start + size]

    def put_result(self, slot: int, data: bytes) -> bool:
        """Write ``data`` after the slot's block; False (nothing written) when it does not fit."""
        if len(data) > self.result_size:
            return False
        start = slot * self._stride + self.block_size
        self._memory[start : start + len(data)] = data
        return True

    def result(self, slot: int, size: int) -> bytes:
        start = slot * self._stride + self.block_size
        return self._memory[start : start + size]

    def close(self) -> None:
        self._memory.close()
