"""The streamed reader and the JSON.stringify-compatible writer."""

from __future__ import annotations

import io
import json
import random
import time
from pathlib import Path

import pytest
import rfc8785
import zstandard
from ingest_kit import read_lines

from kernelindex.ingest import jsonlines
from kernelindex.ingest.jsonlines import block_lines, es_number, js_dumps, read_blocks
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


@pytest.mark.parametrize("compressed", [True, False])
def test_blocks_hold_whole_lines_numbered_as_the_file_numbers_them(tmp_path, compressed, monkeypatch):
    """Blocks cut anywhere a line ends give back the file's bytes and its numbered lines, whatever
    the sizes asked for (one byte, a growing first block, more than the file) and however small the
    pieces the file is read in (so blocks are put together from many reads)."""
    seed = time.time_ns() % 2**32
    rng = random.Random(seed)
    monkeypatch.setattr(jsonlines, "READ", rng.randrange(1, 300))
    monkeypatch.setattr(jsonlines, "CHUNK", rng.randrange(1, 3000))
    lines = [
        rng.choice(["", "  ", '{"a":%d}' % rng.randrange(10 ** rng.randrange(1, 30)), "x" * rng.randrange(1, 3000)])
        for _ in range(rng.randrange(50, 400))
    ]
    data = ("\n".join(lines) + rng.choice(["", "\n"])).encode()
    path = tmp_path / ("f.jsonl.zst" if compressed else "f.jsonl")
    path.write_bytes(zstandard.ZstdCompressor().compress(data) if compressed else data)
    expected = [(n, text.encode()) for n, text in enumerate(lines, 1) if text.strip()]
    for size, first_size in [(1, None), (rng.randrange(2, 5000), None), (4096, 16), (len(data) + 10, None)]:
        with open(path, "rb") as stream:
            blocks = list(read_blocks(path, stream, size, first_size=first_size))
        assert b"".join(block for _, block in blocks) == data, seed
        assert all(block.endswith(b"\n") for _, block in blocks[:-1]), seed
        want = first_size or size
        for _, block in blocks[:-1]:  # each at least what was asked, cut at the next line end
            assert len(block) >= want and b"\n" not in block[want - 1 : -1], (seed, size, first_size)
            want = min(size, 2 * want)
        assert [line for first, block in blocks for line in block_lines(first, block)] == expected, seed


def _zstd_of_repeats(byte: bytes, size: int, frames: int = 1) -> bytes:
    """``frames`` zstd frames, each ``size`` copies of ``byte``: a few KiB that decompress to much more."""
    compressor = zstandard.ZstdCompressor(level=1)
    frame = compressor.compressobj()
    piece = byte * (1 << 20)
    data = b"".join(frame.compress(piece) for _ in range(size >> 20)) + frame.flush()
    return data * frames


def _peak_while_reading(path: Path) -> tuple[int, int, LineError]:
    """(peak bytes Python held, compressed bytes read) while ``read_blocks`` reads ``path`` to its refusal."""
    import tracemalloc

    tracemalloc.start()
    try:
        with open(path, "rb") as stream:
            with pytest.raises(LineError) as refused:
                for _ in read_blocks(path, stream):
                    pass
            return tracemalloc.get_traced_memory()[1], stream.tell(), refused.value
    finally:
        tracemalloc.stop()


def test_a_zstd_bomb_is_refused_at_the_line_limit_without_being_held(tmp_path):
    """256 MiB without a line end, from one ~8 KiB frame: the old reader handed it all to one
    decompress call (and then held every byte of it); now the line is refused once it passes
    MAX_LINE, holding a bounded amount, before the rest is even read."""
    path = tmp_path / "bomb.jsonl.zst"
    path.write_bytes(_zstd_of_repeats(b"a", 256 << 20))
    assert path.stat().st_size < 64 << 10
    peak, _, refused = _peak_while_reading(path)
    assert refused.line == 1 and f"longer than {jsonlines.MAX_LINE} bytes" in refused.reason
    assert peak < 4 * jsonlines.MAX_LINE, peak


def test_a_bomb_of_many_frames_is_refused_before_its_end_naming_the_line(tmp_path):
    good = b'{"table": "x", "row": {}}\n' * 3
    path = tmp_path / "frames.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(good) + _zstd_of_repeats(b" ", 8 << 20, frames=20000))
    peak, read, refused = _peak_while_reading(path)
    assert refused.line == 4, refused
    assert read < path.stat().st_size / 10  # refused while most of it (160 GiB of text) was still unread
    assert peak < 4 * jsonlines.MAX_LINE, peak


def test_a_plain_file_with_an_overlong_line_is_refused_by_its_number(tmp_path):
    rng = random.Random(time.time_ns())
    path = tmp_path / "long.jsonl"
    before = rng.randint(1, 5)
    with open(path, "wb") as out:
        out.write(b'{"a": 1}\n' * before)
        out.write(b'{"a": "' + b"x" * (jsonlines.MAX_LINE + rng.randint(1, 1 << 20)) + b'"}\n{"a": 2}\n')
    _, _, refused = _peak_while_reading(path)
    assert refused.line == before + 1


def test_a_line_over_the_limit_inside_one_block_is_refused_by_block_lines(monkeypatch):
    monkeypatch.setattr(jsonlines, "MAX_LINE", 100)
    block = b'{"a": 1}\n' + b"y" * 101 + b"\n" + b'{"a": 2}\n'
    with pytest.raises(LineError) as refused:
        list(block_lines(7, block))
    assert refused.value.line == 8 and "longer than 100 bytes" in refused.value.reason
    assert [n for n, _ in block_lines(7, block.replace(b"y" * 101, b"y" * 100))] == [7, 8, 9]


def test_multi_frame_files_read_the_same_whatever_the_feed(tmp_path, monkeypatch):
    """The decompressor is fed in small pieces; frames that end inside a piece still join up."""
    seed = time.time_ns() % 2**32
    rng = random.Random(seed)
    lines = [json.dumps({"n": i, "pad": "z" * rng.randint(0, 3000)}).encode() + b"\n" for i in range(400)]
    cuts = sorted(rng.sample(range(1, len(lines)), 7))
    frames = [b"".join(lines[a:b]) for a, b in zip([0, *cuts], [*cuts, len(lines)], strict=True)]
    path = tmp_path / "frames.jsonl.zst"
    path.write_bytes(b"".join(zstandard.ZstdCompressor(level=rng.randint(1, 9)).compress(f) for f in frames))
    for feed in (1, 7, 1 << 10, 1 << 16):
        monkeypatch.setattr(jsonlines, "FEED", feed)
        with open(path, "rb") as stream:
            text = b"".join(block for _, block in read_blocks(path, stream, size=4096))
        assert text == b"".join(lines), (seed, feed)
