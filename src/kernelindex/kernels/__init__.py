"""Our own solutions for the problem packs: each folder holds a solution.json and its source files."""

import pathlib

KERNELS_DIR = pathlib.Path(__file__).parent
TOKEN_SCATTER_BWD = KERNELS_DIR / "moe_token_scatter_bwd" / "solution.json"
LOAD_BALANCE_BWD = KERNELS_DIR / "moe_load_balance_bwd" / "solution.json"
