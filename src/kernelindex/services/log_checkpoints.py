"""Signing the log's checkpoints with the server's log key, once per tree size, off the request path.

The key: the PEM file named by ``$KERNELINDEX_LOG_KEY`` (``kernelindex keys new log``), else the
server's countersigning key ``$KERNELINDEX_SIGNING_KEY``, else a key made once for this user at
``$XDG_CONFIG_HOME/kernelindex/log.key`` (``~/.config``; mode 0600), so the CLI and every server
worker of one machine sign as one log. Set ``KERNELINDEX_LOG_KEY`` on a public server and publish
its verifier key (``GET /api/v1/log/checkpoint`` names it). The origin, the checkpoint's first line
and the key's name: ``$KERNELINDEX_LOG_ORIGIN``, else the public URL's host and ``/log``.

A :class:`CheckpointSigner` keeps the checkpoint of every tree size it signed (the newest few);
:meth:`CheckpointSigner.watch` starts a thread that signs each new size as the store grows, so a
request is answered with the newest checkpoint already signed (as a Certificate Transparency log
publishes its signed tree heads), and signs in line only the first time, before any is.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from kernelindex.records.checkpoint import Checkpoint, sign_checkpoint, verifier_key
from kernelindex.records.signing import new_private_key, private_key_from_pem, private_key_to_pem
from kernelindex.services.public_url import DEFAULT_PUBLIC_URL, PUBLIC_URL_ENV
from kernelindex.store.database import Store
from kernelindex.store.transparency.reads import root_at, tree_size

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

LOG_KEY_ENV = "KERNELINDEX_LOG_KEY"
SIGNING_KEY_ENV = "KERNELINDEX_SIGNING_KEY"
ORIGIN_ENV = "KERNELINDEX_LOG_ORIGIN"
KEPT = 64  # signed checkpoints kept per signer


def log_origin() -> str:
    if origin := os.environ.get(ORIGIN_ENV, "").strip():
        return origin
    host = urlsplit(os.environ.get(PUBLIC_URL_ENV) or DEFAULT_PUBLIC_URL).netloc or "kernelindex.local"
    return f"{host}/log"


def _user_key_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kernelindex" / "log.key"


def load_log_key() -> Ed25519PrivateKey:
    """The log key (see the module docstring), made on first use when none is configured."""
    for env in (LOG_KEY_ENV, SIGNING_KEY_ENV):
        if configured := os.environ.get(env):
            return private_key_from_pem(Path(configured).read_bytes())
    path = _user_key_path()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        key = new_private_key()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(private_key_to_pem(key))
    return private_key_from_pem(path.read_bytes())


@dataclass(frozen=True)
class SignedCheckpoint:
    checkpoint: Checkpoint
    note: str
    verifier_key: str


class CheckpointSigner:
    def __init__(self, key: Ed25519PrivateKey | None = None, origin: str | None = None) -> None:
        self._key = key
        self.origin = origin or log_origin()
        self._signed: OrderedDict[int, SignedCheckpoint] = OrderedDict()
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def key(self) -> Ed25519PrivateKey:
        if self._key is None:
            self._key = load_log_key()
        return self._key

    @property
    def verifier_key(self) -> str:
        return verifier_key(self.origin, self.key.public_key())

    def sign(self, size: int, root: bytes) -> SignedCheckpoint:
        """The checkpoint of the tree of ``size`` leaves with ``root``, signed once per size."""
        with self._lock:
            done = self._signed.get(size)
            if done is not None and done.checkpoint.root == root:
                return done
            checkpoint = Checkpoint(self.origin, size, root)
            signed = SignedCheckpoint(checkpoint, sign_checkpoint(checkpoint, self.origin, self.key), self.verifier_key)
            self._signed[size] = signed
            while len(self._signed) > KEPT:
                self._signed.popitem(last=False)
            return signed

    def newest(self) -> SignedCheckpoint | None:
        with self._lock:
            return max(self._signed.values(), key=lambda s: s.checkpoint.size, default=None)

    def sign_current(self, store: Store) -> SignedCheckpoint:
        """Sign the store's tree as it is now (what the watcher does; the CLI calls it directly)."""
        with store.read() as conn:
            size = tree_size(conn)
            root = root_at(conn, size)
        return self.sign(size, root)

    def current(self, store: Store) -> SignedCheckpoint:
        """The newest checkpoint signed, starting the watcher on first use; signs only when none is."""
        self.watch(store)
        return self.newest() or self.sign_current(store)

    def watch(self, store: Store, every: float = 0.5) -> None:
        """Sign each new tree size within ``every`` seconds of its commit, in a daemon thread."""
        with self._lock:
            if self._watcher is not None:
                return
            self._watcher = threading.Thread(target=self._run, args=(store, every), name="log-signer", daemon=True)
        self._watcher.start()

    def _run(self, store: Store, every: float) -> None:
        while not self._stop.is_set():
            try:
                self.sign_current(store)
            except Exception:  # a store being closed or migrated: try again on the next tick
                pass
            self._stop.wait(every)

    def stop(self) -> None:
        """End the watcher (if one runs) and wait for it, so it holds no connection afterwards."""
        self._stop.set()
        watcher = self._watcher
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join()
