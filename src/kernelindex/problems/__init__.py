"""Problem packs (definition.json + workload.jsonl, the SOL-ExecBench / FlashInfer-Bench format) that the
project wrote from its own restatement of the two seed workloads; read them with kernelindex.formats."""

import pathlib

PROBLEMS_DIR = pathlib.Path(__file__).parent
TOKEN_SCATTER_BWD = PROBLEMS_DIR / "moe_token_scatter_bwd"
LOAD_BALANCE_BWD = PROBLEMS_DIR / "moe_load_balance_bwd"
