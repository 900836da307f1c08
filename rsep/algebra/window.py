"""Window functions W[p] of RSEP-QL Def. 3, as data (the S2R operators).

Evaluation lives in rsep.windows: ``reference`` transcribes the definitions,
``operator`` maintains them incrementally.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from rsep.stream.time import Duration


class WindowKind(Enum):
    TIME = "time"  # W^tau[(alpha, beta)], optionally offset: [FROM NOW-a TO NOW-b]
    LANDMARK = "landmark"  # W^lambda[(t0)]
    COUNT = "count"  # the last n stream items (graphs) or triples
    NOW = "now"  # items whose time is the evaluation time
    UNBOUNDED = "unbounded"  # the whole stream up to now


class Boundary(Enum):
    """Which end of a time window's interval is closed.

    RSP-QL (000 Def. 3) and CQELS: (t' - alpha, t'].  C-SPARQL (its Esper
    batches, as CSRBench observed and RSP4J models it): [o, c), closing at c.
    """

    RIGHT_CLOSED = "(o,c]"
    LEFT_CLOSED = "[o,c)"


@dataclass(frozen=True)
class WindowSpec:
    kind: WindowKind
    range: Duration | None = None  # alpha
    step: Duration | None = None  # beta; None: one time unit (Example 3 reads [RANGE 5] as (5, 1))
    offset: Duration | None = None  # [FROM NOW-a TO NOW-b]: b
    landmark: Duration | int | None = None  # t0 (a time value, not a duration)
    count: int | None = None
    count_triples: bool = False  # count triples rather than stream items (graphs)
    boundary: Boundary = Boundary.RIGHT_CLOSED
    text: str = ""
    # Where the time windows' closes are aligned: o + k * beta. 000 Def. 3 aligns them to 0;
    # RSP4J aligns them to its own clock's first window (CSRBench's t0), which --window-origin
    # reproduces. A time value on the stream's timeline (its units), not a duration.
    origin: int = 0

    @property
    def has_step(self) -> bool:
        return self.kind is WindowKind.TIME or (
            self.kind is WindowKind.LANDMARK and self.step is not None
        )

    def __str__(self) -> str:
        return self.text or self.kind.value


@dataclass(frozen=True)
class NamedWindow:
    """(w_j, W_j(S_l)): a window function applied to a named stream, identified by an IRI."""

    iri: str
    stream: str
    spec: WindowSpec
    in_default: bool = False  # C-SPARQL FROM STREAM: content merged into the default graph
