"""The streamed reader and the JSON.stringify-compatible writer."""

from __future__ import annotations

import io
import random
import time
from pathlib import Path

import pytest
import rfc8785
import zstandard

from kernelindex.ingest.jsonlines import es_number, js_dumps, read_lines
from kernelindex.ingest.problems import LineError


def test_es_number_matches_rfc8785_on_random_floats():
    seed = time.time_ns() % 2**32
    print(f"seed={seed}")
    rng = random.Random(seed)
    for _ in range(20000):
        value = rng.choice(
            [
                rng.uniform(-1e25, 1e25),
                rng.random() * 10 ** rng.randint(-30, 30),
                float(rng.randint(-(10**7), 10**7)),
                rng.random(),
            ]
        )
        assert es_number(value) == rfc8785.dumps(value).decode(), (seed, value)


def test_js_dumps_writes_like_json_stringify():
    value = {"b": 1, "a": [0.000010048658277929109, 1e21, 1e-7, 2.5, True, None], "s": '\u00b7\n"x"'}
    assert js_dumps(value) == '{"b":1,"a":[0.000010048658277929109,1e+21,1e-7,2.5,true,null],"s":"\u00b7\\n\\"x\\""}'


def test_reads_multi_frame_zstd_with_line_numbers(tmp_path):
    path = tmp_path / "two-frames.jsonl.zst"
    c = zstandard.ZstdCompressor()
    path.write_bytes(c.compress(b'{"a":1}\n{"a":2}\n') + c.compress(b'\n{"a":3}'))
    with open(path, "rb") as stream:
        assert list(read_lines(path, stream)) == [(1, '{"a":1}'), (2, '{"a":2}'), (4, '{"a":3}')]


def test_a_line_that_is_not_utf8(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"a":1}\n{"a":"\xe9"}\n')
    with open(path, "rb") as stream, pytest.raises(LineError) as caught:
        list(read_lines(path, stream))
    assert caught.value.line == 2 and "UTF-8" in caught.value.reason


def test_a_stream_is_read_in_chunks_not_whole():
    """The reader never asks for more than a chunk at a time."""

    class Spy(io.BytesIO):
        largest = 0

        def read(self, size=-1):
            Spy.largest = max(Spy.largest, size)
            assert size != -1
            return super().read(size)

    data = zstandard.ZstdCompressor().compress(b'{"a":1}\n' * 400_000)
    lines = sum(1 for _ in read_lines(Path("x.jsonl.zst"), Spy(data)))
    assert lines == 400_000 and 0 < Spy.largest <= 1 << 20
