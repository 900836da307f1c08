"""Push-pull agreement (001 Sec. 5): trigger time points, incremental output,
Definition 4, and the conditions of Theorems 3 and 4 checked on a query and data.

Reading of inc(P, t): 001 writes Ats(I_t \\ I_prev(t)) with a pointwise stream
difference, which keeps every atom derived at t (I_prev has nothing derived at t);
the intent (IStream) is the atoms of I_t not in I_prev(t), which is what is computed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from rsep.algebra.window import WindowKind
from rsep.lars.answer import derived_at
from rsep.lars.core import Atom, Program, Stream, Window, show_term
from rsep.lars.rsp import TP, Pattern, RSPQuery, StreamPattern, sub_matches, triple_patterns
from rsep.lars.rsp import Minus as MinusP
from rsep.lars.rsp import Stream as StreamGP
from rsep.lars.rsp import Union as UnionP
from rsep.lars.translate import STRIPLE, const
from rsep.stream.time import Duration

ANS = frozenset({"ans_1"})


def ttp(t1: int, t2: int, d: Stream) -> list[int]:
    """ttp(t1, t2, D): time points of (t1, t2] with input."""
    return [t for t in d.times() if t1 < t <= t2 and d.at(t)]


def prev(t: int, d: Stream) -> int:
    """prev(t, D) = max ttp(0, t-1, D), or 0."""
    before = ttp(0, t - 1, d)
    return max(before) if before else 0


@dataclass
class Evaluator:
    """AS(P, D, t) with a cache; ``ats(t, R)`` is Ats(I_t) restricted to predicates R."""

    program: Program
    data: Stream
    background: frozenset = frozenset()
    _cache: dict = field(default_factory=dict)

    def derived(self, t: int) -> frozenset:
        if t not in self._cache:
            self._cache[t] = derived_at(self.program, self.data, t, self.background)
        return self._cache[t]

    def ats(self, t: int, preds: Iterable[str] = ANS) -> frozenset:
        ps = set(preds)
        return frozenset(a for a in self.derived(t) | self.data.ats() if a.pred in ps)

    def inc(self, t: int, preds: Iterable[str] = ANS) -> frozenset:
        """inc(P, t): what holds at t and did not at the previous trigger point."""
        if t == 0:
            return self.ats(0, preds)
        return self.ats(t, preds) - self.ats(prev(t, self.data), preds)


@dataclass
class Agreement:
    t1: int
    t2: int
    push: frozenset  # A1 (restricted to R)
    pull: frozenset  # A2 (restricted to R)

    @property
    def agree(self) -> bool:
        return self.push == self.pull

    @property
    def only_push(self) -> frozenset:
        return self.push - self.pull

    @property
    def only_pull(self) -> frozenset:
        return self.pull - self.push


def push_pull_agree(p1: Evaluator, p2: Evaluator, t1: int, t2: int,
                    preds: Iterable[str] = ANS) -> Agreement:
    """Definition 4 (i): P1 (pushed) and P2 (pulled) during (t1, t2]."""
    ps = set(preds)
    d = p1.data
    triggers = ttp(t1, t2, d)
    a1: set = set()
    for t in triggers:
        a1 |= p1.inc(t, ps)
    common: frozenset | None = None
    for t in triggers + [t2]:
        x = p1.ats(t, ps)
        common = x if common is None else common & x
    a1 |= common or frozenset()
    return Agreement(t1, t2, frozenset(a1), p2.ats(t2, ps))


def agree_with_period(p1: Evaluator, p2: Evaluator, u: int, until: int,
                      preds: Iterable[str] = ANS) -> list[Agreement]:
    """Definition 4 (ii): every interval (i*U, (i+1)*U] up to ``until``."""
    out = []
    i = 0
    while (i + 1) * u <= until:
        out.append(push_pull_agree(p1, p2, i * u, (i + 1) * u, preds))
        i += 1
    return out


# ---------------------------------------------------------------- conditions


@dataclass
class Condition:
    name: str
    holds: bool
    detail: str = ""

    def to_json(self) -> dict:
        return {"condition": self.name, "holds": self.holds, "detail": self.detail}


def _show_tp(tp: TP) -> str:
    return "(" + ", ".join(show_term(const(x)) for x in tp.terms()) + ")"


def _static_patterns(q: RSPQuery) -> list[TP]:
    owned = {t for s in q.S for t in s.g}
    return [t for t in dict.fromkeys(triple_patterns(q.P)) if t not in owned]


def _has(p: Pattern, kind: type) -> bool:
    if isinstance(p, kind):
        return True
    for attr in ("left", "right", "pattern"):
        if hasattr(p, attr) and _has(getattr(p, attr), kind):
            return True
    return False


def check_no_minus(q: RSPQuery) -> Condition:
    bad = _has(q.P, MinusP) or "minus" in q.uses or "not_exists" in q.uses
    return Condition("no MINUS / FILTER NOT EXISTS", not bad,
                     "the pattern uses MINUS: the LARS program is not positive (not monotonic)"
                     if bad else "")


def check_range_windows(q: RSPQuery, units: Callable[[Duration], int]) -> Condition:
    bad = []
    for s in q.S:
        w = s.window
        if w.kind is not WindowKind.TIME or w.offset is not None:
            bad.append(f"<{s.stream}> {w} is not [RANGE L]")
        elif w.step is not None and units(w.step) != 1:
            bad.append(f"<{s.stream}> {w} slides by {units(w.step)} > 1: a push between two "
                       "slides sees the window as of the last slide")
    return Condition("only [RANGE L] windows (STEP 1)", not bad, "; ".join(bad))


def check_star(q: RSPQuery, static: Iterable[tuple] = ()) -> Condition:
    """(*): the static patterns and the stream patterns g_i are pairwise disjoint; also,
    as the proof of Theorem 3 uses it, no static triple matches a stream pattern."""
    groups = [("static", set(_static_patterns(q)))] + [(f"g_{i + 1} <{s.stream}>", set(s.g))
                                                       for i, s in enumerate(q.S)]
    bad = []
    for i, (n1, g1) in enumerate(groups):
        for n2, g2 in groups[i + 1:]:
            shared = g1 & g2
            if shared:
                bad.append(f"{n1} and {n2} share {', '.join(map(_show_tp, shared))}")
    static = list(static)
    for s in q.S:
        for tp in s.g:
            hit = next((t for t in static if sub_matches(t, tp)), None)
            if hit is not None:
                bad.append(f"static triple {' '.join(map(str, hit))} matches the pattern "
                           f"{_show_tp(tp)} of stream <{s.stream}>")
    return Condition("(*)", not bad, "; ".join(bad))


def check_star2(q: RSPQuery, d: Stream) -> Condition:
    """(**): a triple of stream s_i matches g_i, no other g_j and no static pattern."""
    static = _static_patterns(q)
    idx = {f"<{s.stream}>": i for i, s in enumerate(q.S)}
    bad = []
    for a in sorted(d.ats()):
        if a.pred != STRIPLE:
            continue
        tr, s = a.args[:3], a.args[3]
        i = idx.get(s)
        if i is None:
            continue
        own = q.S[i].g
        if not any(sub_matches(tr, tp) for tp in own):
            bad.append(f"{' '.join(tr)} on {s} matches no pattern of its stream")
        for j, other in enumerate(q.S):
            if j != i and any(sub_matches(tr, tp) for tp in other.g):
                bad.append(f"{' '.join(tr)} on {s} matches a pattern of <{other.stream}>")
        if any(sub_matches(tr, tp) for tp in static):
            bad.append(f"{' '.join(tr)} on {s} matches a static pattern")
        if len(bad) > 5:
            break
    return Condition("(**)", not bad, "; ".join(bad[:5]))


def snapshot(d: Stream, S: Iterable[StreamPattern], windows: list[Window], t: int) -> frozenset:
    """Ats(sn(D, S, t)): the atoms of the windows over each stream's projection."""
    out: set[Atom] = set()
    for s, w in zip(S, windows, strict=True):
        proj = Stream(d.lo, d.hi, {u: frozenset(a for a in v if a.args[-1] == f"<{s.stream}>")
                                   for u, v in d.v.items()})
        out |= w.apply(proj, t).ats()
    return frozenset(out)


def check_star3(q: RSPQuery, d: Stream, t1: int, t2: int, push_windows: list[Window],
                pull_windows: list[Window]) -> Condition:
    """(***): the snapshots at the trigger points of (t1, t2] together hold what the
    snapshot at t2 holds (as sets of atoms; push and pull windows as the readings give)."""
    pushed: set = set()
    for t in ttp(t1, t2, d):
        pushed |= snapshot(d, q.S, push_windows, t)
    pulled = snapshot(d, q.S, pull_windows, t2)
    if pushed == pulled:
        return Condition("(***)", True)
    extra = sorted(pushed - pulled)
    miss = sorted(pulled - pushed)
    parts = []
    if extra:
        parts.append(f"pushed snapshots hold {len(extra)} atom(s) the snapshot at {t2} does not, "
                     f"e.g. {' '.join(extra[0].args)}")
    if miss:
        parts.append(f"the snapshot at {t2} holds {len(miss)} atom(s) no pushed snapshot has, "
                     f"e.g. {' '.join(miss[0].args)}")
    return Condition("(***)", False, "; ".join(parts))


SAME_WINDOWS = "same snapshot at t2 (one window function)"


def check_same_windows(q: RSPQuery, d: Stream, t2: int, push_windows: list[Window],
                       pull_windows: list[Window]) -> Condition:
    """Theorem 4 reads both programs with Table 1's one window function, so at t2 the push
    side (Def. 4's I_t2 term) and the pull side see one snapshot. The engines' windows
    differ at the boundary (CQELS (t'-L, t'], C-SPARQL [t'-L, t')), and where that changes
    the snapshot at t2 the theorem says nothing, even with (***) holding."""
    push = snapshot(d, q.S, push_windows, t2)
    pull = snapshot(d, q.S, pull_windows, t2)
    if push == pull:
        return Condition(SAME_WINDOWS, True)
    parts = []
    if pull - push:
        a = sorted(pull - push)[0]
        parts.append(f"at {t2} the pull (C-SPARQL) windows hold {len(pull - push)} atom(s) the "
                     f"push (CQELS) windows do not, e.g. {' '.join(a.args)}")
    if push - pull:
        a = sorted(push - pull)[0]
        parts.append(f"at {t2} the push (CQELS) windows hold {len(push - pull)} atom(s) the "
                     f"pull (C-SPARQL) windows do not, e.g. {' '.join(a.args)}")
    return Condition(SAME_WINDOWS, False, "; ".join(parts))


def theorem4(q: RSPQuery, d: Stream, static: Iterable[tuple], t1: int, t2: int,
             push_windows: list[Window], pull_windows: list[Window],
             units: Callable[[Duration], int]) -> list[Condition]:
    """The conditions of Theorem 4 (with (*) and (**) of Theorem 3) on (t1, t2], and the
    premise that both sides read one window function (checked at t2)."""
    return [check_no_minus(q), check_range_windows(q, units), check_star(q, static),
            check_star2(q, d), check_star3(q, d, t1, t2, push_windows, pull_windows),
            check_same_windows(q, d, t2, push_windows, pull_windows)]


def cautious_indices(q: RSPQuery) -> frozenset[int]:
    """The stream patterns a cq(Q) member reads cautiously (STREAM ... UNION g)."""
    out = set()

    def walk(p: Pattern) -> None:
        if isinstance(p, UnionP) and isinstance(p.left, StreamGP):
            out.add(p.left.index)
        for attr in ("left", "right", "pattern"):
            if hasattr(p, attr):
                walk(getattr(p, attr))
    walk(q.P)
    return frozenset(out)
