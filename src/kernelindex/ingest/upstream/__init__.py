"""Importers of the upstream sources' own formats (SOL-ExecBench, FlashInfer-Bench, GPU MODE, Liger, MLPerf)."""
