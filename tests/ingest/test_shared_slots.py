"""The memory an import shares with its workers: what one process writes to a slot, a process forked
before it reads back exactly; slots do not overlap; what does not fit is refused, not cut."""

from __future__ import annotations

import multiprocessing
import os
import random

from kernelindex.ingest.shared_slots import Slots

SEED = random.randrange(2**32)


def _worker(slots: Slots, slot: int, size: int) -> None:
    """In the child: the block of ``slot`` reversed, written back as its result."""
    block = slots.block(slot, size)
    os._exit(0 if slots.put_result(slot, block[::-1]) else 3)


def test_a_forked_process_reads_the_block_and_its_result_comes_back():
    rng = random.Random(SEED)
    slots = Slots(3, block_size=4096, result_size=4096)
    blocks = [rng.randbytes(rng.randrange(1, 4097)) for _ in range(3)]
    for slot, block in enumerate(blocks):
        assert slots.put_block(slot, block)
    context = multiprocessing.get_context("fork")
    children = [context.Process(target=_worker, args=(slots, slot, len(block))) for slot, block in enumerate(blocks)]
    for child in children:
        child.start()
    for child in children:
        child.join()
        assert child.exitcode == 0
    for slot, block in enumerate(blocks):  # each slot's block intact beside its result
        assert slots.result(slot, len(block)) == block[::-1], f"seed {SEED}"
        assert slots.block(slot, len(block)) == block, f"seed {SEED}"
    slots.close()


def test_what_does_not_fit_a_slot_is_refused_and_leaves_it_as_it_was():
    rng = random.Random(SEED)
    slots = Slots(2, block_size=100, result_size=50)
    first, second = rng.randbytes(100), rng.randbytes(100)
    assert slots.put_block(0, first) and slots.put_block(1, second)
    assert not slots.put_block(0, rng.randbytes(101))
    assert not slots.put_result(0, rng.randbytes(51))
    assert slots.put_result(0, b"r" * 50)
    assert slots.block(0, 100) == first and slots.block(1, 100) == second  # a full result spills into neither
    assert slots.result(0, 50) == b"r" * 50
    slots.close()


def test_slots_of_no_size_refuse_everything_but_an_empty_block():
    slots = Slots(4, block_size=0, result_size=0)
    assert not slots.put_block(3, b"x")
    assert not slots.put_result(3, b"x")
    assert slots.put_block(3, b"") and slots.block(3, 0) == b""
    slots.close()
