"""What ``rsep run --trace`` and ``rsep serve``'s ``/queries/N/trace`` share: the key's syntax,
the refusal, and attaching the tracer of a query's family (rsep.spaseq.why, rsep.epsparql.why)
to its runtime. The tracers are imported only when a trace is asked for."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import IO, Any

from rsep.algebra.query import Query
from rsep.lang import dialect_of
from rsep.lang.dialect import EPSPARQL, SPASEQ, entry
from rsep.lang.errors import OptionRefused
from rsep.runtime.sinks import Prefixes, display

KEY_SYNTAX = "?VAR=VALUE (e.g. ?sensor=<http://example.org/s1>)"
MAX_LINES = 1_000  # default: the lines rsep serve keeps of one query's trace
# The tracer of each family that has one, by the dialect registry's family (rsep.lang.dialect),
# as "module:class": imported when a trace of that family is first asked for
TRACERS = {SPASEQ: "rsep.spaseq.why:Tracer", EPSPARQL: "rsep.epsparql.why:EpTracer"}


def parse_key(text: str) -> tuple[str, str]:
    """``?VAR=VALUE`` as (VAR, VALUE); a ValueError saying the syntax otherwise."""
    var, sep, value = text.partition("=")
    var = var.strip().lstrip("?$")
    if not sep or not var or not value.strip():
        raise ValueError(f"--trace must be {KEY_SYNTAX}, got {text!r}")
    return var, value.strip()


def resolve(value: str, declared: dict[str, str]) -> str:
    """A key's value with a prefixed name of the query's PREFIXes written out as <iri>."""
    p, colon, local = value.partition(":")
    if colon and p in declared and not value.startswith(("<", '"')) and "/" not in local:
        return f"<{declared[p]}{local}>"
    return value


def shower(declared: dict[str, str]) -> Callable[[str], str]:
    """Terms as the trace shows them: with the query's prefixes, numbers bare."""
    prefixes = Prefixes(declared)

    def show(term: str) -> str:
        return prefixes.term(display(term))

    return show


def traceable(rt: Any, q: Query) -> str | None:
    """Why the runtime of ``q`` cannot be traced (None: it can)."""
    family = dialect_of(q).family
    if family == SPASEQ or (family == EPSPARQL and hasattr(rt, "policy_state")):
        return None
    return ("--trace follows the runs of a SPASEQ query and the events of an EP-SPARQL one "
            "(unrestricted, chronological or recent); "
            + ("ETALIS's step-wise policies run apart from them" if family == EPSPARQL else
               f"{dialect_of(q).title} has neither (rsep explain shows how it runs)"))


def attach(rt: Any, q: Query, key: tuple[str, str] | None, declared: dict[str, str], *,
           out: IO[str] | None = None, name: str = "",
           sink: Callable[[int | str, str], None] | None = None,
           source: str | None = None) -> Any:
    """Attach the tracer of ``q``'s family to its runtime ``rt`` (a SPASEQ one before it is
    bound), following ``key`` (None: none yet, :meth:`retarget` later), its lines printed on
    ``out`` or given to ``sink``; an :class:`OptionRefused` for a query it cannot trace."""
    why = traceable(rt, q)
    if why is not None:
        raise OptionRefused(why, source=source)
    var, value = key if key is not None else (None, "")
    value = resolve(value, declared)
    show = shower(declared)
    tracer: Any = entry(TRACERS[dialect_of(q).family])(var, value, out, name, show=show,
                                                      sink=sink)
    tracer.attach(rt)
    return tracer


def retarget(tracer: Any, key: tuple[str, str] | None, declared: dict[str, str]) -> None:
    """Make an attached tracer follow ``key`` (None: none) from now on."""
    if key is None:
        tracer.retarget(None)
    else:
        tracer.retarget(key[0], resolve(key[1], declared))


class TraceLog:
    """A trace's lines for a reader on another thread (rsep serve): the newest ``limit``
    kept, each numbered, so that a reader asks for those after the last it has."""

    def __init__(self, limit: int = MAX_LINES) -> None:
        self.lock = threading.Lock()
        self.lines: deque[dict[str, Any]] = deque(maxlen=limit)
        self.seq = 0
        self.dropped = 0  # lines pushed out by newer ones

    def __call__(self, time: int | str, text: str) -> None:
        with self.lock:
            self.seq += 1
            if len(self.lines) == self.lines.maxlen:
                self.dropped += 1
            self.lines.append({"seq": self.seq, "time": time, "text": text})

    def since(self, seq: int = 0) -> list[dict[str, Any]]:
        with self.lock:
            return [ln for ln in self.lines if ln["seq"] > seq]
