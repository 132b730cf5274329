"""The transparency log: every record the store holds is a leaf of one append-only RFC 9162
Merkle tree (``tables``), appended in the transaction that stored it (``append``), read back as
roots and proofs (``reads``); ``leaves`` says which rows are records and what each leaf holds."""
