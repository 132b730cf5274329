"""Which machine ran an evaluation: a stable runner id and host name for runs stored unsigned.

A signed run is identified by its runner key instead (the storing side replaces the id).
"""

from __future__ import annotations

import hashlib
import platform
from pathlib import Path


def runner_identity() -> tuple[str, str]:
    """(runner_id, runner_host): a hash of the machine id and host name, and the host name."""
    host = platform.node() or "unknown-host"
    machine = ""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            machine = Path(path).read_text().strip()
            break
        except OSError:
            continue
    return "machine:" + hashlib.sha256(f"{machine}|{host}".encode()).hexdigest()[:32], host
