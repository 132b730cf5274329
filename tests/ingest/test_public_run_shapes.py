"""Every run shape the public exporter writes imports: each status, with and without a primary metric.

The rows are built here the way the public exporter derives a run row's summary columns from its
manifest (``primaryMetric`` is the string "none" when the run has none, the other summary columns
null), so a newer export with failed runs imports with no mismatch; real contradictions stay refused.
"""

from __future__ import annotations

import copy
from typing import get_args

import pytest
from ingest_kit import snapshot

from catalog_kit import catalog_lines, write_catalog
from kernelindex.ingest.catalog import import_catalog
from kernelindex.ingest.export import export_lines
from kernelindex.ingest.problems import ImportFailed
from kernelindex.records.canonical import comparison_key, correctness_key, digest, metric_key
from kernelindex.records.kernel_kinds import RunStatusWord
from kernelindex.store.rows import primary_metric

STATUSES = get_args(RunStatusWord)


def public_summary(bundle: dict, workload_manifest: dict) -> dict:
    """The summary columns of a run row as the public exporter derives them from the manifest."""
    spec = bundle["run"]["spec"]
    metric, statistic, unit, value = primary_metric(spec)
    wl_spec = workload_manifest["spec"]
    return {
        "runDigest": digest(bundle["run"]),
        "status": spec["status"],
        "observedAt": spec["observedAt"],
        "protocolKey": spec["protocolDigest"],
        "environmentKey": spec["environmentDigest"],
        "correctnessKey": correctness_key(wl_spec["correctness"]),
        "comparisonKey": comparison_key(
            operation=wl_spec["operationSpecDigest"],
            workload=spec["workloadDigest"],
            protocol=spec["protocolDigest"],
            environment=spec["environmentDigest"],
            correctness=correctness_key(wl_spec["correctness"]),
            metric=metric_key(metric, statistic, unit),
        ),
        "primaryMetric": metric or "none",
        "primaryStatistic": statistic,
        "primaryUnit": unit,
        "primaryValue": value,
        "sampleCount": (spec.get("timing") or {}).get("samples"),
    }


def catalog_with(status: str, *, with_metric: bool) -> list[dict]:
    """The small catalog with its first run turned into one of the given status (and metric)."""
    lines = catalog_lines()
    workload_manifest = next(line["row"]["manifest"] for line in lines if line["table"] == "workloads")
    run_line = next(line for line in lines if line["table"] == "benchmark_runs")
    bundle = copy.deepcopy(run_line["row"]["manifest"])
    spec = bundle["run"]["spec"]
    spec["status"] = status
    if not with_metric:
        del spec["timing"]
    run_line["row"]["manifest"] = bundle
    run_line["row"].update(public_summary(bundle, workload_manifest))
    if not with_metric:  # the exporter derives no measurement rows for a run without timing
        run_id = run_line["row"]["id"]
        lines = [line for line in lines if not (line["table"] == "measurements" and line["row"]["runId"] == run_id)]
    return lines


@pytest.mark.parametrize("with_metric", [True, False], ids=["metric", "no-metric"])
@pytest.mark.parametrize("status", STATUSES)
def test_every_status_and_metric_shape_imports(store, tmp_path, status, with_metric):
    lines = catalog_with(status, with_metric=with_metric)
    report = import_catalog(store, write_catalog(tmp_path / "c.jsonl.zst", lines))
    assert report.added["runs"] == 2
    with store.begin() as conn:
        back = [{"table": table, "row": row} for table, row in export_lines(conn)]
    assert back == lines  # "none" is kept as the file wrote it


def test_absent_and_null_summary_columns_equal_none(store, tmp_path):
    lines = catalog_with("runtime_error", with_metric=False)
    row = next(line["row"] for line in lines if line["table"] == "benchmark_runs")
    row["primaryMetric"] = None
    del row["primaryStatistic"], row["primaryUnit"]
    row["primaryValue"] = None
    assert import_catalog(store, write_catalog(tmp_path / "c.jsonl.zst", lines)).added["runs"] == 2


@pytest.mark.parametrize(
    ("with_metric", "column", "value"),
    [
        (False, "primaryMetric", "latency"),  # the row claims a metric the manifest does not have
        (True, "primaryMetric", "none"),  # the row denies the metric the manifest has
        (True, "primaryStatistic", "none"),
        (False, "primaryValue", 5000),
        (False, "status", "passed"),
    ],
)
def test_real_contradictions_stay_refused(store, tmp_path, with_metric, column, value):
    lines = catalog_with("runtime_error", with_metric=with_metric)
    row = next(line["row"] for line in lines if line["table"] == "benchmark_runs")
    row[column] = value
    before = snapshot(store)
    with pytest.raises(ImportFailed) as refused:
        import_catalog(store, write_catalog(tmp_path / "c.jsonl.zst", lines))
    assert any(p.field == column for p in refused.value.problems), refused.value.problems
    assert snapshot(store) == before
