"""Log checkpoints in the C2SP ``tlog-checkpoint`` form, signed as C2SP signed notes (Ed25519).

Why this form: it is what Go's checksum database, Sigstore's Rekor and the transparency-log
witnesses read, so a checkpoint of this index can be checked and witnessed with their tools.
A checkpoint is three lines (origin, tree size in decimal, root hash in standard base64), then a
blank line and one signature line per signer: ``— <key name> <base64(key hash || signature)>``;
the key hash is the first four bytes of SHA-256(key name, a newline, 0x01, the raw public key),
and the signature is Ed25519 over the text before the blank line. A verifier knows the signer by
its *verifier key*: ``<name>+<key hash hex>+<base64(0x01 || raw public key)>``.
No I/O; ``cryptography`` is imported where a key is used, as in :mod:`kernelindex.records.signing`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernelindex.records.refusal import Refusal, RefusalKind

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

ED25519 = b"\x01"
EM_DASH = "\u2014"
MAX_NOTE_BYTES = 1 << 20
_NAME = re.compile(r"^[^\s+]+$")  # a key name: no spaces, no plus signs


class CheckpointError(Refusal, ValueError):
    """A checkpoint or verifier key that does not parse, or a signature that does not hold."""

    kind = RefusalKind.INVALID


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes

    def body(self) -> str:
        """The signed text: origin, size, base64 root, each on its line."""
        return f"{self.origin}\n{self.size}\n{base64.b64encode(self.root).decode('ascii')}\n"


def _raw(public_key: Ed25519PublicKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_hash(name: str, public_key: Ed25519PublicKey) -> bytes:
    return hashlib.sha256(name.encode("utf-8") + b"\n" + ED25519 + _raw(public_key)).digest()[:4]


def verifier_key(name: str, public_key: Ed25519PublicKey) -> str:
    """``name+hash+key``: what a client pins to check this signer's notes."""
    if not _NAME.match(name):
        raise CheckpointError(f"key name {name!r} must have no spaces or plus signs")
    encoded = base64.b64encode(ED25519 + _raw(public_key)).decode("ascii")
    return f"{name}+{key_hash(name, public_key).hex()}+{encoded}"


def parse_verifier_key(text: str) -> tuple[str, Ed25519PublicKey]:
    """(name, public key) of a verifier key; refused unless its hash matches its name and key."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    parts = text.strip().split("+", 2)  # the key (base64) may hold plus signs; the name may not
    if len(parts) != 3 or not parts[0]:
        raise CheckpointError("a verifier key is name+hash+key")
    name, stated, encoded = parts
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise CheckpointError(f"verifier key: the key is not base64: {exc}") from exc
    if len(raw) != 33 or raw[:1] != ED25519:
        raise CheckpointError("verifier key: not an Ed25519 key (0x01 and 32 bytes)")
    public_key = Ed25519PublicKey.from_public_bytes(raw[1:])
    if key_hash(name, public_key).hex() != stated.lower():
        raise CheckpointError("verifier key: its hash does not match its name and key")
    return name, public_key


def sign_checkpoint(checkpoint: Checkpoint, name: str, private_key: Ed25519PrivateKey) -> str:
    """The signed note of ``checkpoint`` by the key ``name``."""
    body = checkpoint.body()
    signature = private_key.sign(body.encode("utf-8"))
    blob = base64.b64encode(key_hash(name, private_key.public_key()) + signature).decode("ascii")
    return f"{body}\n{EM_DASH} {name} {blob}\n"


def _parse_body(body: str) -> Checkpoint:
    lines = body.split("\n")
    if len(lines) < 4 or lines[-1] != "":
        raise CheckpointError("a checkpoint body is origin, size and root hash, one a line")
    origin, size_text, root_text = lines[0], lines[1], lines[2]
    if not origin:
        raise CheckpointError("the checkpoint's origin line is empty")
    if not size_text.isdigit() or (size_text != "0" and size_text.startswith("0")) or len(size_text) > 19:
        raise CheckpointError(f"the checkpoint's size {size_text[:40]!r} is not a decimal integer")
    try:
        root = base64.b64decode(root_text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise CheckpointError(f"the checkpoint's root hash is not base64: {exc}") from exc
    if len(root) != 32:
        raise CheckpointError(f"the checkpoint's root hash has {len(root)} bytes, not 32")
    return Checkpoint(origin, int(size_text), root)


def open_checkpoint(note: str, verifier: str) -> Checkpoint:
    """The checkpoint a signed note holds, once a signature by ``verifier`` holds on it."""
    from cryptography.exceptions import InvalidSignature

    if len(note.encode("utf-8")) > MAX_NOTE_BYTES:
        raise CheckpointError("the note is longer than 1 MiB")
    body, sep, signatures = note.partition("\n\n")
    if not sep:
        raise CheckpointError("the note has no blank line before its signatures")
    body += "\n"
    checkpoint = _parse_body(body)
    name, public_key = parse_verifier_key(verifier)
    wanted = key_hash(name, public_key)
    for line in signatures.split("\n"):
        if not line:
            continue
        fields = line.split(" ")
        if len(fields) != 3 or fields[0] != EM_DASH:
            raise CheckpointError(f"not a signature line: {line[:60]!r}")
        if fields[1] != name:
            continue
        try:
            blob = base64.b64decode(fields[2], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise CheckpointError(f"signature by {name} is not base64") from exc
        if blob[:4] != wanted:
            continue
        try:
            public_key.verify(blob[4:], body.encode("utf-8"))
        except InvalidSignature as exc:
            raise CheckpointError(f"the signature by {name} does not hold on this checkpoint") from exc
        return checkpoint
    raise CheckpointError(f"the note carries no signature by {name}")


def check_extends(old: Checkpoint, new: Checkpoint, proof: list[bytes]) -> None:
    """Refuse unless the tree of ``new`` is the tree of ``old`` with leaves added (RFC 9162
    consistency): a smaller tree, another origin or a proof that fails is a fork or a rewrite."""
    from kernelindex.records.merkle import ProofError, verify_consistency

    if new.origin != old.origin:
        raise CheckpointError(f"the log's origin changed from {old.origin!r} to {new.origin!r}")
    if new.size < old.size:
        raise CheckpointError(f"the log shrank from {old.size} to {new.size} leaves: its history was rewritten")
    try:
        verify_consistency(old.size, new.size, old.root, new.root, proof)
    except ProofError as exc:
        raise CheckpointError(
            f"the log of {new.size} leaves does not extend the one of {old.size} leaves seen before "
            f"(a fork or a rewritten history): {exc}"
        ) from exc


def check_included(checkpoint: Checkpoint, digest: str, index: int, proof: list[bytes]) -> None:
    """Refuse unless the record with content ``digest`` is leaf ``index`` of ``checkpoint``'s tree."""
    from kernelindex.records.merkle import ProofError, leaf_hash, verify_inclusion

    if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise CheckpointError(f"{digest[:80]!r} is not a sha256: digest")
    try:
        verify_inclusion(index, checkpoint.size, leaf_hash(bytes.fromhex(digest[7:])), proof, checkpoint.root)
    except ProofError as exc:
        raise CheckpointError(f"{digest} is not leaf {index} of the checkpoint's tree: {exc}") from exc


def _hashes(answer: dict, what: str) -> list[bytes]:
    try:
        return [bytes.fromhex(h) for h in answer["proof"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"the {what} proof is not a list of hex hashes") from exc


def prove_answer(checkpoint_answer: dict, proof_answer: dict, digest: str, verifier: str | None = None) -> Checkpoint:
    """Check a server's checkpoint (``GET /api/v1/log/checkpoint``) and inclusion proof for ``digest``
    with nothing taken on trust but ``verifier`` (the pinned log key; default: the one the server
    names, trusted on first use). Returns the checkpoint the record is proved in."""
    key = verifier or checkpoint_answer.get("verifierKey") or ""
    checkpoint = open_checkpoint(str(checkpoint_answer.get("note", "")), key)
    if proof_answer.get("treeSize") != checkpoint.size:
        raise CheckpointError(
            f"the proof is for {proof_answer.get('treeSize')} leaves, not the checkpoint's {checkpoint.size}"
        )
    index = proof_answer.get("leafIndex")
    if not isinstance(index, int):
        raise CheckpointError("the inclusion proof names no leaf index")
    check_included(checkpoint, digest, index, _hashes(proof_answer, "inclusion"))
    return checkpoint


def extension_answer(
    old_note: str, new_answer: dict, proof_answer: dict | None, verifier: str
) -> tuple[Checkpoint, Checkpoint]:
    """Check that the server's checkpoint ``new_answer`` extends the signed note ``old_note`` saved
    earlier, both signed by ``verifier``, with the consistency proof ``proof_answer`` (None when the
    sizes are equal). Returns (old, new)."""
    old = open_checkpoint(old_note, verifier)
    new = open_checkpoint(str(new_answer.get("note", "")), verifier)
    proof = [] if proof_answer is None else _hashes(proof_answer, "consistency")
    check_extends(old, new, proof)
    return old, new
