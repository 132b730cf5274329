"""Buffers the parent owns: every input and output of every call lives in an arena it allocated.

An arena is one block of memory: a memfd mapped shared on CPU (the child maps the same pages
through the file descriptor it inherits), or one CUDA allocation shared by an IPC handle on a
GPU. A `Layout` cuts it into call slots; each slot holds that call's inputs and outputs at fixed
offsets, so each call reads fresh input pointers and writes its own output slot. The parent
reads outputs straight from these pages after the process is frozen: nothing the solution
returns is ever unpickled, and what is compared is an exact `torch.Tensor` view of parent memory.
"""

from __future__ import annotations

import base64
import ctypes
import errno
import fcntl
import functools
import mmap
import os
import pickle
from dataclasses import dataclass

ALIGN = 256
_FALLOC_PUNCH_HOLE = 0x01 | 0x02  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Entry:
    name: str
    offset: int  # within the slot; -1 for a Python scalar
    shape: tuple[int, ...]
    dtype: str  # the definition's dtype name
    value: object = None  # Python scalars only

    @property
    def is_scalar(self) -> bool:
        return self.offset < 0


@functools.cache
def _element_size(dtype: str) -> int:
    import torch

    from kernelindex.harness.dtypes import torch_dtype

    return torch.empty((), dtype=torch_dtype(dtype)).element_size()


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    count = 1
    for d in shape:
        count *= d
    return count * _element_size(dtype)


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass(frozen=True)
class Layout:
    inputs: tuple[Entry, ...]
    outputs: tuple[Entry, ...]
    slot_bytes: int
    slots: int

    @classmethod
    def build(cls, definition, case, slots: int) -> Layout:
        axis_values = definition.resolve_axes(case.axes)
        offset, inputs, outputs = 0, [], []
        for name, spec in definition.inputs.items():
            if spec.is_scalar:
                inputs.append(Entry(name, -1, (), spec.dtype, case.inputs[name].value))
                continue
            shape = tuple(definition.shape(spec, axis_values))
            inputs.append(Entry(name, offset, shape, spec.dtype))
            offset += _aligned(max(1, _nbytes(shape, spec.dtype)))
        for name, spec in definition.outputs.items():
            if spec.is_scalar:
                raise ValueError(f"output {name!r} is a Python scalar; the harness needs tensor outputs")
            shape = tuple(definition.shape(spec, axis_values))
            outputs.append(Entry(name, offset, shape, spec.dtype))
            offset += _aligned(max(1, _nbytes(shape, spec.dtype)))
        return cls(tuple(inputs), tuple(outputs), max(offset, ALIGN), slots)

    @property
    def total_bytes(self) -> int:
        return self.slot_bytes * self.slots

    def to_json(self) -> dict:
        entry = lambda e: [e.name, e.offset, list(e.shape), e.dtype, e.value]  # noqa: E731
        return {
            "inputs": [entry(e) for e in self.inputs],
            "outputs": [entry(e) for e in self.outputs],
            "slot_bytes": self.slot_bytes,
            "slots": self.slots,
        }

    @classmethod
    def from_json(cls, data: dict) -> Layout:
        entry = lambda v: Entry(v[0], v[1], tuple(v[2]), v[3], v[4])  # noqa: E731
        return cls(
            tuple(entry(v) for v in data["inputs"]),
            tuple(entry(v) for v in data["outputs"]),
            data["slot_bytes"],
            data["slots"],
        )

    def _view(self, arena, slot: int, entry: Entry):
        from kernelindex.harness.dtypes import torch_dtype

        start = slot * self.slot_bytes + entry.offset
        raw = arena[start : start + _nbytes(entry.shape, entry.dtype)]
        return raw.view(torch_dtype(entry.dtype)).view(entry.shape)

    def args(self, arena, slot: int, scalars: dict | None = None) -> list:
        """The call's positional inputs: views of the slot for tensors, the value for scalars (the
        workload's, or the one `scalars` gives: what a custom inputs function made for this slot)."""
        given = scalars or {}
        return [given.get(e.name, e.value) if e.is_scalar else self._view(arena, slot, e) for e in self.inputs]

    def tensor_inputs(self, arena, slot: int) -> dict:
        return {e.name: self._view(arena, slot, e) for e in self.inputs if not e.is_scalar}

    def outs(self, arena, slot: int) -> list:
        return [self._view(arena, slot, e) for e in self.outputs]


class Arena:
    """Parent side: the memory and the handle a child opens it by."""

    def __init__(self, nbytes: int, device: str):
        import torch

        self.nbytes, self.device, self.fd = max(nbytes, ALIGN), device, -1
        self.tensor: torch.Tensor | None
        if device.startswith("cuda"):
            self.tensor = torch.zeros(self.nbytes, dtype=torch.uint8, device=device)
        else:
            # inheritable on purpose: the child maps it. Sealed at its size before any child sees it, so a
            # solution that truncates or grows the file (and so would hand the parent SIGBUS on its next
            # read of the mapping) is refused by the kernel instead.
            self.fd = os.memfd_create("kernelindex-arena", os.MFD_ALLOW_SEALING)
            os.set_inheritable(self.fd, True)
            os.ftruncate(self.fd, self.nbytes)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            self.tensor = torch.from_file(f"/proc/self/fd/{self.fd}", shared=True, size=self.nbytes, dtype=torch.uint8)

    def handle(self) -> dict:
        if self.fd >= 0:
            return {"kind": "memfd", "fd": self.fd, "nbytes": self.nbytes}
        from torch.multiprocessing.reductions import reduce_tensor

        _, args = reduce_tensor(self.tensor)
        return {"kind": "cuda_ipc", "args": base64.b64encode(pickle.dumps(args)).decode(), "nbytes": self.nbytes}

    def wipe(self, kept: int) -> None:
        """Every byte back to zero, for the next child to map it: the first `kept` bytes, if any (the pages the
        next run writes again, so the kernel need not allocate them afresh) zeroed in place, the rest handed back
        to the kernel (a hole reads as zeros), so whatever a child wrote anywhere in it is gone. OSError
        where the kernel refuses the hole: then the arena must not be used again."""
        assert self.tensor is not None
        if self.fd < 0:
            self.tensor.zero_()
            return
        kept = self._page_end(kept)
        self.tensor[:kept].zero_()
        self.release(kept)

    def _page_end(self, nbytes: int) -> int:
        return min(self.nbytes, max(0, -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE))

    def release(self, start: int) -> None:
        """Hand every page from `start` (rounded up to a page) to the end back to the kernel: they read as
        zeros and take no memory until written again. On a GPU nothing (its memory is not the host's). OSError
        where the kernel refuses the hole."""
        if self.fd < 0:
            return
        start = self._page_end(start)
        rest = ctypes.c_long(self.nbytes - start)
        if rest.value and _libc.fallocate(self.fd, _FALLOC_PUNCH_HOLE, ctypes.c_long(start), rest) != 0:
            code = ctypes.get_errno() or errno.EIO
            raise OSError(code, f"punching the arena's unused pages: {os.strerror(code)}")

    def close(self) -> None:
        self.tensor = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def open_arena(handle: dict, fd: int | None = None):
    """Child side: the same memory as a uint8 tensor. The handle comes from the parent (trusted)."""
    import torch

    if handle["kind"] == "memfd":
        number = handle["fd"] if fd is None else fd
        return torch.from_file(f"/proc/self/fd/{number}", shared=True, size=handle["nbytes"], dtype=torch.uint8)
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    return rebuild_cuda_tensor(*pickle.loads(base64.b64decode(handle["args"])))
