"""Reading and writing catalog JSON lines, streamed (an export is never held whole in memory).

Writing matches the public exports byte for byte: ``JSON.stringify`` output, i.e. no spaces,
UTF-8 left unescaped and numbers in ECMAScript form (``0.000010048658277929109``, not
``1.0048658277929109e-05``), which Python's ``json`` cannot be told to do.
"""

from __future__ import annotations

from collections.abc import Iterator
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, BinaryIO

from kernelindex.ingest.problems import LineError
from kernelindex.records.canonical import es_number
from kernelindex.records.strict_json import MAX_LINE, loads_strict

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CHUNK = 1 << 20  # bytes per block read_blocks cuts (unless told), and per read of an uncompressed file
READ = 1 << 16  # compressed bytes read at a time: an export compresses ~16:1, so a read gives ~1 MiB of
# text; the first lines come out after one small read, and the text is cut while still in cache
# compressed bytes handed to the decompressor at a time: zstd expands a byte at most ~32,768-fold
# (a run-length block), so no one call returns more than ~32 MiB, whatever the file holds; it costs
# nothing measurable on a real export (the whole export decompresses in ~0.02 s either way)
FEED = 1 << 10


def _zstd_chunks(stream: BinaryIO) -> Iterator[bytes]:
    """Decompressed chunks of a (possibly multi-frame) zstd stream; a cut-off frame is an error."""
    import zstandard  # here, not above: the site imports this module for its JSON lines alone

    head = stream.read(4)
    if not head:
        raise LineError(None, "the file is empty")
    if head != ZSTD_MAGIC:
        raise LineError(None, "not a zstd file (the first bytes are not a zstd frame header)")
    pending = head
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    while True:
        data = pending or stream.read(READ)  # what a frame left over first: many small frames never pile up
        pending = b""
        if not data:
            break
        view, fed = memoryview(data), 0
        while fed < len(data) and not decompressor.eof:
            piece = view[fed : fed + FEED]
            fed += len(piece)
            try:
                out = decompressor.decompress(piece)
            except zstandard.ZstdError as exc:
                raise LineError(None, f"corrupt zstd data: {exc}") from exc
            if out:
                yield out
        if decompressor.eof:  # the next frame starts in what the last piece left over, then the rest
            rest = decompressor.unused_data + data[fed:]
            decompressor = zstandard.ZstdDecompressor().decompressobj()
            if rest:
                pending = rest
            else:
                nxt = stream.read(READ)
                if not nxt:
                    return
                pending = nxt
    if not decompressor.eof:
        raise LineError(None, "truncated zstd file: the last frame ends early")


def _plain_chunks(stream: BinaryIO) -> Iterator[bytes]:
    while chunk := stream.read(CHUNK):
        yield chunk


def read_blocks(
    path: Path, stream: BinaryIO, size: int = CHUNK, *, first_size: int | None = None
) -> Iterator[tuple[int, bytes]]:
    """``(number of its first line, bytes)`` of each run of whole lines of a ``.jsonl`` or
    ``.jsonl.zst`` stream, about ``size`` bytes each (cut at the first line end after ``size``
    bytes; only the last may lack one): a unit of work that costs one search to cut, not one
    step per line (:func:`block_lines` splits it). With ``first_size`` the first block is that
    large and each next one twice the last, up to ``size``: the first lines are at hand sooner.
    A line longer than :data:`MAX_LINE` refuses the file (:class:`LineError` naming it) as soon as
    that many bytes of it are read."""
    chunks = _zstd_chunks(stream) if path.name.endswith(".zst") else _plain_chunks(stream)
    number, seen_any = 1, False
    want = max(1, min(size, first_size or size))
    pieces: list[bytes] = []  # the text not cut yet, joined only once it can hold a block
    held = 0
    open_line = 0  # bytes read since the last line end
    for chunk in chunks:
        last_end = chunk.rfind(b"\n")
        if open_line + (len(chunk) if last_end < 0 else chunk.find(b"\n")) > MAX_LINE:
            raise _too_long(number + sum(piece.count(b"\n") for piece in pieces))
        open_line = open_line + len(chunk) if last_end < 0 else len(chunk) - last_end - 1
        pieces.append(chunk)
        held += len(chunk)
        # no line end in this chunk: nothing more can be cut than before (and a long line is not
        # joined again with every chunk of it)
        if held < want or last_end < 0:
            continue
        data = b"".join(pieces) if len(pieces) > 1 else chunk
        start = 0
        while (end := data.find(b"\n", start + want - 1)) >= 0:
            block = data[start : end + 1]
            seen_any = seen_any or not block.isspace()
            yield number, block
            number += block.count(b"\n")
            start = end + 1
            want = min(size, 2 * want)
        pieces = [data[start:]] if start < len(data) else []
        held = len(data) - start
    if tail := b"".join(pieces):
        seen_any = seen_any or not tail.isspace()
        yield number, tail
    if not seen_any:
        raise LineError(None, "the file is empty (no JSON lines)")


def block_lines(first: int, block: bytes) -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of each non-blank line of a block (its first line numbered
    ``first``), checked to be UTF-8 text: a parser reads the bytes, so they are not decoded here."""
    for number, raw in enumerate(block.split(b"\n"), first):
        if len(raw) > MAX_LINE:  # read_blocks refuses most sooner; a line inside one big chunk, here
            raise _too_long(number)
        if raw.strip():
            if not raw.isascii():
                _utf8_or_refuse(number, raw)
            yield number, raw


def _too_long(number: int) -> LineError:
    return LineError(number, f"longer than {MAX_LINE} bytes, the most one line may hold")


def _utf8_or_refuse(number: int, raw: bytes) -> None:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LineError(number, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def parse_line(number: int, text: str | bytes) -> Any:
    try:
        return loads_strict(text)
    except ValueError as exc:
        raise LineError(number, f"malformed JSON: {exc}") from exc


def js_dumps(value: Any) -> str:
    """``JSON.stringify(value)``: compact, key order kept, ECMAScript numbers."""
    parts: list[str] = []
    _encode(value, parts.append)
    return "".join(parts)


def _encode(value: Any, out) -> None:
    if isinstance(value, str):
        out(encode_basestring(value))
    elif value is None:
        out("null")
    elif value is True:
        out("true")
    elif value is False:
        out("false")
    elif isinstance(value, int):
        out(str(value))
    elif isinstance(value, float):
        out(es_number(value))
    elif isinstance(value, dict):
        out("{")
        first = True
        for key, item in value.items():
            if not first:
                out(",")
            first = False
            out(encode_basestring(key))
            out(":")
            _encode(item, out)
        out("}")
    elif isinstance(value, (list, tuple)):
        out("[")
        for i, item in enumerate(value):
            if i:
                out(",")
            _encode(item, out)
        out("]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON")
