"""``rsep run --trace ?VAR=VALUE`` for EP-SPARQL: what became of the events of one key.

EP-SPARQL (003) keeps no runs: its operators join interval-stamped triples, and under
chronological / recent selection (000 Appendix A) each complex event consumes the events
that justify it. So its trace follows events: each input event that mentions ``VALUE``
(as a subject or object of one of its triples), each complex event detected whose
mappings bind ``?VAR`` to it (with the events it came from), each of those events consumed,
by a complex event of this key or of another (an event holding two sensors' readings is
consumed whole: the other sensor's reading goes with it), and each that left the query's
window (the ``getDURATION()`` bound of its FILTER) unconsumed, after which no complex event
can start at it.

It wraps the runtime's own methods per instance (:class:`~rsep.epsparql.runtime.EpContext`
``insert``, :class:`~rsep.epsparql.runtime.EpSparqlRuntime` ``outputs`` and ``evaluate``), as
``--stage-times`` does: without ``--trace`` nothing here is loaded or called.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import IO, Any

from rsep.algebra.selection import Selection
from rsep.stream.event import Event
from rsep.stream.time import TimeKind, format_time


def _same(term: str, value: str) -> bool:
    # N-Triples as written, or an IRI / a literal's lexical form bare
    if term == value:
        return True
    bare = value.strip("<>").strip('"')
    if term.startswith("<"):
        return term[1:-1] == bare
    return term.startswith('"') and term[1:].partition('"')[0] == bare


class EpTracer:
    """Prints, per instant, what the EP-SPARQL runtime did with the key's events."""

    def __init__(self, var: str | None, value: str, out: IO[str] | None, query_name: str = "",
                 show: Callable[[str], str] = str,
                 sink: Callable[[int | str, str], None] | None = None) -> None:
        self.var = var  # None: attached but following no key (rsep serve, between traces)
        self.value = value
        self.out = out
        self.sink = sink  # (time, text) of each line, instead of printing them on ``out``
        self.prefix = f"{query_name}: " if query_name else ""
        self.show = show
        self.kind: TimeKind | None = None
        self.items: dict[int, tuple[int, int]] = {}  # every event's item -> (start, end)
        self.arrived: list[tuple[int, int, str]] = []  # the key's events not yet said
        self.held: dict[int, int] = {}  # the key's events, unconsumed: item -> start
        self.said: list[str] = []  # this instant's lines, from outputs

    def retarget(self, var: str | None, value: str = "") -> None:
        """Follow another key (None: none) from the next event on; events taken in before
        are not known to it."""
        self.var, self.value = var, value
        self.items.clear()
        self.arrived.clear()
        self.held.clear()
        self.said.clear()

    def attach(self, rt: Any) -> None:
        """Trace an :class:`~rsep.epsparql.runtime.EpSparqlRuntime` (before it runs)."""
        self.rt = rt
        ctx = rt.ctx
        insert = ctx.insert

        def inserted(e: Event) -> None:
            insert(e)
            if self.var is None:
                return
            item = e.seq or id(e)
            self.items[item] = (e.start, e.end)
            for t in e.triples:
                if _same(str(t.subject), self.value) or _same(str(t.object), self.value):
                    self.arrived.append((e.end, item, e.graph))
                    self.held[item] = e.start
                    break

        ctx.insert = inserted
        outputs = rt.outputs

        def output(s: Any, tau: int, *a: Any) -> Any:
            if self.var is not None:
                self._solution(s)
            return outputs(s, tau, *a)

        rt.outputs = output
        evaluate = rt.evaluate

        def evaluated(tau: int) -> Any:
            self.kind = rt.kind
            got = evaluate(tau)
            if self.var is not None:
                self._instant(tau)
            return got

        rt.evaluate = evaluated

    def _t(self, t: float) -> str:
        return str(format_time(int(t), self.kind))

    def _events(self, items: frozenset[int]) -> str:
        spans = sorted(self.items[i] for i in items if i in self.items)
        return ", ".join(self._t(b) if a == b else f"[{self._t(a)}, {self._t(b)}]"
                         for a, b in spans) or "derived events"

    def _solution(self, s: Any) -> None:
        rt = self.rt
        mu = dict(s.mu)
        mine = self.var in mu and _same(mu[self.var], self.value)
        policy: Selection = rt.query.policy
        if mine:
            shown = " ".join(f"?{v}={self.show(mu[v])}" for v in rt.query.select
                             if v in mu and v != self.var)
            self.said.append(f"complex event [{self._t(s.ta)}, {self._t(s.tw)}] detected from "
                             f"the events at {self._events(s.just)}" + (f" ({shown})" if shown
                                                                        else ""))
        if policy is Selection.UNRESTRICTED:
            return
        taken = sorted(i for i in s.just if i in self.held)
        if not taken:
            return
        for i in taken:
            del self.held[i]
        whose = "it" if mine else (f"a complex event [{self._t(s.ta)}, {self._t(s.tw)}] of "
                                   f"?{self.var}={self.show(mu.get(self.var, '?'))}")
        self.said.append(f"the event(s) at {self._events(frozenset(taken))} consumed by "
                         f"{whose} ({policy.value.lower()}: an event takes part in one "
                         "complex event of the query, and no later one sees it)")

    def _instant(self, tau: int) -> None:
        for end, _, graph in self.arrived:
            self._say(end, f"event {self.show(f'<{graph}>')} at {self._t(end)} mentions "
                      f"{self.show(self.value)}")
        self.arrived.clear()
        for line in self.said:
            self._say(tau, line)
        self.said.clear()
        h, strict = self.rt.window
        if h == math.inf:
            return
        # an event that ended before the window cannot justify a complex event any more: its
        # span is not needed (a server traces for days)
        for i in [i for i, (_, b) in self.items.items() if b < tau - h and i not in self.held]:
            del self.items[i]
        # (PolicyState.deadline's reading of the bound: ta <= tau - h, or < for a strict one)
        gone = [i for i, ta in self.held.items() if (ta <= tau - h if strict else ta < tau - h)]
        for i in sorted(gone, key=self.held.__getitem__):
            left = "" if self.rt.query.policy is Selection.UNRESTRICTED else " unconsumed"
            ta = self.held[i]
            self._say(tau, f"the event at {self._events(frozenset((i,)))} left the window "
                      f"[{self._t(ta)}, {self._t(ta + h)}{')' if strict else ']'} "
                      f"(getDURATION() {'<' if strict else '<='} {h:g}){left}: no complex "
                      "event can start there any more")
            del self.held[i]

    def _say(self, t: int, text: str) -> None:
        if self.sink is not None:
            self.sink(format_time(int(t), self.kind), text)
        else:
            print(f"{self.prefix}{self._t(t)}  {text}", file=self.out)
