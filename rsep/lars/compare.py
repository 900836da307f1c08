"""`rsep compare`: a query run
as C-SPARQL (pull, period U) and as CQELS (push) through the engine and through the
LARS translations, interval by interval (001 Def. 4), with Theorem 3/4's conditions."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import IO

import pyoxigraph as ox

from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import ContinuousQuery
from rsep.algebra.window import Boundary, WindowSpec
from rsep.lars.agreement import ANS, Evaluator, push_pull_agree, theorem4, ttp
from rsep.lars.core import LarsError, show_term
from rsep.lars.rsp import (
    RSPQuery,
    assign_streams,
    continuous,
    cq,
    cs,
    from_query,
)
from rsep.lars.translate import (
    Translation,
    background,
    data_stream_of,
    query_input,
    solutions,
    units_fn,
    window_operator,
)
from rsep.runtime.engine import Engine
from rsep.stream.event import Event
from rsep.stream.files import StreamFile
from rsep.stream.source import DeadLetter, merge_streams

# ---------------------------------------------------------------- compare


@dataclass
class Row:
    t1: int
    t2: int
    agree: bool
    push: set
    pull: set
    lars_push: set
    lars_pull: set
    conditions: list = field(default_factory=list)
    # per trigger point t of the interval: what was pushed at t (IStream, inc(P, t)), by
    # the engine and by LARS; ``carried``: Def. 4's "holds throughout" term minus those
    pushes: dict = field(default_factory=dict)
    carried: set = field(default_factory=set)
    lars_pushes: dict = field(default_factory=dict)
    lars_carried: set = field(default_factory=set)

    @property
    def lars_agree(self) -> bool:
        return self.lars_push == self.lars_pull

    @property
    def consistent(self) -> bool:
        return self.lars_push == self.push and self.lars_pull == self.pull

    @property
    def failed(self) -> list[str]:
        return [c.name for c in self.conditions if not c.holds]

    def to_json(self) -> dict:
        return {
            "interval": [self.t1, self.t2], "agree": self.agree,
            "push": _sols(self.push), "pull": _sols(self.pull),
            "only_push": _sols(self.push - self.pull), "only_pull": _sols(self.pull - self.push),
            "lars_agree": self.lars_agree, "lars_matches_engine": self.consistent,
            "conditions": [c.to_json() for c in self.conditions], "failed": self.failed,
        }


def _sols(s: Iterable[tuple]) -> list[dict]:
    return [dict(x) for x in sorted(s)]


def _key(bindings: dict[str, str] | None) -> tuple:
    return tuple(sorted((bindings or {}).items()))


def engine_runs(query: ContinuousQuery, events: list[Event], graphs: dict[str, list[ox.Triple]],
                 time_unit_ms: int | None, until: int) -> dict[int, set[tuple]]:
    eng = Engine(time_unit_ms=time_unit_ms)
    for iri, ts in graphs.items():
        eng.add_graph(iri, ts)
    eng.register(query)
    out: dict[int, set[tuple]] = {}
    for o in eng.run(iter(events), until=until):
        out.setdefault(o.time, set()).add(_key(o.bindings))
    return out


@dataclass
class Comparison:
    query: RSPQuery
    rows: list[Row]
    period: int
    until: int

    @property
    def agree(self) -> bool:
        return all(r.agree for r in self.rows)


def compare(cq_: ContinuousQuery, events: list[Event], graphs: dict[str, list[ox.Triple]],
            period: int, until: int | None = None, time_unit_ms: int | None = None) -> Comparison:
    """Run Q as C-SPARQL (pull every ``period``) and as CQELS (push), by the engine and
    by LARS (tau_1(cs(Q)) pulled, tau_2(cq(Q)) pushed), interval by interval."""
    if period <= 0:
        raise LarsError("--period must be a positive integer")
    for e in events:
        if e.start != e.end:
            raise LarsError(f"{e.origin}: interval events are not supported by the comparison")
    q = from_query(cq_)
    stream_triples: dict[str, set[tuple]] = {}
    for e in events:
        stream_triples.setdefault(e.stream, set()).update(
            (str(t.subject), str(t.predicate), str(t.object)) for t in e.triples)
    q = assign_streams(q, stream_triples)
    last = max((e.time for e in events), default=0)
    if until is None:
        until = -(-max(last, 1) // period) * period
    units = units_fn(time_unit_ms)
    q_cs, q_cq = cs(q), cq(q)
    pull_q = continuous(q_cs, "csparql", report=ReportPolicy.parse(f"periodic:{period}"))
    push_i = continuous(q_cq, "cqels")
    push_r = continuous(q_cq, "cqels", report=ReportPolicy.parse(f"on-arrival,periodic:{period}"),
                        r2s=R2S.RSTREAM)
    pulled = engine_runs(pull_q, events, graphs, time_unit_ms, until)
    inc = engine_runs(push_i, events, graphs, time_unit_ms, until)
    rstream = engine_runs(push_r, events, graphs, time_unit_ms, until)

    d = data_stream_of(query_input(events, q), 0, until)
    b = background(q, graphs)
    push_windows = [window_operator(_with(s.window, Boundary.RIGHT_CLOSED), units, "engine")
                    for s in q_cq.S]
    pull_windows = [window_operator(_with(s.window, Boundary.LEFT_CLOSED), units, "engine")
                    for s in q_cs.S]
    p_push = Translation(q_cq, 2, push_windows).program()
    p_pull = Translation(q_cs, 1, pull_windows).program()
    e_push = Evaluator(p_push, d, b)
    e_pull = Evaluator(p_pull, d, b)
    static = {a.args[:3] for a in b}
    rows = []
    i = 0
    while (i + 1) * period <= until:
        t1, t2 = i * period, (i + 1) * period
        triggers = ttp(t1, t2, d)
        a1: set = set()
        pushes = {t: set(inc.get(t, set())) for t in triggers}
        for t in triggers:
            a1 |= pushes[t]
        common: set | None = None
        for t in triggers + [t2]:
            x = rstream.get(t, set())
            common = set(x) if common is None else common & x
        carried = (common or set()) - a1
        a1 |= carried
        a2 = pulled.get(t2, set())
        ag = push_pull_agree(e_push, e_pull, t1, t2, ANS)
        conds = theorem4(q, d, static, t1, t2, push_windows, pull_windows, units)
        lars_push = solutions(ag.push, q)
        lars_pushes = {t: solutions(e_push.inc(t, ANS), q) for t in triggers}
        lars_carried = lars_push - set().union(*lars_pushes.values())
        rows.append(Row(t1, t2, a1 == a2, a1, set(a2), lars_push,
                        solutions(ag.pull, q), conds, pushes, carried, lars_pushes,
                        lars_carried))
        i += 1
    return Comparison(q, rows, period, until)


def _with(spec: WindowSpec, boundary: Boundary) -> WindowSpec:
    return replace(spec, boundary=boundary)


def _show_sol(s: tuple) -> str:
    return "(" + ", ".join(f"{k}={show_term(v)}" for k, v in s) + ")"


def write_comparison(c: Comparison, out: IO[str], fmt: str = "table") -> None:
    if fmt == "jsonl":
        for r in c.rows:
            out.write(json.dumps(r.to_json()) + "\n")
        return
    cells = [(" ".join(map(_show_sol, sorted(r.push))) or "-",
              " ".join(map(_show_sol, sorted(r.pull))) or "-") for r in c.rows]
    wp = max([len("push (CQELS)"), *(len(p) for p, _ in cells)])
    wl = max([len("pull (C-SPARQL)"), *(len(q) for _, q in cells)])
    out.write(f"{'interval':<14} {'agree':<6} {'push (CQELS)':<{wp}} {'pull (C-SPARQL)':<{wl}} "
              "failed conditions\n")
    for r, (push, pull) in zip(c.rows, cells, strict=True):
        failed = ", ".join(r.failed) or "none"
        out.write(f"({r.t1}, {r.t2}]".ljust(14) + f" {'yes' if r.agree else 'NO':<6} {push:<{wp}} "
                  f"{pull:<{wl}} {failed}\n")
        if not r.agree:
            for s in sorted(r.push - r.pull):
                out.write(f"    only pushed: {_show_sol(s)}\n")
            for s in sorted(r.pull - r.push):
                out.write(f"    only pulled: {_show_sol(s)}\n")
            for cnd in r.conditions:
                if not cnd.holds:
                    out.write(f"    {cnd.name} fails: {cnd.detail}\n")
            if not r.failed:
                out.write("    (every condition of Theorem 4 holds: this would contradict it)\n")
        if not r.consistent:
            out.write("    warning: the LARS translations give push "
                      + (" ".join(map(_show_sol, sorted(r.lars_push))) or "-") + ", pull "
                      + (" ".join(map(_show_sol, sorted(r.lars_pull))) or "-") + "\n")
    n = sum(not r.agree for r in c.rows)
    out.write(f"{'agree everywhere' if n == 0 else f'disagree in {n} of {len(c.rows)} intervals'} "
              f"(period {c.period}, up to {c.until})\n")


def load_events(streams: list[tuple[str, str]]) -> list[Event]:
    dead = DeadLetter()
    events = list(merge_streams([StreamFile(path, iri) for iri, path in streams], dead))
    if dead.count:
        raise LarsError(f"{dead.count} input record(s) rejected")
    return events


def load_graphs(graphs: list[tuple[str, str]]) -> dict[str, list[ox.Triple]]:
    out: dict[str, list[ox.Triple]] = {}
    for iri, path in graphs:
        out.setdefault(iri, []).extend(q.triple for q in ox.parse(path=path))
    return out
