"""Fixtures shared by every test package."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _test_log_key() -> None:
    """Every test process signs log checkpoints with a key of its own, never the user's
    (``services.log_checkpoints`` would otherwise make one under ~/.config)."""
    import atexit
    import shutil
    import tempfile

    from kernelindex.records.signing import new_private_key, private_key_to_pem

    folder = tempfile.mkdtemp(prefix="kernelindex-logkey-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = Path(folder) / "log.key"
    path.write_bytes(private_key_to_pem(new_private_key()))
    os.environ["KERNELINDEX_LOG_KEY"] = str(path)


_test_log_key()


def shared_path() -> Path:
    """`../shared` beside the checkout (CI lays a copy there); KERNELINDEX_SHARED overrides."""
    return Path(os.environ.get("KERNELINDEX_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    path = shared_path()
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} is absent: tests that read the real export are skipped")
    return path


@pytest.fixture(scope="session")
def catalog_path(shared_dir: Path) -> Path:
    files = sorted((shared_dir / "data").glob("kernelindex-catalog-*.jsonl.zst"))
    if not files:
        pytest.skip(f"no catalog export under {shared_dir / 'data'}")
    return files[-1]


@pytest.fixture(scope="session")
def seeds_dir(shared_dir: Path) -> Path:
    path = shared_dir / "data" / "seeds"
    if not path.is_dir():
        pytest.skip(f"seed manifests folder {path} is absent")
    return path


@pytest.fixture(scope="session")
def registry_dir(shared_dir: Path) -> Path:
    path = shared_dir / "spec" / "kernelindex-registry"
    if not path.is_dir():
        pytest.skip(f"KernelIndex registry schemas {path} are absent")
    return path
