"""The Rich table `kernelindex eval` prints: one row per case, then the suite's scores."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelindex.harness.replies import untrusted

_STYLE = {"PASSED": "green", "INCORRECT_NUMERICAL": "red", "REWARD_HACK": "bold red", "TIMEOUT": "yellow"}


def _ms(value_ns: float | None) -> str:
    return "—" if value_ns is None else f"{value_ns / 1e6:.4f}"


def _num(value: float | None, fmt: str = "{:.3g}") -> str:
    return "—" if value is None else fmt.format(value)


def render(suite, console: Console) -> None:
    # names come from the problem and the solution: markup in them is text, never Rich's
    title = f"{suite.definition_name} · {suite.solution.name} · {suite.environment['hardware']['product']}"
    table = Table(title=escape(untrusted(title, 300, lines=False)))
    for column in (
        "case",
        "status",
        "median ms",
        "p05–p95 ms",
        "95% CI ms",
        "ref ms",
        "speedup",
        "SOL",
        "max abs err",
        "matched",
        "worst unmatched",
    ):
        table.add_column(column, justify="left" if column in ("case", "status") else "right")
    for result in suite.cases:
        lat, ref = result.latency, result.reference_latency
        outputs = result.outputs
        table.add_row(
            result.case.uuid[:8],
            f"[{_STYLE.get(result.status, 'red')}]{result.status}[/]",
            _ms(lat.median if lat else None),
            f"{_ms(lat.p05)}–{_ms(lat.p95)}" if lat else "—",
            f"{_ms(lat.ci95_low)}–{_ms(lat.ci95_high)}" if lat else "—",
            _ms(ref.median if ref else None),
            _num(result.score.speedup if result.score else None, "{:.2f}×"),
            _num(result.score.sol if result.score else None, "{:.3f}"),
            _num(max(o.max_absolute_error for o in outputs) if outputs else None),
            _num(min(o.matched_ratio for o in outputs) if outputs else None, "{:.2%}"),
            _num(max(o.max_unmatched_error for o in outputs) if outputs else None),
        )
    console.print(table)
    s = suite.score
    console.print(
        f"passed {s.passed}/{s.cases} · geomean latency {_num(s.geomean_latency_ms, '{:.4f}')} ms · "
        f"geomean speedup over baseline {_num(s.geomean_speedup, '{:.2f}')}× · faster than baseline {s.faster_than_baseline}/{s.cases} · "
        f"SOL score {_num(s.sol_score, '{:.4f}')}"
    )
    if not suite.sandboxed:
        console.print(f"not verified: no sandbox ({escape(suite.sandbox_note)}); these runs are reproducible only")
    for result in suite.cases:
        if not result.passed:
            first = untrusted(result.log or "", 2000).strip().splitlines()
            console.print(
                f"[dim]{result.case.uuid[:8]} {result.status}: {escape(first[-1]) if first else ''}[/]", highlight=False
            )
            said = result.solution_output.strip().splitlines()
            if said:
                tail = "\n".join(said[-12:])
                console.print(f"[dim]  the solution's process said (last lines):\n{escape(tail)}[/]", highlight=False)
