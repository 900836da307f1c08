"""The RDF streaming dataset of RSEP-QL Def. 4."""

from __future__ import annotations

from dataclasses import dataclass, field

from rsep.algebra.window import NamedWindow

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
