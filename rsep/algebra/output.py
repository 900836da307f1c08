"""What a running query produces: the elements of its output stream (R2S's, 000 Def. 5), or
an error that stops it. Every evaluator builds these; the runtime passes them on."""

from __future__ import annotations

from dataclasses import dataclass

from rsep.algebra.events import FROM_VAR, TO_VAR
from rsep.stream.time import TimeKind, format_time


class EngineError(RuntimeError):
    """A failure while running: a resource limit, or input the engine cannot take."""


@dataclass(slots=True)
class Output:
    """One element of a query's output stream."""

    query: str
    time: int
    kind: TimeKind | None
    op: str = "insert"  # "delete" for DSTREAM
    bindings: dict[str, str] | None = None  # SELECT: variable -> N-Triples term
    triple: str | None = None  # CONSTRUCT / DESCRIBE: N-Triples statement, no final dot
    boolean: bool | None = None  # ASK
    variables: tuple[str, ...] = ()

    @property
    def time_text(self) -> int | str:
        return format_time(self.time, self.kind)

    def to_json(self) -> dict:
        d: dict = {"time": self.time_text}
        if self.bindings is not None:
            b = self.bindings
            if FROM_VAR in b or TO_VAR in b:
                # A MATCH's justifying interval, lifted out of the bindings (docs/semantics.md).
                b = dict(b)
                for var, key in ((FROM_VAR, "from"), (TO_VAR, "to")):
                    if var in b:
                        d[key] = format_time(int(b.pop(var).split('"')[1]), self.kind)
            d["bindings"] = b
        elif self.triple is not None:
            d["triple"] = self.triple
        elif self.boolean is not None:
            d["boolean"] = self.boolean
        if self.op == "delete":
            d["op"] = "delete"
        return d
