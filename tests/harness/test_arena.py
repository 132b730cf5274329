"""An arena wiped for the next solution of a case: every byte reads as zero again, the pages a run
writes again are kept, and the ones past them go back to the kernel."""

from __future__ import annotations

import mmap
import os
import random
import secrets

import pytest
import torch

from kernelindex.harness.arena import Arena

RNG = random.Random(secrets.randbits(64))


def test_a_wiped_arena_reads_as_zeros_and_keeps_only_the_pages_it_is_told_to():
    pages = RNG.randint(8, 64)
    # rounded up to a page; none kept where it is 0 or less
    kept = RNG.randint(-2, pages - 2) * mmap.PAGESIZE - RNG.randint(0, mmap.PAGESIZE - 1)
    arena = Arena(pages * mmap.PAGESIZE, "cpu")
    try:
        assert arena.tensor is not None
        arena.tensor.copy_(torch.randint(1, 256, (arena.nbytes,), dtype=torch.uint8))  # every page written
        arena.wipe(kept)
        end = max(0, -(-kept // mmap.PAGESIZE) * mmap.PAGESIZE)
        if end:
            assert os.lseek(arena.fd, 0, os.SEEK_DATA) == 0  # the kept pages are still there
            assert os.lseek(arena.fd, 0, os.SEEK_HOLE) == end  # and nothing past them
        else:
            with pytest.raises(OSError):  # no data anywhere
                os.lseek(arena.fd, 0, os.SEEK_DATA)
        assert int(arena.tensor.count_nonzero()) == 0
        arena.tensor[-1] = 7  # still the same memory, usable for the next run
        assert int(arena.tensor.count_nonzero()) == 1
    finally:
        arena.close()


def test_a_released_arena_keeps_what_lies_before_the_start_and_gives_back_the_pages_after_it():
    pages = RNG.randint(8, 64)
    start = RNG.randint(1, pages - 2) * mmap.PAGESIZE - RNG.randint(0, mmap.PAGESIZE - 1)
    end = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE  # rounded up to a page
    arena = Arena(pages * mmap.PAGESIZE, "cpu")
    try:
        assert arena.tensor is not None
        written = torch.randint(1, 256, (arena.nbytes,), dtype=torch.uint8)
        arena.tensor.copy_(written)
        arena.release(start)
        assert os.lseek(arena.fd, 0, os.SEEK_HOLE) == end  # data up to the page the start lies in, then a hole
        with pytest.raises(OSError):  # and no data past it
            os.lseek(arena.fd, end, os.SEEK_DATA)
        assert torch.equal(arena.tensor[:end], written[:end])
        assert int(arena.tensor[end:].count_nonzero()) == 0
    finally:
        arena.close()
