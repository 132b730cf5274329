"""Record model, canonical JSON, digests and keys. No I/O here."""
