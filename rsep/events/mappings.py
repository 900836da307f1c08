"""Event mappings (000 Sec. 4.2-4.4, Appendix A): what both event pattern evaluators build.

The reference (:mod:`rsep.events.reference`) evaluates event patterns as Eqs. (4)-(11)
write them; production (:mod:`rsep.events.incremental`) maintains the same mappings on
arrival. What they share lives here, so that a bug in it is in both and a bug in either
evaluator's own part shows up in the differential tests that compare them: the mapping
``(mu, t1, t2)`` with its justification, its interval (the order the selection reads),
compatibility and merging of the mu, and just(MATCH E, I, t) (consumption).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import attrgetter

from rsep.algebra import selection
from rsep.algebra.mapping import SolutionMapping
from rsep.algebra.mapping import compatible as compatible  # re-exported for the evaluators
from rsep.algebra.mapping import merge as merge

Mu = SolutionMapping[str]  # sorted (variable, N-Triples term) pairs


@dataclass(frozen=True, slots=True)
class EventMapping:
    """(mu, t1, t2), with the stream items that justify it (Appendix A)."""

    mu: Mu
    t1: int
    t2: int
    just: frozenset[int]  # item numbers (Event.seq)

    def as_dict(self) -> dict[str, str]:
        return dict(self.mu)


# An event mapping's interval (t1, t2), read in C: selection reads it once per candidate.
interval: Callable[[EventMapping], tuple[int, int]] = attrgetter("t1", "t2")


def justification(results: Iterable[EventMapping]) -> set[int]:
    """just(MATCH E, I, t): the items the outputs were built from (Appendix A)."""
    return selection.justification(m.just for m in results)
