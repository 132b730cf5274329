"""A throw-away PostgreSQL cluster for the test session (Debian ``postgresql`` package).

The cluster lives in a temporary folder, listens on a free local port (and a unix socket in
that folder), trusts local connections and is stopped and deleted at the end. PostgreSQL
refuses to run as root, so under root the server binaries run as the ``postgres`` OS user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from process_kit import free_port


class Unavailable(RuntimeError):
    """PostgreSQL cannot be started here; the message says why (used as the skip reason)."""


def _bin_dir() -> Path:
    found = shutil.which("initdb")
    if found and Path(found).resolve().parent.joinpath("pg_ctl").exists():
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not candidates:
        raise Unavailable("PostgreSQL server binaries (initdb, pg_ctl) not found: apt-get install postgresql")
    return Path(candidates[-1]).parent


@dataclass
class PgServer:
    root: Path
    port: int
    bin_dir: Path
    as_user: str | None

    @property
    def admin_url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        cmd = [str(self.bin_dir / args[0]), *args[1:]]
        if self.as_user:
            cmd = ["runuser", "-u", self.as_user, "--", *cmd]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise Unavailable(f"{args[0]} failed: {(result.stderr or result.stdout).strip()[-500:]}")

    def start(self) -> None:
        data = self.root / "data"
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._run("pg_ctl", "-D", str(data), "-o", options, "-l", str(self.root / "server.log"), "-w", "start")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def new_database(self, template: str | None = None) -> str:
        """A fresh database (one per test keeps tests independent), empty or a copy of ``template``."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        copy = f' TEMPLATE "{template}" STRATEGY FILE_COPY' if template else ""
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{copy}')
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"


def start_server() -> PgServer:
    bin_dir = _bin_dir()
    as_user = None
    root = Path(tempfile.mkdtemp(prefix="kernelindex-pg-"))
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError as exc:
            raise Unavailable("running as root and there is no 'postgres' OS user to run the server as") from exc
        if shutil.which("runuser") is None:
            raise Unavailable("running as root and 'runuser' is missing")
        os.chown(root, user.pw_uid, user.pw_gid)
        as_user = "postgres"
    server = PgServer(root, free_port(), bin_dir, as_user)
    try:
        server.start()
    except Unavailable:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return server


_shared: PgServer | Unavailable | None = None


def shared_server() -> PgServer:
    """One cluster per test process, started on first use and stopped when the process exits."""
    global _shared
    if _shared is None:
        import atexit

        try:
            _shared = start_server()
            atexit.register(_shared.stop)
        except Unavailable as exc:
            _shared = exc
    if isinstance(_shared, Unavailable):
        raise _shared
    return _shared
