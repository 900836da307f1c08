"""The SPASEQ engines' switches and bounds (rsep.spaseq.nfa's and rsep.spaseq.chain's),
set per query or by ``RSEP_SPASEQ_OPTIONS`` (rsep.spaseq.runtime.engine_options)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class NFAOptions:
    """The engine's optimisations, each switchable for benchmarks; results never depend on them.

    ``stream_index`` (Sec. 7.2.2): runs are found by the GPM occurrences their state waits
    for; off, every live run is tried at every instant. ``partition_index``: within that,
    by the value of a variable every such GPM binds (e.g. ?company), so an event touches
    only the runs of its value. ``window_pushing`` (Sec. 7.2.1): runs of closed windows are
    dropped before matching; off, when next touched (and by a sweep every 1024 instants).
    ``predicate_pushing`` (Sec. 7.2.1): a GPM's event-local part is evaluated once per event
    for all runs; off, each run evaluates the GPM itself. ``lazy_conjunction`` (Sec. 7.3):
    no conjunct is evaluated before every conjunct's stream has an event at the timestamp.
    ``compiled_gpm``: simple GPMs matched in Python (rsep.sparql.matcher). ``shared_runs``:
    runs that can only go on alike (same state, window, contiguity and mappings restricted
    to the variables later GPMs read) are one run whose history is a DAG; matches are
    enumerated from it when output, at most ``max_matches`` per match group (a run reaching
    x_f at one instant), the rest counted in ``Stats.matches_cut``. ``max_runs`` bounds live
    runs: beyond it the oldest are dropped and counted in ``Stats.runs_cut``. ``chain``: a
    sequence of plain GPMs under ``,`` and ``;`` runs on rsep.spaseq.chain's per-partition run
    buckets instead of this engine (then only ``partition_index`` and ``predicate_pushing``
    apply to it).
    """

    stream_index: bool = True
    partition_index: bool = True
    window_pushing: bool = True
    predicate_pushing: bool = True
    lazy_conjunction: bool = True
    compiled_gpm: bool = True
    shared_runs: bool = True
    chain: bool = True
    max_runs: int = 1_000_000
    max_matches: int | None = None
    # matches of one instant, over every group (the engine's Limits.max_matches, set by
    # the runtime): beyond it the run stops with an error, as RSP results do at --max-results
    max_instant: int | None = None

    SWITCHES = ("stream_index", "partition_index", "window_pushing", "predicate_pushing",
                "lazy_conjunction", "compiled_gpm", "shared_runs", "chain")

    @classmethod
    def all_off(cls, **kw: Any) -> NFAOptions:
        return cls(**{**{k: False for k in cls.SWITCHES}, **kw})

    @classmethod
    def parse(cls, spec: str) -> NFAOptions:
        """``"no-stream-index,max-runs=1000,max-matches=10"``; ``"all-off"`` turns every switch off."""
        opts = cls()
        for part in filter(None, (p.strip() for p in spec.split(","))):
            name, _, value = part.partition("=")
            key = name.replace("-", "_")
            if key == "all_off":
                opts = cls.all_off(max_runs=opts.max_runs, max_matches=opts.max_matches)
            elif key.startswith("no_") and key[3:] in cls.SWITCHES:
                setattr(opts, key[3:], False)
            elif key in cls.SWITCHES:
                setattr(opts, key, True)
            elif key in ("max_runs", "max_matches") and value.isdigit():
                setattr(opts, key, int(value))
            else:
                raise ValueError(f"unknown SPASEQ engine option {part!r} (switches: "
                                 + ", ".join(s.replace("_", "-") for s in cls.SWITCHES)
                                 + "; no-SWITCH, all-off, max-runs=N, max-matches=N)")
        return opts
