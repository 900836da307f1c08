"""NFA_scep's output (002 Def. 16): the matches a run reaching x_f stands for, enumerated.

A run's history (:mod:`rsep.spaseq.runs`) may hold many paths; each is folded into its
mappings step by step as the run computed them, up to ``max_matches`` per group (the
rest counted, not enumerated).
"""

from __future__ import annotations

import warnings

from rsep.algebra.spaseq import GPM, UNIT, Atom, AtomKind, Omega, SpaseqQuery, drop
from rsep.spaseq.gpm import GPMEvaluator
from rsep.spaseq.options import NFAOptions
from rsep.spaseq.runs import LStep, Run, Stats, count_paths
from rsep.spaseq.streamset import Match


class SpaseqCutWarning(RuntimeWarning):
    """Live partial matches were dropped at the engine's bound: some matches are missing."""


class MatchLimitError(RuntimeError):
    """More matches at one instant than the bound (``NFAOptions.max_instant``)."""


def warn_cut(max_runs: int, t: int) -> None:
    warnings.warn(SpaseqCutWarning(
        f"SPASEQ: more than {max_runs} partial matches alive at {t}; the oldest are dropped "
        "and their matches lost (raise max-runs, or shorten the window)"), stacklevel=3)


class Enumerator:
    """The engine's output: ``emit`` puts a completed run's matches in a list."""

    def __init__(self, query: SpaseqQuery, gpm: GPMEvaluator, options: NFAOptions, stats: Stats) -> None:
        self.gpm = gpm
        self.options = options
        self.stats = stats
        self._leaf_gpm: dict[int, GPM] = {lf.key: lf.gpm for lf in query.seq.leaves()}
        self._kleene_leaf: dict[int, Atom] = {a.leaf.key: a for a in query.seq.atoms
                                              if a.kind is AtomKind.KLEENE}

    def emit(self, r: Run, matches: list[Match]) -> None:
        """Enumerate the matches a run reaching x_f stands for (one group), up to the limit;
        the rest are counted (a sum over the history DAG), not enumerated."""
        limit = self.options.max_matches
        bound = self.options.max_instant
        n = 0
        for path in r.paths():
            if bound is not None and len(matches) >= bound:
                # checked as the paths are enumerated: a group of 2^n matches never is
                raise MatchLimitError(bound)
            if limit is not None and n >= limit:
                cut = count_paths(r) - n
                if not self.stats.matches_cut:
                    warnings.warn(SpaseqCutWarning(
                        f"SPASEQ: a match group at {r.last} has {n + cut} matches; "
                        f"{cut} beyond max-matches={limit} are not output"), stacklevel=2)
                self.stats.matches_cut += cut
                return
            m = self.fold(path, r.last)
            if m is not None:
                matches.append(m)
                n += 1

    def fold(self, path: tuple[LStep, ...], time: int) -> Match | None:
        """A path's mappings, rebuilt step by step as the run computed them."""
        omega: Omega = UNIT
        trail = []
        kleene = self._kleene_leaf
        if kleene:
            gpms = self._leaf_gpm
            extend = self.gpm.extend
            for step in path:
                t, key, local = step
                ka = kleene.get(key)
                x = drop(omega, ka.local_vars) if ka is not None else omega
                omega = extend(gpms[key], x, local)
                if not omega:
                    return None
                trail.append((t, key, omega))
            return match(time, omega, path, trail)
        # Without Kleene+ (whose iterations drop variables) a path is rebuilt by rejoin;
        # while every step has one mapping, by one dict carried along the path.
        d: dict = {}
        for step in path:
            t, key, local = step
            if len(local) != 1:
                break
            (b,) = local
            if not d:
                # the first step's mappings are the event's own (b is sorted already)
                d.update(b)
                trail.append((t, key, local))
                omega = local
                continue
            for k, v in b:
                w = d.get(k)
                if w is None:
                    d[k] = v
                elif w != v:
                    return None
            omega = frozenset((tuple(sorted(d.items())),))
            trail.append((t, key, omega))
        else:
            return match(time, omega, path, trail)
        omega = UNIT
        trail = []
        gpms = self._leaf_gpm
        rejoin = self.gpm.rejoin
        for step in path:
            t, key, local = step
            omega = rejoin(gpms[key], omega, local)
            if not omega:
                return None
            trail.append((t, key, omega))
        return match(time, omega, path, trail)



def match(time: int, omega: Omega, path: tuple[LStep, ...], trail: list) -> Match:
    return Match(time, omega, tuple(sorted((t, k) for t, k, _ in path)), tuple(trail))
