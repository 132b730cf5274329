#!/usr/bin/env bash
# One entry point for the README's commands: `demo` (set up, import the sample, serve), `lint`
# (ruff, the import-layer contracts, mypy on the files pyproject.toml names) and `test` (set up, lint, then the
# whole test suite). Safe to run again: each step skips what is done.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${KERNELINDEX_VENV:-.venv}
PY="$VENV/bin/python"

setup_python() {
    if [ ! -x "$PY" ]; then
        python3 -m venv "$VENV"
    fi
    # Pinned CPU build first: an unpinned torch would pull a multi-GB CUDA build.
    if ! "$PY" -c "import torch" 2>/dev/null; then
        "$PY" -m pip install -q --upgrade pip
        "$PY" -m pip install -q "torch==2.13.0"
    fi
    "$PY" -m pip install -q -e ".[test]"
}

setup_test_extras() {
    # flashinfer-bench's own Trace model checks the trace lines `eval` writes for its problems; its
    # data models import without the GPU packages it asks for, so it goes in alone (--no-deps) with
    # the two small packages those models import
    if ! "$PY" -c "import flashinfer_bench.data" 2>/dev/null; then
        "$PY" -m pip install -q --no-deps "flashinfer-bench==0.1.2"
        "$PY" -m pip install -q "docstring-parser==0.18.0" "safetensors==0.8.0"
    fi
}

need_apt() {
    local missing=()
    for pkg in "$@"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        if [ "$(id -u)" -ne 0 ]; then
            echo "missing Debian packages: ${missing[*]} (run as root or install them)" >&2
            return 0
        fi
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

lint() {
    "$PY" -m ruff check src tests benchmarks
    "$PY" -m ruff format --check src tests benchmarks
    "$PY" -c "import sys; from importlinter.cli import lint_imports_command as c; sys.argv = ['lint-imports']; c()"
    typecheck
}

typecheck() {
    "$PY" -m mypy  # files and settings: [tool.mypy] in pyproject.toml
}

case "${1:-}" in
    demo)
        setup_python
        # the demo's reruns are verified only inside the sandbox (bubblewrap); without it they are
        # stored as reproducible, with the reason
        need_apt bubblewrap libseccomp2
        shift
        "$VENV/bin/kernelindex" demo "$@"
        ;;
    lint)
        setup_python
        lint
        ;;
    typecheck)
        setup_python
        typecheck
        ;;
    test)
        setup_python
        setup_test_extras
        lint
        # Real services for the tests: PostgreSQL (a throw-away cluster the suite starts), headless
        # Chromium for the page tests, and bubblewrap and libseccomp2 (the sandbox verified reruns run
        # in, with its seccomp filter).
        need_apt postgresql chromium chromium-driver bubblewrap libseccomp2
        shift
        "$VENV/bin/python" -m pytest -q -n 2 --dist loadgroup "$@"
        ;;
    *)
        echo "usage: scripts/dev.sh demo|lint|typecheck|test [args]" >&2
        exit 2
        ;;
esac
