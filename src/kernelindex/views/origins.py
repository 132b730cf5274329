"""Where this index started: the two seed runs and our own problem packs.

Both are known from files shipped with the package, not from the store: the seed bundles' run
digests and the digests of the records our problem packs produce are computed once when the app
starts. Pages then look those digests up, so a seed or pack that was never imported is reported as
missing rather than linked.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from kernelindex.formats.packs import problem_folders
from kernelindex.records.canonical import digest
from kernelindex.sample import HERE as SAMPLE_DIR
from kernelindex.sample import PROBLEMS as PROBLEMS_DIR
from kernelindex.store.reads.catalog import run_counts_by_workload, workloads_by_digest
from kernelindex.store.reads.runs import runs_by_digest
from kernelindex.views.common import NativeFigure, ViewModel, source_native_display
from kernelindex.views.formatting import format_value

if TYPE_CHECKING:
    from sqlalchemy import Connection

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SeedRun:
    file: str
    digest: str
    benchmark: str | None
    external_id: str | None


@dataclass(frozen=True)
class Pack:
    """One of our problem packs, by the digests of the records `problem_records` makes from it."""

    folder: str
    name: str  # the definition name, which is also the OperationSpec's name
    operation_digest: str
    suite_digest: str | None
    case_digests: frozenset[str]

    @property
    def workload_digests(self) -> frozenset[str]:
        return self.case_digests | ({self.suite_digest} if self.suite_digest else set())


@dataclass(frozen=True)
class Origins:
    seeds: tuple[SeedRun, ...]
    packs: tuple[Pack, ...]

    def pack_of(self, workload_digest: str | None) -> Pack | None:
        return next((p for p in self.packs if workload_digest in p.workload_digests), None)

    def packs_for(self, operation_digests: set[str], operation_names: set[str]) -> list[Pack]:
        """Packs for the same problem: same operation record, or named like it (name or alias)."""
        return [p for p in self.packs if p.operation_digest in operation_digests or p.name in operation_names]

    @property
    def pack_workload_digests(self) -> frozenset[str]:
        return frozenset().union(*(p.workload_digests for p in self.packs))


def _seed_runs(sample_dir: Path) -> list[SeedRun]:
    seeds = []
    for path in sorted(sample_dir.glob("*.json")):
        bundle = json.loads(path.read_text(encoding="utf-8"))
        for item in bundle if isinstance(bundle, list) else [bundle]:
            native = (item["run"].get("spec") or {}).get("sourceNative") or {}
            seeds.append(SeedRun(path.name, digest(item["run"]), native.get("benchmark"), native.get("externalId")))
    return seeds


def _packs(problems_dir: Path) -> list[Pack]:
    from kernelindex.formats.errors import FormatError
    from kernelindex.formats.problem import load_problem
    from kernelindex.formats.records import records_for
    from kernelindex.records.errors import RecordError

    packs = []
    for folder in problem_folders(problems_dir):
        try:
            made = records_for(load_problem(folder))
        except (FormatError, RecordError, OSError):  # a broken pack must not take the site down
            log.exception("problem pack %s could not be read", folder)
            continue
        packs.append(
            Pack(
                folder.name,
                made.operation["metadata"]["name"],
                digest(made.operation),
                digest(made.suite),
                frozenset(digest(c) for c in made.cases.values()),
            )
        )
    return packs


def load_origins(sample_dir: Path = SAMPLE_DIR, problems_dir: Path = PROBLEMS_DIR) -> Origins:
    return Origins(tuple(_seed_runs(sample_dir)), tuple(_packs(problems_dir)))


# ---------------------------------------------------------------- the landing page's section


class SeedLinks(ViewModel):
    self: str
    workload: str | None


class MissingSeed(ViewModel):
    """A seed run this store does not hold."""

    file: str
    digest: str
    benchmark: str | None
    externalId: str | None
    found: Literal[False]


class FoundSeed(ViewModel):
    file: str
    digest: str
    benchmark: str | None
    externalId: str | None
    found: Literal[True]
    id: str
    status: str
    title: str
    primary: str = Field(description="its primary value, readable")
    figures: list[NativeFigure]
    links: SeedLinks


class SuiteLink(ViewModel):
    id: str
    href: str


class PackSummary(ViewModel):
    folder: str
    name: str
    operationDigest: str
    caseCount: int
    storedWorkloads: int
    imported: bool
    runCount: int
    workloadIds: list[str]
    suite: SuiteLink | None


class OriginsView(ViewModel):
    """Where this index started: the seed runs and our own problem packs (``GET /api/v1/origins``)."""

    seeds: list[FoundSeed | MissingSeed]
    packs: list[PackSummary]


def origins_view(conn: Connection, origins: Origins) -> OriginsView:
    return OriginsView(seeds=seed_summaries(conn, origins), packs=[pack_summary(conn, p) for p in origins.packs])


def seed_summaries(conn: Connection, origins: Origins) -> list[FoundSeed | MissingSeed]:
    """Each seed run with its headline figures, or ``found: False`` when the store lacks it."""
    found = runs_by_digest(conn, [s.digest for s in origins.seeds])
    out: list[FoundSeed | MissingSeed] = []
    for seed in origins.seeds:
        row = found.get(seed.digest)
        stated = {"file": seed.file, "digest": seed.digest, "benchmark": seed.benchmark, "externalId": seed.external_id}
        if row is None:
            out.append(MissingSeed(**stated, found=False))
            continue
        run = row.manifest["run"]
        native = (run.get("spec") or {}).get("sourceNative")
        out.append(
            FoundSeed(
                **stated,
                found=True,
                id=row.id,
                status=row.status,
                title=(run.get("metadata") or {}).get("title") or seed.benchmark or seed.digest,
                primary=format_value(row.primary_value, row.primary_unit),
                figures=source_native_display(native),
                links=SeedLinks(
                    self=f"/runs/{row.id}", workload=f"/workloads/{row.workload_id}" if row.workload_id else None
                ),
            )
        )
    return out


def pack_summary(conn: Connection, pack: Pack) -> PackSummary:
    stored = workloads_by_digest(conn, sorted(pack.workload_digests))
    ids = [w.id for w in stored]
    run_count = sum(run_counts_by_workload(conn, ids).values())
    suite = next((w for w in stored if w.workload_digest == pack.suite_digest), None)
    return PackSummary(
        folder=pack.folder,
        name=pack.name,
        operationDigest=pack.operation_digest,
        caseCount=len(pack.case_digests),
        storedWorkloads=len(stored),
        imported=bool(stored),
        runCount=run_count or 0,
        workloadIds=ids,
        suite=SuiteLink(id=suite.id, href=f"/workloads/{suite.id}") if suite is not None else None,
    )
