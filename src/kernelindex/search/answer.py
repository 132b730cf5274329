"""From a query to an answer: which operations it names, which of their workloads it pins, and
for each the best run per evidence level in every matching comparison group with its rank table.

Filters (GPU, architecture, dtype, evidence, source, licence) are applied to runs and workloads
*before* cases are chosen, so bracketing neighbours are always cases with runs the reader asked
for. When nothing survives the filters, they are dropped one kind at a time (GPU first) and the
answer says which were dropped. Ranks come from :mod:`kernelindex.ranking` only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kernelindex.ranking.cohort import RankedGroup
from kernelindex.ranking.evidence_facts import evidence_for_runs
from kernelindex.ranking.reads import ranked_groups
from kernelindex.records.canonical import metric_key
from kernelindex.records.families import shown_family
from kernelindex.records.units import format_value
from kernelindex.records.vocabulary import EvidenceLevel
from kernelindex.search.bracketing import Case, bracket
from kernelindex.search.models import (
    EntityMatch,
    GroupAnswer,
    Links,
    OperationAnswer,
    OperationRef,
    RankRow,
    SearchAnswer,
    WorkloadAnswer,
)
from kernelindex.search.query import Query, gpu_matches, parse, resolve_axis, split_words, word_score
from kernelindex.store.generation import generation_of, has_written
from kernelindex.store.reads import search as reads

if TYPE_CHECKING:
    from sqlalchemy import Connection

ANSWERED_OPERATIONS = 4
OTHER_OPERATIONS = 20
OVERVIEW_WORKLOADS = 4
GROUPS_PER_WORKLOAD = 4
RANK_ROWS = 10
RELAX_ORDER = (
    ("gpu", ("gpus", "architectures")),
    ("evidence", ("evidence",)),
    ("dtype", ("dtypes",)),
    ("source", ("sources",)),
    ("license", ("license",)),
)


def search(conn: Connection, text: str, rank_rows: int = RANK_ROWS) -> SearchAnswer:
    """The answer to ``text`` (raises :class:`kernelindex.search.query.QueryError` when it is refused)."""
    query = asked = parse(text, reads.source_slugs(conn))
    scored = _score(query, _catalogue(conn))
    best = max((s for s, _ in scored), default=0)
    named = [op for s, op in scored if s == best and s > 0]
    if not query.words and not query.digests and (query.gpus or query.architectures or query.sources):
        named = _operations_on(conn, query)
    notes: list[str] = []
    if query.ignored:
        notes.append(
            f"ignored {len(query.ignored)} word(s) past the first 40 or not understood: " + " ".join(query.ignored[:5])
        )
    if query.fillers:
        notes.append("left out filler word(s): " + " ".join(query.fillers))
    answered = named[:ANSWERED_OPERATIONS]
    context = _Context(conn, rank_rows)
    ops = [context.operation(op, query, best) for op in answered]
    relaxed: list[str] = []
    if ops and query.has_filters and not any(w.groups for a in ops for w in a.workloads):
        for name, fields in RELAX_ORDER:
            if not any(getattr(query, f) for f in fields):
                continue
            cleared: dict[str, Any] = {f: (None if f in ("evidence", "license") else ()) for f in fields}
            query = replace(query, **cleared)
            relaxed.append(name)
            ops = [context.operation(op, query, best) for op in answered]
            if any(w.groups for a in ops for w in a.workloads):
                break
    if relaxed:
        notes.append(
            f"nothing matched with the {', '.join(relaxed)} filter(s); the answer below leaves "
            f"{'it' if len(relaxed) == 1 else 'them'} out"
        )
    others = named[ANSWERED_OPERATIONS:]
    if any(w.groups for a in ops for w in a.workloads):  # operations with nothing to rank move to the list
        empty = {a.operation.slug for a in ops if not any(w.groups for w in a.workloads)}
        others = [op for op in answered if op.slug in empty] + others
        ops = [a for a in ops if a.operation.slug not in empty]
    matches = _matches(conn, query, named)
    if not ops and not matches and not query.empty:
        notes.append("no operation, workload, implementation or digest matches this query")
    return SearchAnswer(
        query=asked.as_dict(),
        relaxed=relaxed,
        notes=notes,
        operations=ops,
        otherOperations=[_op_ref(op) for op in others[:OTHER_OPERATIONS]],
        matches=matches,
    )


def _operations_on(conn: Connection, query: Query) -> list[reads.OperationEntry]:
    """A query of filters only (``H200``, ``source:sol-execbench``): the operations with such runs."""
    envs = None
    if query.gpus or query.architectures:
        envs = [
            key
            for key, model, arch in reads.environment_hardware(conn)
            if (not query.gpus or any(gpu_matches(g, model) for g in query.gpus))
            and (not query.architectures or (arch or "").lower() in query.architectures)
        ]
    ids = reads.operations_with_runs(conn, envs, list(query.sources) or None)
    by_id = {op.id: op for op, _, _ in _catalogue(conn)}
    return [by_id[i] for i in ids if i in by_id]


def _op_ref(op: reads.OperationEntry) -> OperationRef:
    return OperationRef(
        slug=op.slug,
        name=op.name,
        family=shown_family(op.family, op.slug),
        digest=op.digest,
        links=Links(self=f"/operations/{op.slug}", json=f"/api/v1/operations/{op.slug}"),
    )


_CATALOGUES: dict[tuple, list[tuple[reads.OperationEntry, set[str], set[str]]]] = {}


def _catalogue(conn: Connection) -> list[tuple[reads.OperationEntry, set[str], set[str]]]:
    """Every operation with its words and numbers, kept while the operation tables are unchanged
    (they only grow, so their row counts and last sequence numbers say when)."""
    signature = (str(conn.engine.url), *reads.catalogue_signature(conn))
    if signature not in _CATALOGUES:
        entries = []
        for op in reads.operation_catalogue(conn):
            tokens: set[str] = set()
            for text in (op.slug, op.name or "", op.family or "", *op.aliases):
                tokens.update(split_words(text))
            entries.append((op, tokens, {t for t in tokens if t.isdigit()}))
        _CATALOGUES.clear()
        _CATALOGUES[signature] = entries
    return _CATALOGUES[signature]


def _score(query: Query, catalogue) -> list[tuple[int, reads.OperationEntry]]:
    if not query.words:
        return []
    out = [(word_score(query.words, tokens, numbers), op) for op, tokens, numbers in catalogue]
    out.sort(key=lambda pair: -pair[0])
    return out


def _matches(conn: Connection, query: Query, named: Sequence[reads.OperationEntry]) -> list[EntityMatch]:
    out = [EntityMatch(**m) for prefix in query.digests for m in reads.digest_matches(conn, prefix)]
    named_tokens: set[str] = set()
    for op in named:
        for text in (op.slug, op.name or "", op.family or "", *op.aliases):
            named_tokens.update(split_words(text))
    residual = [w for w in query.words if w not in named_tokens and not w.isdigit()]
    for impl in _implementation_matches(conn, residual):
        detail = (
            f"{impl.runs} run(s)"
            + (f" · operation {impl.operation}" if impl.operation else "")
            + (f" · project {impl.project}" if impl.project else "")
        )
        out.append(
            EntityMatch(
                kind="implementation",
                id=impl.id,
                digest=impl.digest,
                title=impl.title,
                href=f"/operations/{impl.operation}" if impl.operation else None,
                detail=detail,
            )
        )
    return out + _pending_implementations(conn, residual)


_IMPLEMENTATIONS: dict[str, tuple[int, list[reads.ImplementationEntry]]] = {}  # store -> (generation, catalogue)


def _implementation_matches(conn: Connection, words: Sequence[str]) -> list[reads.ImplementationEntry]:
    """Implementations whose title, slug or project holds every word (authors are in titles, e.g.
    ``ac4k · 042_…``), busiest first, at most ``reads.ENTITY_LIMIT``. The catalogue is read once per store
    generation (every write moves it) and kept per process; inside a write it is read afresh."""
    if not words:
        return []
    generation = None if has_written(conn) else generation_of(conn)
    store = str(conn.engine.url)
    kept = _IMPLEMENTATIONS.get(store)
    if generation is not None and kept is not None and kept[0] == generation:
        catalogue = kept[1]
    else:
        catalogue = reads.implementation_catalogue(conn)
        if generation is not None:
            _IMPLEMENTATIONS.clear()
            _IMPLEMENTATIONS[store] = (generation, catalogue)
    for word in words:  # one pass a word over what is left (a comprehension: ~0.1 ms over 4,000 entries)
        catalogue = [entry for entry in catalogue if word in entry.text]
    return catalogue[: reads.ENTITY_LIMIT]


def _pending_implementations(conn: Connection, words: list[str]) -> list[EntityMatch]:
    """Implementations named by runs whose record is not stored (``ac4k`` over the sample's seeds alone)."""
    return [
        EntityMatch(
            kind="implementation",
            id=impl["digest"],
            digest=impl["digest"],
            title=impl["title"] or impl["digest"],
            href=f"/runs/{impl['runId']}",
            detail=f"{impl['runCount']} run(s)"
            + (f" · operation {impl['operation']}" if impl["operation"] else "")
            + " · its record is not stored yet",
        )
        for impl in reads.pending_implementation_matches(conn, words)
    ]


def _axes_key(axes: dict[str, Any]) -> str:
    return json.dumps(sorted(axes.items()), default=str)


@dataclass
class _Merged:
    """One case: every workload record with the same operation, kind and axes (upstream's and ours)."""

    members: list[reads.WorkloadEntry]

    @property
    def first(self) -> reads.WorkloadEntry:
        return self.members[0]


class _Context:
    """One answer's reads, each done once however many times relaxation asks again."""

    def __init__(self, conn: Connection, rank_rows: int) -> None:
        self.conn = conn
        self.rank_rows = rank_rows
        self._loaded: dict[str, tuple] = {}
        self._levels: dict[str, str] = {}
        self._candidates: dict[str, list[Any]] = {}

    def _load(self, op_id: str) -> tuple[list[reads.WorkloadEntry], list[reads.RunCombo]]:
        if op_id not in self._loaded:
            workloads = reads.workloads_of(self.conn, [op_id])
            self._loaded[op_id] = (workloads, reads.run_combos(self.conn, [w.id for w in workloads]))
        return self._loaded[op_id]

    def levels(self, digests: Iterable[str | None]) -> dict[str, str]:
        """Evidence levels, from the one evidence function, for digests not yet known (None: a run
        without a digest, which has none)."""
        wanted = [d for d in digests if d and d not in self._levels]
        if wanted:
            self._levels.update({d: e.level for d, e in evidence_for_runs(self.conn, wanted).items()})
        return self._levels

    def _evidenced(self, op_id: str, workload_ids: list[str], query: Query) -> set[tuple[str, str]]:
        """(workload, group) pairs with a passed run at the asked evidence level or above, that also
        passes the GPU and source filters (only candidates can be above ``reported``)."""
        if op_id not in self._candidates:
            self._candidates[op_id] = reads.evidence_candidates(self.conn, workload_ids=workload_ids)
        found = [c for c in self._candidates[op_id] if _keep(c, query)]
        levels = self.levels(c.run_digest for c in found)
        floor = EvidenceLevel(query.evidence or EvidenceLevel.REPORTED)
        return {
            (c.workload_id, c.comparison_key)
            for c in found
            if EvidenceLevel(levels.get(c.run_digest, EvidenceLevel.REPORTED)) >= floor
        }

    # ---------------------------------------------------------------- one operation

    def operation(self, op: reads.OperationEntry, query: Query, score: int) -> OperationAnswer:
        conn = self.conn
        all_workloads, all_combos = self._load(op.id)
        workloads = [w for w in all_workloads if _keep_workload(w, query)]
        kept_ids = {w.id for w in workloads}
        combos = [c for c in all_combos if c.workload_id in kept_ids and _keep(c, query)]
        if query.evidence and query.evidence != EvidenceLevel.REPORTED:
            allowed = self._evidenced(op.id, [w.id for w in all_workloads], query)
            combos = [c for c in combos if (c.workload_id, c.comparison_key) in allowed]
        if query.license:
            allowed = reads.licensed_groups(conn, sorted(kept_ids), query.license)
            combos = [c for c in combos if (c.workload_id, c.comparison_key) in allowed]
        kept_by_workload: dict[str, list[reads.RunCombo]] = {}
        for c in combos:
            kept_by_workload.setdefault(c.workload_id, []).append(c)

        axis_names = list(op.axis_names) or sorted({a for w in workloads for a in w.axes})
        pinned: dict[str, Any] = {}
        unresolved: list[str] = []
        for pin in query.axes:
            name = resolve_axis(pin.name, axis_names)
            if name is None:
                unresolved.append(pin.name)
            else:
                pinned[name] = pin.value
        notes = []
        if unresolved:
            notes.append(f"{', '.join(unresolved)}: not an axis of this operation (its axes: {', '.join(axis_names)})")

        merged: dict[str, _Merged] = {}
        for w in workloads:
            if w.kind == "WorkloadCase" and w.axes:
                merged.setdefault(_axes_key(w.axes), _Merged([])).members.append(w)

        def measured(m: _Merged) -> bool:
            return any(kept_by_workload.get(w.id) for w in m.members)

        def weight(m: _Merged) -> int:
            return sum(c.count for w in m.members for c in kept_by_workload.get(w.id, []))

        by_key = dict(merged)
        chosen: list[tuple[_Merged, str, float | None]] = []
        if pinned:
            mode = "exact"
            found = bracket(pinned, [Case(k, m.first.axes) for k, m in by_key.items() if measured(m)])
            if found.exact:
                chosen = [(by_key[c.key], "exact", None) for c in found.exact]
            else:
                mode = "bracketing"
                defined = bracket(pinned, [Case(k, m.first.axes) for k, m in by_key.items()])
                for case in defined.exact:
                    notes.append(f"the case {_axes_text(case.axes)} is defined but has no run that matches the filters")
                chosen = [(by_key[n.case.key], f"{n.side} {n.axis}", n.distance) for n in found.neighbours]
                if not chosen and defined.neighbours:
                    notes.append(
                        "no measured case matches the filters; the nearest defined cases are listed "
                        "without runs, with the suites' results below"
                    )
                    chosen = [(by_key[n.case.key], f"{n.side} {n.axis}", n.distance) for n in defined.neighbours]
            suites = [
                w
                for w in workloads
                if w.kind != "WorkloadCase"
                and kept_by_workload.get(w.id)
                and _suite_holds(w, [m.first.axes for m, _, _ in chosen] or [pinned])
            ]
        else:
            mode = "overview"
            ranked = sorted((m for m in by_key.values() if measured(m)), key=weight, reverse=True)
            chosen = [(m, "case", None) for m in ranked[:OVERVIEW_WORKLOADS]]
            suites = sorted(
                (w for w in workloads if w.kind != "WorkloadCase" and kept_by_workload.get(w.id)),
                key=lambda w: -sum(c.count for c in kept_by_workload[w.id]),
            )[:OVERVIEW_WORKLOADS]
        chosen.sort(key=lambda c: (_axes_sort(c[0].first.axes), c[1]))

        entries = [(m.members, rel, dist) for m, rel, dist in chosen] + [([w], "suite", None) for w in suites]
        keys = sorted(
            {c.comparison_key for members, _, _ in entries for w in members for c in kept_by_workload.get(w.id, [])}
        )
        groups = ranked_groups(conn, keys)
        # Levels: exactly for the rows shown, and for every run that could be above "reported".
        shown = [e.run.digest for g in groups.values() for e in g.entries[: self.rank_rows]]
        levels = self.levels(shown + [c.run_digest for c in reads.evidence_candidates(conn, keys=keys)])
        titles = reads.run_titles(
            conn,
            [e.run.run_id for g in groups.values() for e in g.entries[: self.rank_rows]]
            + [e.run.run_id for g in groups.values() for e in _best_by_level(g, levels).values()],
        )
        hardware = {c.comparison_key: c for c in all_combos}

        workload_answers = []
        for members, relation, distance in entries:
            member_keys = sorted(
                {
                    c.comparison_key
                    for w in members
                    for c in kept_by_workload.get(w.id, [])
                    if c.comparison_key in groups
                }
            )
            group_answers = [self._group(groups[k], levels, titles, hardware.get(k)) for k in member_keys]
            group_answers = [g for g in group_answers if g.size and _meets(g, query)]
            group_answers.sort(
                key=lambda g: (
                    -(max(map(EvidenceLevel, g.bestByEvidence)).rank if g.bestByEvidence else 0),
                    -g.size,
                )
            )
            first = members[0]
            workload_answers.append(
                WorkloadAnswer(
                    ids=[w.id for w in members],
                    digests=[w.digest for w in members],
                    kind=first.kind,
                    title=first.title,
                    axes=first.axes if first.kind == "WorkloadCase" else {},
                    relation=relation,
                    distance=distance,
                    measured=bool(member_keys),
                    groups=group_answers[:GROUPS_PER_WORKLOAD],
                    links=Links(self=f"/workloads/{first.id}", json=f"/api/v1/workloads/{first.id}"),
                )
            )
        if not any(w.groups for w in workload_answers):
            notes.append(
                "no run of this operation matches the filters"
                if query.has_filters
                else "no ranked run of this operation yet"
            )
        return OperationAnswer(
            operation=_op_ref(op),
            score=score,
            mode=mode,
            pinned=pinned,
            unresolvedAxes=unresolved,
            axisNames=axis_names,
            notes=notes,
            workloads=workload_answers,
        )

    def _group(
        self, g: RankedGroup, levels: dict[str, str], titles: dict[str, str], combo: reads.RunCombo | None
    ) -> GroupAnswer:
        hardware = combo.hardware_model if combo else None

        def row(e) -> RankRow:
            return RankRow(
                rank=e.rank,
                tied=e.tied,
                runId=e.run.run_id,
                digest=e.run.digest or "",
                title=titles.get(e.run.run_id) or e.run.run_id,
                value=e.run.value,
                unit=g.unit,
                display=format_value(e.run.value, g.unit),
                hardware=hardware,
                evidence=levels.get(e.run.digest or "", EvidenceLevel.REPORTED.value),
                links=Links(self=f"/runs/{e.run.run_id}", json=f"/api/v1/runs/{e.run.run_id}"),
            )

        rows = [row(e) for e in g.entries[: self.rank_rows]]
        best = {level: row(e) for level, e in _best_by_level(g, levels).items()}
        return GroupAnswer(
            comparisonKey=g.comparison_key,
            metricKey=metric_key(g.metric, g.statistic, g.unit),
            direction=g.direction_text,
            hardware=hardware,
            source=combo.source_slug if combo else None,
            size=g.size,
            bestByEvidence=best,
            rows=rows,
            rowsShown=len(rows),
            links=Links(self=f"/rankings/{g.comparison_key}", json=f"/api/v1/rankings/{g.comparison_key}"),
        )


def _keep(run: Any, query: Query) -> bool:
    """The GPU, architecture and source filters, on a run or a group of like runs."""
    if query.gpus and not any(gpu_matches(g, run.hardware_model) for g in query.gpus):
        return False
    if query.architectures and (run.hardware_architecture or "").lower() not in query.architectures:
        return False
    return not query.sources or (run.source_slug or "").lower() in query.sources


def _keep_workload(w: reads.WorkloadEntry, query: Query) -> bool:
    if not query.dtypes or not w.dtypes:  # a suite states no tensors: its cases do
        return True
    return any(any(d == want or d.startswith(want) for d in w.dtypes) for want in query.dtypes)


def _best_by_level(g: RankedGroup, levels: dict[str, str]) -> dict[str, Any]:
    best: dict[str, Any] = {}
    for e in g.entries:
        level = levels.get(e.run.digest or "", EvidenceLevel.REPORTED.value)
        best.setdefault(level, e)
    return {level.value: best[level] for level in reversed(EvidenceLevel) if level in best}


def _meets(g: GroupAnswer, query: Query) -> bool:
    if not query.evidence:
        return True
    return any(EvidenceLevel(level) >= query.evidence for level in g.bestByEvidence)


def _axes_sort(axes: dict[str, Any]) -> tuple:
    return tuple((k, v if isinstance(v, (int, float)) else float("inf"), str(v)) for k, v in sorted(axes.items()))


def _axes_text(axes: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in axes.items())


def _suite_holds(suite: reads.WorkloadEntry, wanted: list[dict[str, Any]]) -> bool:
    """Whether a suite's cases include one of ``wanted`` (every pinned axis equal)."""
    for case in suite.suite_cases:
        for axes in wanted:
            if all(str(case.get(k)) == str(v) for k, v in axes.items() if k in case):
                return True
    return False


def answer_operation(conn: Connection, op_id: str, query: Query, rank_rows: int = RANK_ROWS) -> OperationAnswer | None:
    """One named operation's answer to a structured query (the kernel resolver's): no word scoring and
    no relaxation, since a resolver's filters are constraints; None when the operation has no entry."""
    op = next((entry for entry, _, _ in _catalogue(conn) if entry.id == op_id), None)
    return None if op is None else _Context(conn, rank_rows).operation(op, query, 0)


def named_operations(conn: Connection, text: str) -> list[tuple[str, str]]:
    """(id, slug) of the operations the words of ``text`` name best (the search box's reading: ``042``)."""
    scored = _score(parse(text, ()), _catalogue(conn))
    best = max((s for s, _ in scored), default=0)
    return [(op.id, op.slug) for s, op in scored if s == best and s > 0]
