"""The store's catalog export as a server offers it: built on demand, kept by content digest.

An export is rebuilt only when the store's fingerprint changed since the last one; the file is
named by the sha256 of its bytes, so a client can check what it downloaded against the name (and
the ``latest.json`` pointer) and a mirror that holds the same rows serves the same bytes.
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from kernelindex.ingest.export import export_catalog
from kernelindex.store.database import Store
from kernelindex.store.reads.export_state import export_fingerprint
from kernelindex.store.writer import now_iso

KEEP = 3  # exports kept on disk (a client may still be downloading an older one)


@dataclass(frozen=True)
class CachedExport:
    digest: str  # "sha256:<hex>" of the file's bytes
    path: Path
    size: int
    created_at: str

    @property
    def name(self) -> str:
        return f"catalog-{self.digest.removeprefix('sha256:')}.jsonl.zst"


def file_digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            sha.update(chunk)
    return "sha256:" + sha.hexdigest()


class ExportCache:
    """Exports of one store in ``folder``, rebuilt when the store changed (one build at a time)."""

    def __init__(self, store: Store, folder: Path | None) -> None:
        self.store, self._folder = store, folder
        self._lock = threading.Lock()
        self._by_fingerprint: dict[str, CachedExport] = {}

    @property
    def folder(self) -> Path:
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="kernelindex-exports-"))
        return self._folder

    def latest(self) -> CachedExport:
        with self._lock:
            with self.store.read() as conn:
                fingerprint = export_fingerprint(conn)
            cached = self._by_fingerprint.get(fingerprint)
            if cached is not None and cached.path.is_file():
                return cached
            self.folder.mkdir(parents=True, exist_ok=True)
            building = self.folder / "building.jsonl.zst"
            export_catalog(self.store, building)
            digest = file_digest(building)
            made = CachedExport(
                digest,
                self.folder / f"catalog-{digest.removeprefix('sha256:')}.jsonl.zst",
                building.stat().st_size,
                now_iso(),
            )
            building.replace(made.path)
            self._by_fingerprint = {fingerprint: made}
            for old in sorted(self.folder.glob("catalog-*.jsonl.zst"), key=lambda p: p.stat().st_mtime)[:-KEEP]:
                old.unlink(missing_ok=True)
            return made

    def file(self, hex_digest: str) -> Path | None:
        path = self.folder / f"catalog-{hex_digest}.jsonl.zst"
        return path if path.is_file() else None
