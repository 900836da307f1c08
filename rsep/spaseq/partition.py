"""The partition key of a SPASEQ query: a variable by whose value the streamset can be split.

When every GPM of the sequence (negated ones included) binds a variable ?k in
every solution, a run only ever joins events with its own value of ?k, and
events of other values can only matter through contiguity. Skip-till-next and
skip-till-any quantify over *joining* events (Defs. 10, 11), so runs of one
value are blind to the others; strict contiguity (Def. 12), and the strictly
contiguous iterations of a Kleene+ after another atom (Def. 14), are about any
event of the whole streamset, so a query using them cannot be split. A leading
Kleene+ joins its iterations on PARTITION BY variables only, so ?k must be
declared there.

A planner splitting the streamset by ?k (one NFA per value, e.g. on Spark)
must keep the query's windows: they start at the query's start t0 for every
value, not at each value's first event. Inside one engine the run index uses
such a variable whatever the strategies (rsep.spaseq.options.NFAOptions.partition_index).
"""

from __future__ import annotations

from rsep.algebra.spaseq import AtomKind, SpaseqQuery, Strategy


def common_variables(q: SpaseqQuery, negated: bool = True) -> list[str]:
    """Variables every GPM of the sequence (negated ones too, unless told) binds in every
    solution, sorted."""
    common: set[str] | None = None
    for a in q.seq.atoms:
        if a.kind is AtomKind.NEGATION and not negated:
            continue
        for lf in a.body.leaves():
            vs = set(lf.gpm.required_variables)
            common = vs if common is None else common & vs
    return sorted(common or ())


def partition_key(q: SpaseqQuery) -> tuple[str | None, str]:
    """``(variable, why)`` if the streamset can be split by that variable's value, else
    ``(None, why not)``."""
    if Strategy.STRICT in q.seq.ops:
        return None, ("strict contiguity (',') is over the whole streamset: an event of any "
                      "value between two events breaks it")
    atoms = q.seq.atoms
    for i, a in enumerate(atoms):
        if a.kind is AtomKind.KLEENE and i > 0:
            return None, (f"the iterations of {a.render()} are strictly contiguous (Def. 14) "
                          "over the whole streamset")
    common = common_variables(q)
    if atoms[0].kind is AtomKind.KLEENE:
        common = [v for v in common if v in q.partition_by]
        if not common:
            return None, (f"the leading {atoms[0].render()} joins its iterations on PARTITION BY "
                          "variables only, and none is bound by every GPM")
    if not common:
        return None, "no variable is bound by every GPM (negated ones included)"
    chosen = next((v for v in q.partition_by if v in common), common[0])
    # (what the split means, said of runs and events: a run holds the values of ?k its
    # mappings bind, several when an event carried several, and an event may carry several)
    return chosen, (f"every GPM binds ?{chosen} and no strategy of the sequence is strict "
                    f"contiguity: an event is matched only against the runs holding one of its "
                    f"values of ?{chosen}, so an event of values a run does not hold can "
                    "neither extend nor break it")
