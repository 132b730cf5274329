"""Upstream benchmark documents (SOL-ExecBench, FlashInfer-Bench, KernelBench): their models, readers and the
KernelIndex records built from them.

Pure, beside `records/`: parsing, and reading the files being parsed, but no store, network or
subprocess. The harness (which runs problems) and ingest (which imports them) both read here, so a
problem folder means the same thing to `eval` and to `import`.
"""
