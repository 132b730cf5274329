"""Network faults against a tiny misbehaving HTTP server: each one is one clear ApiError, retries
happen only where they are safe, and ETags turn a repeated GET into a 304."""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.client import ApiError, AsyncClient, Client, protocol
from process_kit import free_port

SEED = int(os.environ.get("KERNELINDEX_TEST_SEED", random.randrange(2**32)))

PROBLEM = {"type": "/problems/boom", "title": "Internal error", "status": 500, "detail": "the store fell over"}


class Faulty(BaseHTTPRequestHandler):
    hits: Counter
    release: threading.Event

    def log_message(self, *args) -> None:  # keep the test output clean
        pass

    def _send(self, status: int, body: bytes, kind: str = "application/json", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", headers.pop("length", str(len(body))))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        self.hits[(self.command, path)] += 1
        n = self.hits[(self.command, path)]
        if path == "/api/v1/runs/boom":
            self._send(500, json.dumps(PROBLEM).encode(), "application/problem+json")
        elif path == "/api/v1/runs/html":
            self._send(500, b"<h1>oops</h1>", "text/html")
        elif path.startswith("/api/v1/runs/flaky") or path == "/api/v1/runs/x/attestations":
            if n <= 2:
                self._send(503, b'{"title": "busy", "status": 503}', Retry_After="0")
            else:
                self._send(200, b'{"id": "flaky"}')
        elif path == "/api/v1/runs/truncated":
            self._send(200, b'{"id": "trunc', length="400")
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        elif path == "/api/v1/runs/not-json":
            self._send(200, b"<html>a proxy page</html>", "text/html")
        elif path == "/api/v1/runs/slow":
            self.release.wait(10)  # answers only once the test has seen the client give up
            self._send(200, b'{"id": "slow"}')
        elif path == "/api/v1/export":  # announces five rows, sends two
            self._send(
                200,
                b'{"table": "sources", "row": {}}\n{"table": "projects", "row": {}}\n',
                "application/x-ndjson",
                X_Row_Count="5",
            )
        elif path == "/api/v1/runs/tagged":
            if self.headers.get("If-None-Match") == '"v1"':
                self.hits["304"] += 1
                self.send_response(304)
                self.send_header("ETag", '"v1"')
                self.end_headers()
            else:
                self._send(200, b'{"id": "tagged", "value": 1}', ETag='"v1"')
        else:
            self._send(
                404, b'{"title": "Not found", "status": 404, "detail": "nothing here"}', "application/problem+json"
            )


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:  # a client that gave up is the point here
        pass


@contextmanager
def faulty_server() -> Iterator[tuple[str, Counter, threading.Event]]:
    hits, release = Counter(), threading.Event()
    handler = type("Handler", (Faulty,), {"hits": hits, "release": release})
    server = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits, release
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def faulty():
    with faulty_server() as served:
        yield served


def _closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


def test_a_server_problem_is_raised_as_it_came_and_not_retried(faulty):
    url, hits, _ = faulty
    with Client(url, backoff_s=0) as client, pytest.raises(ApiError) as caught:
        client.run("boom")
    assert caught.value.problem == PROBLEM and caught.value.status == 500
    assert str(caught.value) == f"GET {url}/api/v1/runs/boom: the store fell over"
    assert hits[("GET", "/api/v1/runs/boom")] == 1
    with Client(url, backoff_s=0) as client, pytest.raises(ApiError) as caught:
        client.run("html")
    assert caught.value.status == 500 and "500 Internal Server Error" in caught.value.detail


def test_busy_answers_are_retried_for_reads_only(faulty):
    url, hits, _ = faulty
    with Client(url, backoff_s=0, retries=3) as client:
        assert client.run("flaky") == {"id": "flaky"}
        assert hits[("GET", "/api/v1/runs/flaky")] == 3
        with pytest.raises(ApiError) as caught:
            client.attest("x", {"claim": "reproduced"})
    assert caught.value.status == 503 and hits[("POST", "/api/v1/runs/x/attestations")] == 1
    with Client(url, backoff_s=0, retries=1) as client, pytest.raises(ApiError) as caught:
        client.run("flaky-again")  # the third hit would have answered: one retry is not enough here
    assert caught.value.status == 503 and hits[("GET", "/api/v1/runs/flaky-again")] == 2


def test_server_down_truncated_body_and_non_json_are_one_clear_error_each(faulty):
    url, hits, _ = faulty
    down = _closed_port_url()
    with Client(down, backoff_s=0, retries=2) as client, pytest.raises(ApiError) as caught:
        client.run("anything")
    assert caught.value.status is None and caught.value.type.endswith(":unreachable")
    assert "cannot reach the server" in caught.value.detail
    with Client(url, backoff_s=0, retries=1) as client:
        with pytest.raises(ApiError) as caught:
            client.run("truncated")
        assert caught.value.type.endswith(":truncated") and hits[("GET", "/api/v1/runs/truncated")] == 2
        with pytest.raises(ApiError) as caught:
            client.run("not-json")
        assert caught.value.type.endswith(":not-json") and "text/html" in caught.value.detail


def test_a_slow_answer_past_the_timeout_is_a_timeout(faulty):
    url, hits, release = faulty
    with Client(url, timeout=0.3, retries=0) as client, pytest.raises(ApiError) as caught:
        client.run("slow")
    release.set()
    assert caught.value.type.endswith(":timeout") and "within 0.3 s" in caught.value.detail
    assert hits[("GET", "/api/v1/runs/slow")] == 1


def test_etag_revalidation_reuses_the_body(faulty):
    url, hits, _ = faulty
    with Client(url) as client:
        first = client.run("tagged")
        second = client.run("tagged")
    assert first == second == {"id": "tagged", "value": 1}
    assert hits[("GET", "/api/v1/runs/tagged")] == 2 and hits["304"] == 1


def test_the_async_client_meets_the_same_faults(faulty):
    url, hits, release = faulty

    async def calls():
        async with AsyncClient(url, backoff_s=0, timeout=0.3, retries=2) as client:
            flaky = await client.run("flaky")
            tagged = [await client.run("tagged"), await client.run("tagged")]
            errors = []
            for ident in ("boom", "slow"):
                try:
                    await client.run(ident)
                except ApiError as exc:
                    errors.append(exc)
            return flaky, tagged, errors

    flaky, tagged, (boom, slow) = asyncio.run(calls())
    release.set()
    assert flaky == {"id": "flaky"} and tagged[0] == tagged[1] and hits["304"] == 1
    assert boom.problem == PROBLEM and slow.type.endswith(":timeout")
    assert hits[("GET", "/api/v1/runs/slow")] == 3  # a read that timed out is retried (twice here)


def test_the_cli_reports_a_fault_in_one_line(faulty, monkeypatch):
    url, _, _ = faulty
    monkeypatch.delenv("KERNELINDEX_SERVER", raising=False)
    down = _closed_port_url()
    result = CliRunner().invoke(app, ["show", "abcdef12", "--server", down])
    assert result.exit_code == 1 and result.stderr.startswith(f"error: {down}: cannot reach the server")
    assert result.stderr.count("\n") == 1
    result = CliRunner().invoke(app, ["show", "boom", "--server", url])
    assert result.exit_code == 1 and result.stderr == "error: the store fell over\n"
    monkeypatch.setenv("KERNELINDEX_SERVER", url)
    result = CliRunner().invoke(app, ["show", "boom"])
    assert result.stderr == "error: the store fell over\n"
    result = CliRunner().invoke(app, ["show", "boom", "--db", "x.db"])
    assert result.exit_code == 2 and "not both" in result.stderr


def test_a_short_export_leaves_no_file(faulty, monkeypatch, tmp_path):
    url, _, _ = faulty
    monkeypatch.delenv("KERNELINDEX_SERVER", raising=False)
    with Client(url) as client, client.export() as stream:
        assert stream.total == 5 and len(list(stream.lines)) == 2

    async def read():
        async with AsyncClient(url) as client, client.export() as stream:
            return stream.total, [line async for line in stream.lines]

    total, lines = asyncio.run(read())
    assert total == 5 and [json.loads(line)["table"] for line in lines] == ["sources", "projects"]
    out = tmp_path / "out.jsonl.zst"
    result = CliRunner().invoke(app, ["export", str(out), "--server", url])
    assert result.exit_code == 1 and "announced 5 rows and sent 2" in result.stderr
    assert list(tmp_path.iterdir()) == []


class Endless(BaseHTTPRequestHandler):
    """An export of one good line, then a line that never ends (written in pieces, as a server
    that trickles would), then one more good line."""

    size: int

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        self.wfile.write(b'{"table": "sources", "row": {}}\n')
        for _ in range(self.size // 4096 + 1):
            self.wfile.write(b"x" * 4096)
        self.wfile.write(b'\n{"table": "projects", "row": {}}\n')


def test_an_export_line_with_no_end_is_refused_by_the_client(monkeypatch):
    monkeypatch.setattr(protocol, "MAX_LINE", 50_000)
    server = QuietServer(("127.0.0.1", 0), type("Handler", (Endless,), {"size": 200_000}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        got = []
        with Client(url) as client, client.export() as stream, pytest.raises(ApiError) as caught:
            got.extend(stream.lines)
        assert got == ['{"table": "sources", "row": {}}']
        assert caught.value.type == "urn:kernelindex:client:line-too-long"
        assert "longer than 50000 characters" in caught.value.detail

        async def read() -> list[str]:
            lines: list[str] = []
            async with AsyncClient(url) as client, client.export() as stream:
                async for line in stream.lines:
                    lines.append(line)
            return lines

        with pytest.raises(ApiError, match="longer than 50000"):
            asyncio.run(read())
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_lines_are_cut_the_same_however_the_text_arrives():
    rng = random.Random(SEED)
    lines = ["".join(rng.choice("ab\u00e9{}\r") for _ in range(rng.randrange(0, 30))) for _ in range(200)]
    lines = [line.rstrip("\r") for line in lines]  # a line's own text holds no line end
    text = "".join(line + rng.choice(["\n", "\r\n"]) for line in lines)
    cutter, got, at = protocol.LineCutter("GET", "http://x"), [], 0
    while at < len(text):
        step = rng.randrange(1, 40)
        got.extend(cutter.feed(text[at : at + step]))
        at += step
    got.extend(cutter.end())
    assert got == lines, SEED
    cutter = protocol.LineCutter("GET", "http://x")
    assert list(cutter.feed("a\nb")) == ["a"] and cutter.end() == ["b"]  # a last line with no end still counts
    cutter, got = protocol.LineCutter("GET", "http://x"), []
    with pytest.raises(ApiError, match="line-too-long|longer than"):  # one piece: the good line, then too much
        got.extend(cutter.feed("good\n" + "x" * (protocol.MAX_LINE + 1)))
    assert got == ["good"]


@pytest.mark.parametrize("address", ["notaurl", "ftp://host", "http://", "127.0.0.1:8000"])
def test_a_bad_server_address_is_refused_before_any_request(address, monkeypatch, tmp_path):
    monkeypatch.delenv("KERNELINDEX_SERVER", raising=False)
    with pytest.raises(ValueError, match="not a server address"):
        Client(address)
    for args in (["show", "abcdef12"], ["runs"], ["export", str(tmp_path / "x.jsonl.zst")], ["mcp"]):
        result = CliRunner().invoke(app, [*args, "--server", address])
        assert result.exit_code == 2 and result.stderr.startswith("error: --server:"), (args, result.stderr)
