"""The system calls a sandboxed process may not make, as a seccomp BPF program for bwrap's --seccomp.

Everything is allowed except what a kernel solution has no use for and an escape or a snoop needs:
the kernel keyring (a token an earlier evaluation left in the inherited session keyring), tracing
and reading other processes' memory, mounting and namespaces (a nested user namespace would give a
process capabilities over its own mounts), loading kernel code, BPF, perf events, handles that skip
path permissions, userfaultfd and io_uring (whose operations seccomp does not see). Denied calls
fail with EPERM; clone3 fails with ENOSYS so the C library falls back to clone, whose flags seccomp
can inspect (clone with CLONE_NEWUSER is denied). A call made for another architecture (32-bit
x86 on a 64-bit host, say) kills the calling thread, libseccomp's default for foreign architectures.
"""

from __future__ import annotations

import errno
import functools
import os

DENIED = (
    "keyctl",
    "add_key",
    "request_key",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "mount_setattr",
    "unshare",
    "setns",
    "bpf",
    "perf_event_open",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "add_key",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
)
CLONE_NEWUSER = 0x10000000


def unavailable_reason() -> str | None:
    """None when a filter can be built here, otherwise what is missing."""
    try:
        program()
    except (ImportError, OSError, RuntimeError, AttributeError) as exc:
        return f"no seccomp filter can be built (pyseccomp over libseccomp: {exc})"
    return None


@functools.lru_cache(maxsize=1)
def program() -> bytes:
    """The filter as a BPF program (built once)."""
    import pyseccomp

    rules = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    for name in dict.fromkeys(DENIED):
        try:
            rules.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
        except (OSError, RuntimeError, ValueError):
            continue  # a call this architecture does not have
    rules.add_rule(
        pyseccomp.ERRNO(errno.EPERM), "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)
    )
    rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    fd = os.memfd_create("kernelindex-seccomp-export", os.MFD_CLOEXEC)
    try:
        with os.fdopen(os.dup(fd), "wb") as sink:
            rules.export_bpf(sink)
        data = os.pread(fd, os.fstat(fd).st_size, 0)
    finally:
        os.close(fd)
    if not data or len(data) % 8:
        raise RuntimeError(f"libseccomp exported {len(data)} bytes, not a BPF program")
    return data


def memfd() -> int:
    """A fresh file descriptor holding the program, at offset 0, for one bwrap (which reads it to the end)."""
    fd = os.memfd_create("kernelindex-seccomp", os.MFD_CLOEXEC)
    data = program()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
