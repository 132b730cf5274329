"""``kernelindex sync`` against live servers on 127.0.0.1: one of ours mirrored into another store,
an unchanged catalog costing two small requests (pointer and log checkpoint), and misbehaving servers refused with the store unchanged."""

from __future__ import annotations

import hashlib
import json
import time

import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from ingest_kit import snapshot
from typer.testing import CliRunner

from catalog_kit import catalog_lines, write_catalog
from kernelindex.cli import app as cli
from kernelindex.ingest.catalog import import_catalog
from kernelindex.ingest.export import export_lines
from kernelindex.ingest.sync import SyncFailed, sync
from kernelindex.store import open_store
from kernelindex.store.reads.refresh import last_refreshed
from kernelindex.web.app import create_app
from live_kit import serving


@pytest.fixture
def origin(tmp_path, monkeypatch):
    """A store holding the small catalog, served by our own app on a free port."""
    monkeypatch.setenv("KERNELINDEX_EXPORT_CACHE", str(tmp_path / "exports"))
    store = open_store(f"sqlite:///{tmp_path / 'origin.db'}")
    import_catalog(store, write_catalog(tmp_path / "small.jsonl.zst"))
    with serving(create_app(store=store)) as url:
        yield store, url
    store.close()


@pytest.fixture
def export_bytes(origin, tmp_path) -> bytes:
    """The origin's export file, as the hostile servers serve it (a first sync makes the origin build it)."""
    sync(open_store(f"sqlite:///{tmp_path / 'warm.db'}"), origin[1])
    return next((tmp_path / "exports").glob("catalog-*.jsonl.zst")).read_bytes()


def lines_of(store):
    with store.read() as conn:
        return list(export_lines(conn))


def test_sync_mirrors_our_server_and_an_unchanged_catalog_costs_two_requests(origin, store, tmp_path):
    source_store, url = origin
    first = sync(store, url)
    assert not first.up_to_date and first.report.added["runs"] == 2
    assert lines_of(store) == lines_of(source_store)
    again = sync(store, url)
    assert again.up_to_date and again.requests == 2 and again.digest == first.digest  # pointer, checkpoint
    with store.read() as conn:
        assert set(last_refreshed(conn)) == {"toy-source"}
    # a new run on the origin: the next sync adds only it
    lines = catalog_lines()
    run = next(line for line in lines if line["table"] == "benchmark_runs")
    bundle = run["row"]["manifest"]
    bundle["run"]["spec"]["observedAt"] = "2026-02-02T00:00:00.000Z"
    from kernelindex.records.canonical import digest

    run["row"].update(
        id="01900000-0000-7000-8000-000000000999",
        runDigest=digest(bundle["run"]),
        observedAt="2026-02-02T00:00:00.000Z",
    )
    import_catalog(source_store, write_catalog(tmp_path / "more.jsonl", [*lines[:6], run]))
    third = sync(store, url)
    assert not third.up_to_date and third.report.added == {"runs": 1}
    assert lines_of(store) == lines_of(source_store)
    # and the mirror serves the same export: the two servers mirror each other
    with serving(create_app(store=store)) as mirror_url:
        mirrored = sync(open_store(f"sqlite:///{tmp_path / 'third.db'}"), mirror_url)
    assert mirrored.digest == third.digest


def _hostile(export: bytes) -> FastAPI:
    """A server that gets the export wrong in every way a sync must refuse."""
    good = "sha256:" + hashlib.sha256(export).hexdigest()
    app = FastAPI()

    @app.get("/html/api/v1/exports/latest.json")
    def html_pointer():
        return HTMLResponse("<html><body>maintenance</body></html>")

    @app.get("/html2/api/v1/exports/catalog.jsonl.zst")
    def html_export():
        return HTMLResponse("<html><body>not here</body></html>")

    @app.get("/wrong/api/v1/exports/latest.json")
    def wrong_pointer():
        return {"digest": "sha256:" + "0" * 64, "url": "/wrong/file.jsonl.zst"}

    @app.get("/wrong/file.jsonl.zst")
    def wrong_file():
        return Response(export, media_type="application/zstd")

    @app.get("/twice/api/v1/exports/latest.json")
    def pointer_with_a_key_twice():  # json.loads would take the second digest; a reader sees the first
        body = f'{{"digest": "{good}", "url": "/cut/file.jsonl.zst", "digest": "sha256:{"0" * 64}"}}'
        return Response(body, media_type="application/json")

    @app.get("/cut/api/v1/exports/latest.json")
    def cut_pointer():
        return {"digest": good, "url": "/cut/file.jsonl.zst"}

    @app.get("/cut/file.jsonl.zst")
    def cut_file():
        return Response(export[: len(export) // 2], media_type="application/zstd")

    @app.get("/big/api/v1/exports/latest.json")
    def endless_pointer():
        from fastapi.responses import StreamingResponse

        def forever():
            yield b'{"digest": "' + good.encode() + b'", "padding": "'
            while True:
                yield b"x" * 4096

        return StreamingResponse(forever(), media_type="application/json")

    @app.get("/loop/api/v1/exports/catalog.jsonl.zst")
    def loop():
        return RedirectResponse("/loop/api/v1/exports/catalog.jsonl.zst", status_code=302)

    return app


@pytest.mark.parametrize(
    ("prefix", "words"),
    [
        ("/html", "not JSON"),
        ("/twice", "duplicate key 'digest'"),
        ("/html2", "not a catalog export"),
        ("/wrong", "digest mismatch"),
        ("/cut", "truncated or altered"),
        ("/nowhere", "HTTP 404"),
        ("/loop", "redirect loop"),
        ("/big", "not a pointer to an export"),
    ],
)
def test_bad_servers_are_refused_by_url_and_store_nothing(store, export_bytes, prefix, words):
    before = snapshot(store)
    with serving(_hostile(export_bytes)) as bad:
        with pytest.raises(SyncFailed) as refused:
            sync(store, bad + prefix)
    assert bad + prefix in str(refused.value) and words in str(refused.value)
    assert snapshot(store) == before


def test_cli_sync_exit_codes_and_json(origin, tmp_path):
    _, url = origin
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    done = runner.invoke(cli, ["sync", url, "--db", db, "--json"])
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["added"]["runs"] == 2
    again = runner.invoke(cli, ["sync", url, "--db", db])
    assert again.exit_code == 0 and "up to date" in again.stdout
    refused = runner.invoke(cli, ["sync", url + "/nowhere", "--db", db])
    assert refused.exit_code == 1 and "HTTP 404" in refused.stderr
    assert runner.invoke(cli, ["sync", url, "--db", db, "--every", "soon"]).exit_code == 2


def _oversized(export: bytes) -> FastAPI:
    """Servers whose export is too big to take: endless, declared too long, or coded on the wire."""
    from fastapi.responses import StreamingResponse

    good = "sha256:" + hashlib.sha256(export).hexdigest()
    app = FastAPI()

    @app.get("/endless/api/v1/exports/catalog.jsonl.zst")
    def endless():
        def forever():
            yield export
            while True:
                yield b"\0" * (1 << 16)

        return StreamingResponse(forever(), media_type="application/zstd", headers={"X-Content-Digest": good})

    @app.get("/declared/api/v1/exports/catalog.jsonl.zst")
    def declared():
        return Response(export + b"\0" * 4096, media_type="application/zstd", headers={"X-Content-Digest": good})

    @app.get("/exact/api/v1/exports/catalog.jsonl.zst")
    def exact():
        return Response(export, media_type="application/zstd", headers={"X-Content-Digest": good})

    @app.get("/coded/api/v1/exports/catalog.jsonl.zst")
    def coded():
        import gzip

        headers = {"X-Content-Digest": good, "Content-Encoding": "gzip"}
        return Response(gzip.compress(export), media_type="application/zstd", headers=headers)

    return app


@pytest.mark.parametrize(
    ("prefix", "words"),
    [
        ("/endless", "the download passed"),
        ("/declared", "over the limit of"),
        ("/coded", "Content-Encoding gzip though none was asked for"),
    ],
)
def test_an_export_past_the_size_limit_is_refused_before_it_is_taken_in(store, export_bytes, prefix, words):
    data = export_bytes
    before = snapshot(store)
    with serving(_oversized(data)) as bad:
        with pytest.raises(SyncFailed) as refused:
            sync(store, bad + prefix, max_bytes=len(data) + 1024)
    assert bad + prefix in str(refused.value) and words in str(refused.value), refused.value
    assert snapshot(store) == before
    # the export alone, exactly at the limit, is taken; one byte under it, refused
    with serving(_oversized(data)) as bad:
        with pytest.raises(SyncFailed, match="over the limit"):
            sync(store, bad + "/exact", max_bytes=len(data) - 1)
        assert sync(store, bad + "/exact", max_bytes=len(data)).report.added["runs"] == 2


def test_cli_sync_max_size(origin, tmp_path):
    _, url = origin
    runner = CliRunner()
    db = str(tmp_path / "cli.db")
    refused = runner.invoke(cli, ["sync", url, "--db", db, "--max-size", "1K"])
    assert refused.exit_code == 1 and "over the limit of 1024" in refused.stderr, refused.stderr
    assert runner.invoke(cli, ["sync", url, "--db", db, "--max-size", "lots"]).exit_code == 2
    assert runner.invoke(cli, ["sync", url, "--db", db, "--max-size", "64m"]).exit_code == 0


def test_no_room_for_the_download_is_a_refusal_not_a_crash(origin, store, tmp_path, monkeypatch):
    """A full disk or a missing scratch folder refuses the sync by URL (a --every loop goes on)."""
    import errno
    import tempfile

    from kernelindex.ingest import sync as sync_module

    _, url = origin
    before = snapshot(store)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    with pytest.raises(SyncFailed, match="no folder for the download"):
        sync(store, url)
    monkeypatch.setattr(tempfile, "tempdir", None)

    class Full:
        def __init__(self, *_args):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *_exc):
            return False

        def write(self, _data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sync_module, "open", Full, raising=False)
    with pytest.raises(SyncFailed) as refused:
        sync(store, url)
    assert "could not be kept (No space left on device)" in str(refused.value) and url in str(refused.value)
    assert snapshot(store) == before
    monkeypatch.delattr(sync_module, "open")
    assert sync(store, url).report.added["runs"] == 2


def _slow(export: bytes) -> FastAPI:
    """Servers that answer, but too slowly to finish: one trickles its export 4 bytes at a time
    (each read well inside the read timeout), one holds its pointer back before answering."""
    from fastapi.responses import StreamingResponse

    good = "sha256:" + hashlib.sha256(export).hexdigest()
    app = FastAPI()

    @app.get("/trickle/api/v1/exports/catalog.jsonl.zst")
    def trickle():
        def slowly():
            for start in range(0, len(export), 4):
                time.sleep(0.1)  # the hostile server's pace: 40 bytes a second
                yield export[start : start + 4]

        return StreamingResponse(slowly(), media_type="application/zstd", headers={"X-Content-Digest": good})

    @app.get("/held/api/v1/exports/latest.json")
    def held():
        time.sleep(1.5)  # three times what the sync below may take
        return {"digest": good}

    return app


@pytest.mark.parametrize("prefix", ["/trickle", "/held"])
def test_a_server_too_slow_to_finish_is_refused_at_the_deadline(store, export_bytes, prefix):
    """Without the deadline the trickled export takes len/4 * 0.1 s (tens of seconds) and the
    held pointer 1.5 s; with a 0.5 s deadline both are refused by URL, the store unchanged."""
    assert len(export_bytes) / 4 * 0.1 > 20
    before = snapshot(store)
    with serving(_slow(export_bytes)) as slow:
        start = time.monotonic()
        with pytest.raises(SyncFailed) as refused:
            sync(store, slow + prefix, deadline=0.5)
        took = time.monotonic() - start
    assert slow + prefix in str(refused.value) and "not done after 0.5 s" in str(refused.value), refused.value
    assert took < 2.5, took  # refused at the deadline (plus one read), not when the server finished
    assert snapshot(store) == before


def test_cli_sync_deadline(origin, tmp_path):
    _, url = origin
    runner = CliRunner()
    db = str(tmp_path / "cli.db")
    assert runner.invoke(cli, ["sync", url, "--db", db, "--deadline", "soon"]).exit_code == 2
    done = runner.invoke(cli, ["sync", url, "--db", db, "--deadline", "5m", "--json"])
    assert done.exit_code == 0 and json.loads(done.stdout)["added"]["runs"] == 2, done.stderr
