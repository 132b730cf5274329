#!/usr/bin/env bash
# Both problem suites on this GPU in one call (see benchmarks/gpu_suite.py). Builds nothing: needs a
# Python with CUDA torch and Triton ($PYTHON, default python3); results go under $OUT when set (else a
# fresh folder under /tmp, printed at the end). Extra arguments go to gpu_suite.py (--only 009, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
"$PY" - <<'CHECK'
import torch, triton
assert torch.cuda.is_available(), "no CUDA device visible to torch"
print(f"python ok: torch {torch.__version__}, triton {triton.__version__}")
CHECK
exec timeout --signal=INT 470 "$PY" benchmarks/gpu_suite.py "$@"
