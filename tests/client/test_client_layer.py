"""The client is a leaf: importing it loads records/ and nothing of the store, the site or the CLI."""

from __future__ import annotations

import json
import subprocess
import sys


def test_the_client_imports_only_records():
    code = (
        "import json, sys, kernelindex.client; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('kernelindex.'))))"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
    assert "kernelindex.client.sync" in loaded and "kernelindex.records.models" in loaded
    assert [m for m in loaded if not m.startswith(("kernelindex.client", "kernelindex.records"))] == []
