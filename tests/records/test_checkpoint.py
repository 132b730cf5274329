"""C2SP signed-note checkpoints: the exact text format, the verifier key, and refusals."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives import serialization

from kernelindex.records.checkpoint import (
    Checkpoint,
    CheckpointError,
    open_checkpoint,
    parse_verifier_key,
    sign_checkpoint,
    verifier_key,
)
from kernelindex.records.signing import new_private_key


def test_note_text_and_key_follow_the_c2sp_formats():
    key = new_private_key()
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    root = hashlib.sha256(b"root").digest()
    note = sign_checkpoint(Checkpoint("example.org/log", 42, root), "example.org/log", key)
    body, sig_line = note.split("\n\n")
    assert body == f"example.org/log\n42\n{base64.b64encode(root).decode()}"
    dash, name, blob = sig_line.rstrip("\n").split(" ")
    assert (dash, name) == ("\u2014", "example.org/log")
    blob_bytes = base64.b64decode(blob)
    expected_hash = hashlib.sha256(b"example.org/log\n\x01" + raw).digest()[:4]
    assert blob_bytes[:4] == expected_hash and len(blob_bytes) == 68
    key.public_key().verify(blob_bytes[4:], (body + "\n").encode())  # Ed25519 over the body text
    vkey = verifier_key("example.org/log", key.public_key())
    encoded = base64.b64encode(b"\x01" + raw).decode()
    assert vkey == f"example.org/log+{expected_hash.hex()}+{encoded}"
    assert open_checkpoint(note, vkey) == Checkpoint("example.org/log", 42, root)
    assert parse_verifier_key(vkey)[0] == "example.org/log"


def test_other_keys_edits_and_garbage_are_refused():
    key, other = new_private_key(), new_private_key()
    note = sign_checkpoint(Checkpoint("o", 7, bytes(32)), "o", key)
    with pytest.raises(CheckpointError, match="no signature by o"):
        open_checkpoint(note, verifier_key("o", other.public_key()))
    with pytest.raises(CheckpointError, match="does not hold"):
        open_checkpoint(note.replace("\n7\n", "\n8\n"), verifier_key("o", key.public_key()))
    encoded = verifier_key("o", key.public_key()).split("+", 2)[2]
    with pytest.raises(CheckpointError, match="hash does not match"):
        parse_verifier_key(f"o+00000000+{encoded}")
    for garbage in ("", "o\n7\n", "o\n07\nAAAA\n\n\u2014 o AAAA\n", "o\nx\n" + "A" * 44 + "\n\n"):
        with pytest.raises(CheckpointError):
            open_checkpoint(garbage, verifier_key("o", key.public_key()))
