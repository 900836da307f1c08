"""Selection and consumption policies (000 Sec. 4.3-4.4, Appendix A, Table 1): one implementation.

RSEP-QL's MATCH (rsep.events) and EP-SPARQL's SeqJoin (rsep.epsparql) choose among
candidates and consume what a selected match used by the same definitions, so both call
the functions here:

- :func:`first` / :func:`last`: Eqs. (5)/(6), the candidates no other precedes / follows
  under 000's order on intervals (:func:`rsep.stream.time.precedes`: by end, then start,
  compared here as the key ``(end, start)``);
- :func:`select`: Eqs. (10)/(11)'s choice of the right operand of SEQ^c / SEQ^r: the
  usable candidates that no compatible rival precedes (chronological) or that precede no
  compatible rival (recent); :func:`pick` the left operand's FIRST / LAST;
- :func:`justification`: Appendix A's just(MATCH E, I, t), the items P^c and P^r consume
  (``P^c = P^r = (I_(i-1) ∪ Δ_i) \\ just``).

Why here, in ``algebra``: a policy is part of a query (``MATCH CHRONOLOGICAL``,
EP-SPARQL's ``--policy``), and the functions read only intervals, item numbers and a
compatibility test the caller gives: no mappings, graphs or evaluation state. Every
evaluator package sits above ``algebra`` and must not import another, so below them is
the only place one implementation can be shared. :data:`TABLE1` is Table 1 as data.
SPASEQ's strategies (``,`` ``;`` ``:``, rsep.algebra.spaseq.Strategy) are SASE's event
selection strategies, which 000 Sec. 5 leaves to future work: no row maps them, and
SPASEQ consumes nothing, so they do not use this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar


class Selection(Enum):
    """The SEQ variant and consumption policy a MATCH uses (000 Table 1)."""

    UNRESTRICTED = "UNRESTRICTED"  # SEQ, Eq. (7); nothing consumed
    NAIVE = "NAIVE"  # SEQ^n, Eq. (9): C-SPARQL's timestamp sequencing
    CHRONOLOGICAL = "CHRONOLOGICAL"  # SEQ^c, Eq. (10), consumption P^c
    RECENT = "RECENT"  # SEQ^r, Eq. (11), consumption P^r

    @property
    def consumes(self) -> bool:
        return self in (Selection.CHRONOLOGICAL, Selection.RECENT)


@dataclass(frozen=True)
class Row:
    """A row of Table 1: an RSEP-QL form and the behaviour of another language it captures."""

    rsepql: str  # as printed
    window: str  # "landmark" (W^λ) or "time" (W^τ)
    selection: Selection | None  # None: a window, no event pattern
    language: str
    setting: str  # the language's own name for it


TABLE1: tuple[Row, ...] = (
    Row("W^λ + SEQ", "landmark", Selection.UNRESTRICTED, "EP-SPARQL", "unrestricted"),
    Row("W^λ + SEQ^c + P^c", "landmark", Selection.CHRONOLOGICAL, "EP-SPARQL", "chronological"),
    Row("W^λ + SEQ^r + P^r", "landmark", Selection.RECENT, "EP-SPARQL", "recent"),
    Row("W^τ + SEQ^n", "time", Selection.NAIVE, "C-SPARQL", "SEQ (timestamp)"),
    Row("W^τ", "time", None, "C-SPARQL", "time-window"),
)

C = TypeVar("C")
Interval = tuple[float, float]


def first(cands: Sequence[C], interval: Callable[[C], Interval]) -> list[C]:
    """Eq. (5): the candidates no other precedes. The order is total on (end, start), so
    they are the ones with the least key."""
    if len(cands) < 2:  # the common case in a SeqJoin, and free
        return list(cands)
    keys = [(b, a) for a, b in map(interval, cands)]
    k = min(keys)
    return [c for c, kc in zip(cands, keys, strict=True) if kc == k]


def last(cands: Sequence[C], interval: Callable[[C], Interval]) -> list[C]:
    """Eq. (6): the candidates no other follows."""
    if len(cands) < 2:
        return list(cands)
    keys = [(b, a) for a, b in map(interval, cands)]
    k = max(keys)
    return [c for c, kc in zip(cands, keys, strict=True) if kc == k]


def pick(policy: Selection, cands: Sequence[C], interval: Callable[[C], Interval]) -> list[C]:
    """The left operands SEQ^c / SEQ^r joins with a selected right one: FIRST under
    chronological, LAST under recent (docs/semantics.md, "RSEP-QL event patterns")."""
    return first(cands, interval) if policy is Selection.CHRONOLOGICAL else last(cands, interval)


def select(policy: Selection, usable: Sequence[C], interval: Callable[[C], Interval],
           compatible: Callable[[C, C], bool]) -> list[C]:
    """Eq. (10) / (11): of the right operands that have a left one (``usable``), those no
    compatible rival precedes (chronological) or follows (recent)."""
    if len(usable) < 2:  # no rival
        return list(usable)
    # precedes(x, y) is key(x) < key(y) with key = (end, start); a candidate never
    # precedes itself, so it need not be skipped as its own rival.
    keys = [(b, a) for a, b in map(interval, usable)]
    chrono = policy is Selection.CHRONOLOGICAL
    out = []
    for m, k in zip(usable, keys, strict=True):
        for o, ko in zip(usable, keys, strict=True):
            if (ko < k if chrono else k < ko) and compatible(o, m):
                break
        else:
            out.append(m)
    return out


def justification(justs: Iterable[frozenset[int]]) -> set[int]:
    """just(MATCH E, I, t) (Appendix A): the items the outputs were built from, given each
    output's justification; P^c and P^r remove them from every later evaluation."""
    out: set[int] = set()
    for j in justs:
        out |= j
    return out
