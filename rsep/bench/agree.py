"""Output agreement between engines, where their semantics coincide, and event flattening."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

XSD = "http://www.w3.org/2001/XMLSchema#"
NUMERIC = {XSD + t for t in ("integer", "decimal", "double", "float", "long", "int", "short",
                             "nonNegativeInteger", "positiveInteger")}


def local(iri: str) -> str:
    """The local name of an IRI (after the last '/' or '#')."""
    return iri.rstrip("/").rsplit("/", 1)[-1].rsplit("#", 1)[-1]


def flatten(triples: Iterable[tuple[object, object, object]]) -> dict[str, object]:
    """An event graph as one relational tuple: ``subject`` (the local name of the subject of
    its first triple) and, per predicate, its object (a literal's Python value, an IRI's
    local name). Two triples with the same predicate are an error: no single tuple holds
    them."""
    row: dict[str, object] = {}
    for s, p, o in triples:
        row.setdefault("subject", local(getattr(s, "value", str(s))))
        key = local(getattr(p, "value", str(p)))
        if key in row:
            raise ValueError(f"predicate {key!r} occurs twice in one event: not one tuple")
        row[key] = _value(o)
    return row


def _value(o: object) -> object:
    dt = getattr(o, "datatype", None)
    v = str(getattr(o, "value", o))  # (a term's value is its text)
    if dt is None:  # an IRI or blank node
        return local(str(v))
    dt = dt.value
    if dt in NUMERIC:
        return float(v) if dt in (XSD + "double", XSD + "float", XSD + "decimal") else int(v)
    return str(v)


def read_jsonl(path: str | Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def in_one_window(times: list[int], window: int | None, start: int = 0) -> bool:
    """Whether a match lies inside one of SPASEQ's tumbling windows [start + k w,
    start + (k+1) w] (002 Def. 16; both ends closed)."""
    if window is None or not times:
        return True
    k = (min(times) - start) // window
    return max(times) <= start + (k + 1) * window


@dataclass
class Agreement:
    """The outcome of comparing an engine's output with rsep's."""

    compared: str
    agree: bool
    common: int
    only_rsep: int
    only_peer: int
    examples: list[str] = field(default_factory=list)

    def text(self) -> str:
        if self.agree:
            return f"agree ({self.common} {self.compared})"
        return (f"DISAGREE: {self.common} common, {self.only_rsep} only in rsep, "
                f"{self.only_peer} only in the peer ({'; '.join(self.examples[:2])})")


def compare_matches(rsep: list[dict], peer: list[dict], window: int | None = None,
                    start: int = 0) -> Agreement:
    """Matches as bags of event-time tuples; the peer's outside one tumbling window dropped
    (a peer with a sliding bound finds those too; SPASEQ's Def. 16 does not)."""
    a = Counter(tuple(m["events"]) for m in rsep)
    b = Counter(tuple(m["events"]) for m in peer if in_one_window(m["events"], window, start))
    only_a, only_b = a - b, b - a
    ex = [f"rsep {k}" for k in list(only_a)[:2]] + [f"peer {k}" for k in list(only_b)[:2]]
    return Agreement("matches", not only_a and not only_b, sum((a & b).values()),
                     sum(only_a.values()), sum(only_b.values()), ex)


def _term(v: str) -> object:
    """An N-Triples term, numeric literals by value (engines print 1.0E2 or 100.0)."""
    if v.startswith('"') and "^^<" in v:
        lex, _, dt = v[1:].rpartition('"^^<')
        if dt.rstrip(">") in NUMERIC:
            return round(float(lex), 9)
    return v


def _rows(rows: list[dict]) -> Counter:
    return Counter(frozenset((k, _term(v)) for k, v in r.items()) for r in rows)


def compare_windows(rsep: list[dict], peer: list[dict], keys: Iterable[int] | None = None
                    ) -> Agreement:
    """Per window (keyed by rsep's evaluation time) the bag of rows; a window missing on
    one side counts as an empty result. ``keys``: the windows both engines evaluated."""
    a = {w["window"]: _rows(w["rows"]) for w in rsep}
    b = {w["window"]: _rows(w["rows"]) for w in peer}
    ks = sorted(set(keys) if keys is not None else set(a) | set(b))
    same = only_a = only_b = 0
    ex: list[str] = []
    for k in ks:
        ra, rb = a.get(k, Counter()), b.get(k, Counter())
        if ra == rb:
            same += 1
        else:
            only_a += sum((ra - rb).values())
            only_b += sum((rb - ra).values())
            if len(ex) < 2:
                ex.append(f"window {k}: {sum(ra.values())} rows vs {sum(rb.values())}")
    return Agreement("windows", only_a == 0 and only_b == 0, same, only_a, only_b, ex)
