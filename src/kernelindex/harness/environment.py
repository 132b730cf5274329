"""The machine a run happened on, read from the machine itself (never typed in by a user).

On a CPU-only machine nothing from torch.cuda is initialised; library versions come from package
metadata so that reading them imports nothing heavy.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from importlib import metadata


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _nvidia_driver() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def read_environment(device: str) -> dict:
    """Facts for an ExecutionEnvironment record and the trace line's environment."""
    software = {
        "operatingSystem": platform.platform(terse=True),
        "kernel": platform.release(),
        "framework": {"name": "pytorch", "version": _version("torch") or "unknown"},
        "libraries": {
            k: v
            for k, v in {
                "python": platform.python_version(),
                "triton": _version("triton"),
                "numpy": _version("numpy"),
            }.items()
            if v
        },
    }
    if device.startswith("cuda"):
        import torch

        index = torch.device(device).index or 0
        props = torch.cuda.get_device_properties(index)
        major, minor = torch.cuda.get_device_capability(index)
        hardware = {
            "vendor": "nvidia",
            "product": props.name,
            "architecture": f"sm_{major}{minor}",
            "memoryBytes": int(props.total_memory),
            "count": 1,
        }
        driver = _nvidia_driver()
        if driver:
            software["driver"] = driver
        if torch.version.cuda:
            software["cudaToolkit"] = torch.version.cuda
    else:
        vendor = "cpu"
        model = _cpu_model()
        for name in ("intel", "amd", "arm", "apple"):
            if name in model.lower():
                vendor = name
        hardware = {
            "vendor": vendor,
            "product": model,
            "architecture": platform.machine().lower().replace("-", "_"),
            "count": 1,
        }
        memory = _memory_bytes()
        if memory:
            hardware["memoryBytes"] = memory
    return {"hardware": hardware, "software": software}
