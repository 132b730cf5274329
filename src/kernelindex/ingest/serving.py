"""The serving tables of a catalog export: how each is read (see :mod:`kernelindex.ingest.catalog`).

A serving run's cohort key needs its model's tokenizer and its workload's streaming and load
generation: :func:`kernelindex.store.serving.writes.serving_run_row` checks the run's row against
the model and workload records its spec names by digest, which came earlier in the same file
(parents before children) or are stored already.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelindex.store.serving import rows as serving_rows

_COMMON = "id slug schemaVersion manifest createdAt"
# export table -> (store table, row converter, columns this version understands); the converters take
# and give rows of several shapes (a serving run's check gives back its manifest)
SERVING_TABLES: dict[str, tuple[str, Callable[[Any], Any], frozenset[str]]] = {
    "model_revisions": (
        "model_revisions",
        serving_rows.model_revision_columns,
        frozenset(f"{_COMMON} modelDigest name parameterCount contextLength tokenizer license".split()),
    ),
    "serving_stack_revisions": (
        "serving_stack_revisions",
        serving_rows.stack_revision_columns,
        frozenset(f"{_COMMON} projectId stackDigest name version".split()),
    ),
    "serving_configurations": (
        "serving_configurations",
        serving_rows.configuration_columns,
        frozenset(f"{_COMMON} stackRevisionId configurationDigest dtype quantization tensorParallel summary".split()),
    ),
    "serving_workloads": (
        "serving_workloads",
        serving_rows.serving_workload_columns,
        frozenset(f"{_COMMON} workloadDigest name streaming loadGeneration".split()),
    ),
    "serving_runs": (
        "serving_runs",
        serving_rows.check_serving_run,
        frozenset(
            "id runDigest modelRevisionId configurationId workloadId sourceId status observedAt publishedAt "
            "cohortKey protocolKey qualityPolicy metricSetKey scenario acceleratorVendor acceleratorModel "
            "acceleratorCount nodeCount totalAccelerators reported schemaVersion manifest supersedesId "
            "retractedAt retractionReason createdAt".split()
        ),
    ),
    "serving_measurements": (
        "serving_measurements",
        serving_rows.serving_measurement_columns,
        frozenset("id runId metric statistic unit value sampleCount".split()),
    ),
}
