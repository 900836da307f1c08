"""The RDF streaming dataset of RSEP-QL Def. 4, and its time-varying graphs (Def. 2)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyoxigraph as ox

from rsep.algebra.window import NamedWindow

if TYPE_CHECKING:
    from rsep.stream.updates import GraphUpdate

DEFAULT = "default"  # identifier of the user-supplied default graph


@dataclass
class StreamingDataset:
    """SDS = {(def, G0)} + {(g_i, G_i)} + {(w_j, W_j(S_l))}.

    ``default_graphs`` are the FROM graphs merged into the default graph (empty:
    the supplied default graph). A window with ``in_default`` set (C-SPARQL's
    FROM STREAM) has its content merged into the default graph as well.
    """

    default_graphs: list[str] = field(default_factory=list)
    named_graphs: list[str] = field(default_factory=list)
    windows: list[NamedWindow] = field(default_factory=list)

    @property
    def merges_windows(self) -> bool:
        return any(w.in_default for w in self.windows)

    def window(self, iri: str) -> NamedWindow | None:
        return next((w for w in self.windows if w.iri == iri), None)

    @property
    def streams(self) -> list[str]:
        seen: list[str] = []
        for w in self.windows:
            if w.stream not in seen:
                seen.append(w.stream)
        return seen


@dataclass
class TimeVaryingGraph:
    """000 Def. 2, a function from time instants to RDF graphs, as plain data: the graph
    before any change and its changes (rsep.stream.updates), in time order. G(t) is
    ``initial`` with every change stamped <= t applied in turn (changes with one time in
    the order given); rsep.sparql.update computes it."""

    iri: str
    initial: tuple[ox.Triple, ...] = ()
    changes: list[GraphUpdate] = field(default_factory=list)

    def add(self, u: GraphUpdate) -> None:
        """A change after the others (a ValueError if it would go back in time)."""
        if self.changes and u.time < self.changes[-1].time:
            raise ValueError(f"{u.origin}: a change of <{self.iri}> at {u.time} comes after "
                             f"one at {self.changes[-1].time}")
        self.changes.append(u)

    def upto(self, t: int) -> list[GraphUpdate]:
        """The changes stamped <= t, in order."""
        return self.changes[:bisect.bisect_right(self.changes, t, key=_time)]


def _time(u: GraphUpdate) -> int:
    return u.time
