"""Evidence beyond a run: signing keys, signatures, API keys and their tokens, attestations and
correction requests; their tables and the writes that add them."""
