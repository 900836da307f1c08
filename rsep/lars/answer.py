"""LARS answer streams (001 Sec. 2.4, Def. 3) of positive and stratified programs.

A program's answer stream at t is computed by a naive fixpoint per stratum (rsep.lars.core's
stratification) over the intensional atoms at t; the data stream and the background are given.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from rsep.lars.core import (
    TRUE,
    AtAtom,
    Atom,
    Builtin,
    LarsError,
    Lit,
    Program,
    Stream,
    Var,
    WindowAtom,
    check_safe,
)


def unify(pattern: Atom, fact: Atom, b: dict) -> dict | None:
    if pattern.pred != fact.pred or len(pattern.args) != len(fact.args):
        return None
    out = b
    for x, y in zip(pattern.args, fact.args, strict=True):
        if isinstance(x, Var):
            if x in out:
                if out[x] != y:
                    return None
            else:
                if out is b:
                    out = dict(b)
                out[x] = y
        elif x != y:
            return None
    return out


@dataclass
class _Interp:
    """The interpretation at t during the fixpoint: D, background, derived atoms at t."""

    data: Stream
    background: frozenset
    t: int
    derived: set = field(default_factory=set)
    _index: dict = field(default_factory=dict)

    def index(self, atoms: Iterable[Atom]) -> dict[str, list[Atom]]:
        ix: dict[str, list[Atom]] = {}
        for a in atoms:
            ix.setdefault(a.pred, []).append(a)
        return ix

    def now(self) -> dict[str, list[Atom]]:
        return self.index(set(self.data.at(self.t)) | self.background | self.derived)

    def stream(self) -> Stream:
        return self.data.with_atoms(self.t, self.derived) if self.derived else self.data


def _match_atom(a: Atom, facts: dict[str, list[Atom]], b: dict) -> Iterator[dict]:
    if a.pred == TRUE and not a.args:
        yield b
        return
    for f in facts.get(a.pred, ()):
        nb = unify(a, f, b)
        if nb is not None:
            yield nb


def _holds_at(s: Stream, bg: frozenset, u: int) -> dict[str, list[Atom]]:
    ix: dict[str, list[Atom]] = {}
    for a in set(s.at(u)) | bg:
        ix.setdefault(a.pred, []).append(a)
    return ix


def _match_window(w: WindowAtom, interp: _Interp, b: dict, cache: dict) -> Iterator[dict]:
    key = w.window
    if key not in cache:
        cache[key] = w.window.apply(interp.stream(), interp.t)
    ws: Stream = cache[key]
    points = list(range(ws.lo, ws.hi + 1)) if ws.hi >= ws.lo else []
    bg = interp.background

    def go(i: int, b: dict) -> Iterator[dict]:
        if i == len(w.parts):
            yield b
            return
        m = w.parts[i]
        if not points:
            return
        if m.op == "diamond":
            seen: set = set()
            facts: dict[str, list[Atom]] = {}
            for a in ws.ats() | bg:
                facts.setdefault(a.pred, []).append(a)
            if m.atom.pred == TRUE:
                yield from go(i + 1, b)
                return
            for nb in _match_atom(m.atom, facts, b):
                k = tuple(sorted(nb.items()))
                if k not in seen:
                    seen.add(k)
                    yield from go(i + 1, nb)
        elif m.op == "box":
            if m.atom.pred == TRUE:
                yield from go(i + 1, b)
                return
            first = _holds_at(ws, bg, points[0])
            for nb in _match_atom(m.atom, first, b):
                g = m.atom.subst(nb)
                if all(g in ws.at(u) or g in bg for u in points):
                    yield from go(i + 1, nb)
        else:  # at
            times = [m.time] if not isinstance(m.time, Var) or m.time in b else points
            for u in times:
                u = b.get(u, u) if isinstance(u, Var) else u
                if not isinstance(u, int) or not (ws.lo <= u <= ws.hi):
                    continue
                nb = dict(b)
                if isinstance(m.time, Var):
                    nb[m.time] = u
                yield from (x for x in _match_atom(m.atom, _holds_at(ws, bg, u), nb)
                            for x in go(i + 1, x))

    yield from go(0, b)


def _body(order: list[Lit], interp: _Interp, facts: dict, cache: dict) -> Iterator[dict]:
    def go(i: int, b: dict) -> Iterator[dict]:
        if i == len(order):
            yield b
            return
        lit = order[i]
        if lit.negated:
            if not any(True for _ in _one(lit, interp, facts, cache, b)):
                yield from go(i + 1, b)
            return
        for nb in _one(lit, interp, facts, cache, b):
            yield from go(i + 1, nb)

    yield from go(0, {})


def _one(lit: Lit, interp: _Interp, facts: dict, cache: dict, b: dict) -> Iterator[dict]:
    it = lit.item
    if isinstance(it, Atom):
        yield from _match_atom(it, facts, b)
    elif isinstance(it, Builtin):
        yield from it.apply(b)
    elif isinstance(it, WindowAtom):
        yield from _match_window(it, interp, b, cache)
    elif isinstance(it, AtAtom):
        d = interp.stream()
        tm = b.get(it.time, it.time) if isinstance(it.time, Var) else it.time
        times = [tm] if isinstance(tm, int) else list(range(d.lo, d.hi + 1))
        for u in times:
            if d.lo <= u <= d.hi:
                nb = dict(b)
                if isinstance(it.time, Var):
                    nb[it.time] = u
                yield from _match_atom(it.atom, _holds_at(d, interp.background, u), nb)


def answer_stream(p: Program, data: Stream, t: int,
                  background: Iterable[Atom] = ()) -> Stream:
    """AS(P, D, t) (Def. 3) for a positive or stratified program P: D with the atoms
    P derives at t added at t (the unique answer stream)."""
    if not data.lo <= t <= data.hi:
        raise LarsError(f"time point {t} is not in the timeline [{data.lo}, {data.hi}]")
    bg = frozenset(background)
    interp = _Interp(data, bg, t)
    for stratum in p.strata():
        ordered = [(r, check_safe(r)) for r in stratum]
        while True:
            facts = interp.now()
            cache: dict = {}
            new = set()
            for r, order in ordered:
                for b in _body(order, interp, facts, cache):
                    h = r.head.subst(b)
                    if h not in interp.derived and h not in data.at(t) and h not in bg:
                        new.add(h)
            if not new:
                break
            interp.derived |= new
    return interp.stream()


def derived_at(p: Program, data: Stream, t: int, background: Iterable[Atom] = ()) -> frozenset:
    """The intensional atoms of AS(P, D, t) at t."""
    return answer_stream(p, data, t, background).at(t) - data.at(t)
