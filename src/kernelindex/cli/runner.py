"""`kernelindex runner`: take jobs from a kernelindex server, run them here (or on a Ray cluster),
post signed records."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path

import typer

from kernelindex.cli.common import BlobRoot, Cases, MemoryMb, case_list, fail, load_private_key, stderr


def runner_command(
    server: str = typer.Option(..., "--server", help="the kernelindex site, e.g. https://kernelindex.example"),
    key: Path = typer.Option(..., "--key", help="this runner's Ed25519 private key (see kernelindex runners add)"),
    gpus: str = typer.Option(None, "--gpus", help="GPU indices to use, e.g. 0,1 (one job per GPU at a time)"),
    hardware: str = typer.Option("cpu", "--hardware", help="cpu, or the GPU product this runner was registered for"),
    once: bool = typer.Option(False, "--once", help="take at most one job (with --ray-address: one batch), then exit"),
    poll: float = typer.Option(5.0, "--poll", min=0.1, help="seconds between polls of an empty queue"),
    ray_address: str = typer.Option(
        None, "--ray-address", help="run the jobs as Ray tasks on this cluster (or 'local')"
    ),
    jobs: int = typer.Option(4, "--jobs", min=1, max=64, help="with --ray-address: jobs leased and run at once"),
    sandbox: str = typer.Option(
        "required", "--sandbox", help="required (refuse to start without it), auto (unverified runs then), or off"
    ),
    memory_mb: MemoryMb = 16384,
    cases: Cases = None,
    blob_root: BlobRoot = None,
) -> None:
    """Pull one job at a time (a lease kept alive by heartbeats), run it in the harness, sign and post it."""
    from kernelindex.client import ApiError
    from kernelindex.client.protocol import checked_base_url
    from kernelindex.services.harness_adapter import sandbox_refusal
    from kernelindex.services.queue import QueueError, hardware_name
    from kernelindex.services.remote_runner import Runner, RunnerLimits, connect, run_on_ray, run_one, summary

    refusal = sandbox_refusal(sandbox)
    if refusal:
        fail(refusal)
    limits = RunnerLimits(sandbox, memory_mb, case_list(cases), blob_root)  # this runner's word on every job
    private_key = load_private_key(key)
    try:
        checked_base_url(server)
    except ValueError as exc:
        fail(f"--server: {exc}")
    if gpus is not None and not re.fullmatch(r"\d+(,\d+)*", gpus):
        fail(f"--gpus must list GPU indices such as 0,1, not {gpus!r}")
    try:
        hardware = hardware_name(hardware)
    except QueueError as exc:
        fail(f"--hardware: {exc}")
    err = stderr()
    stop = threading.Event()
    failures: list[str] = []

    def step(runner: Runner, device: str) -> list:
        if ray_address:
            return run_on_ray(runner, hardware, jobs, limits)
        outcome = run_one(runner, device, progress=lambda event: case_done(device, event), limits=limits)
        return [outcome] if outcome else []

    def case_done(device: str, event) -> None:
        """One line on stderr per finished case (the harness also reports each phase; those are skipped)."""
        if event.phase == "done" and event.result is not None:
            err.print(
                f"{device} case {event.case_number + 1}/{event.cases} {event.uuid} {event.result.status}", markup=False
            )

    def work(device: str) -> None:
        runner = connect(server, private_key)
        try:
            while not stop.is_set():
                try:
                    outcomes = step(runner, device)
                except ApiError as exc:
                    failures.append(str(exc))
                    err.print(f"error: {exc}", markup=False)
                    return
                except Exception as exc:  # anything else went wrong here: say so and stop this worker
                    failures.append(f"{type(exc).__name__}: {exc}")
                    err.print(f"error: {server}: {type(exc).__name__}: {exc}", markup=False)
                    return
                for outcome in outcomes:
                    typer.echo(summary(outcome))
                    if not outcome.accepted:
                        failures.append(outcome.detail)
                if once:
                    return
                if not outcomes:
                    stop.wait(poll)
        finally:
            runner.close()

    devices = _devices(ray_address, hardware, gpus)
    _run_workers(work, devices[:1] if once else devices, stop)
    raise typer.Exit(1 if failures else 0)


def _devices(ray_address: str | None, hardware: str, gpus: str | None) -> list[str]:
    """Where the jobs run: the Ray cluster (started here), the CPU, or each GPU --gpus names (refused
    when this machine lacks one)."""
    from kernelindex.services.campaign import RayUnavailable, start_ray
    from kernelindex.services.harness_adapter import missing_devices

    if ray_address:
        try:
            start_ray(None if ray_address == "local" else ray_address, hardware)
        except RayUnavailable as exc:
            fail(f"--ray-address: {exc}")
        return ["ray"]
    devices = ["cpu"] if hardware == "cpu" else [f"cuda:{g}" for g in (gpus or "0").split(",")]
    missing = missing_devices(devices)
    if missing:
        fail(
            f"--hardware {hardware} --gpus {gpus or '0'}: this machine has no {', '.join(missing)} "
            "(torch.cuda sees too few GPUs); run the runner on its GPU machine"
        )
    return devices


def _run_workers(work: Callable[[str], None], devices: list[str], stop: threading.Event) -> None:
    """One worker thread per device until each is done; Ctrl-C asks them all to stop."""
    threads = [threading.Thread(target=work, args=(d,), daemon=True) for d in devices]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)
    except KeyboardInterrupt:
        stop.set()
