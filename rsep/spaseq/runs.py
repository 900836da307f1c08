"""NFA_scep's runs (002 Sec. 6.3) and their history: the partial matches the engine keeps.

A run's history is a chain of arrivals, or, with shared runs, a DAG whose paths are all
the matches it stands for; :mod:`rsep.spaseq.matches` enumerates them when output.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rsep.algebra.spaseq import Leaf, Omega, Strategy

# One instant's step of a run: (time, leaf key, the event's local mappings for that GPM).
LStep = tuple[int, int, Omega]


class Arrival:
    """How a run came to be: its parent's paths (those before ``time``) and this instant's steps.

    Without shared runs every run has one arrival (a chain, clones sharing their past);
    with them a run merges the arrivals of runs that can only go on alike, and its paths
    are all the matches it stands for."""

    __slots__ = ("time", "parent", "steps")

    def __init__(self, time: int, parent: Run | None, steps: tuple[LStep, ...]) -> None:
        self.time = time
        self.parent = parent
        self.steps = steps


class Run:
    """A partial match (runs.pxd makes it a C class in the compiled build)."""

    __slots__ = ("id", "state", "omega", "arrivals", "last", "window", "op", "iterations",
                 "standalone", "negs", "keys", "ckey")

    def __init__(self, id: int, state: int, omega: Omega, arrivals: list[Arrival], last: int,
                 window: int, op: Strategy, iterations: int = 0, standalone: bool = False) -> None:
        self.id = id
        self.state = state
        self.omega = omega  # the mappings so far (shared runs: restricted to the variables still read)
        self.arrivals = arrivals
        self.last = last
        self.window = window
        self.op = op  # the contiguity of the run's next step
        self.iterations = iterations  # Kleene+ iterations taken at the current state
        self.standalone = standalone  # a Kleene+ that nothing precedes: iterations skip-till-next
        self.negs: tuple[tuple[Leaf, Omega], ...] = ()  # forbidden GPMs and the mappings they join
        self.keys: tuple = ()  # its entries in the run index
        self.ckey: tuple | None = None  # shared runs: what it is equivalent by

    def paths(self, before: int | None = None) -> Iterator[tuple[LStep, ...]]:
        """Every event path the run stands for, ending before ``before``. Iterative, with the
        suffix as a linked list: a Kleene+ run can be thousands of steps deep."""
        stack: list[tuple[list[Arrival], int, int | None, tuple | None]] = [
            (self.arrivals, 0, before, None)]
        while stack:
            arrs, i, lim, suffix = stack.pop()
            while i < len(arrs):
                a = arrs[i]
                if lim is not None and a.time >= lim:
                    break  # arrivals are in time order
                i += 1
                cell = (a.steps, suffix)
                if a.parent is None:
                    out: list[LStep] = []
                    c: tuple | None = cell
                    while c is not None:
                        out.extend(c[0])
                        c = c[1]
                    yield tuple(out)
                else:
                    stack.append((arrs, i, lim, suffix))
                    stack.append((a.parent.arrivals, 0, a.time, cell))
                    break


@dataclass
class Stats:
    runs_created: int = 0
    runs_deleted: int = 0
    runs_expired: int = 0
    runs_merged: int = 0  # runs folded into an equivalent one (shared_runs)
    runs_cut: int = 0  # live runs dropped at the max_runs bound: matches may be missing
    matches: int = 0
    matches_cut: int = 0  # matches not enumerated past max_matches per group
    max_live: int = 0
    runs_touched: int = 0  # runs matched against an instant's events, summed
    gpm_evaluations: int = 0
    gpm_fallbacks: int = 0


def count_paths(r: Run) -> int:
    """How many paths ``r.paths()`` yields, by dynamic programming over (run, time limit)."""
    memo: dict[tuple[int, int | None], int] = {}

    def count(run: Run, before: int | None) -> int:
        key = (id(run), before)
        got = memo.get(key)
        if got is None:
            got = 0
            for a in run.arrivals:
                if before is not None and a.time >= before:
                    break
                got += 1 if a.parent is None else count(a.parent, a.time)
            memo[key] = got
        return got

    return count(r, None)
