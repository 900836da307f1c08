"""CSRBench in rsep, against YASPER's and C-SPARQL 2.0's recorded answers: ``python -m rsep.testing csrbench``.

``../shared/data/csrbench`` (or ``$RSEP_CSRBENCH_DATA``) holds CSRBench's seven queries, the
stream they read and the answers that YASPER and C-SPARQL 2.0 (both RSP4J) recorded for them
in the ESWC 2023 comparative study (its README). Each query's ``rspqlquery`` runs through
rsep, and rsep's relations are compared with each engine's, window by window.

- **Relations.** An engine's answer file holds one binding per relation, stamped with a
  wall-clock second (⌊(now − start − 200 ms) / 1000⌋ × 1000): its bindings grouped by that
  stamp are one window's result. rsep's outputs grouped by evaluation time are the same.
  Literals are compared by value when numeric (the recorders write ``83.0`` where rsep
  writes ``83``), every other term exactly.
- **Alignment.** The stamps track application time only to within about a second, so they
  are not compared: as CSRBench's oracle does, the engine's relations, in stamp order, are
  matched against rsep's, in time order, as a sequence. The engine's sequence *agrees* when
  it is a contiguous subsequence of rsep's (the oracle's rule); otherwise the two sequences
  are aligned by :class:`difflib.SequenceMatcher` (longest equal runs first), which names
  each window rsep reports and the engine does not, each engine relation that is no rsep
  window, and each pair in between that differs (with the rows missing and extra).
- **Readings.** ``rspql``: rsep's RSP-QL as it stands, windows ``(c−a, c]`` (000 Def. 3)
  evaluated at every close c. ``rsp4j``: the engines' convention, windows ``[c−a, c)`` (the
  boundary rsep's C-SPARQL dialect gives its windows; ``rsep run --window-bounds
  left-closed``) with the closes where the engine's run had them. RSP4J aligns windows to
  its own clock, so which seconds share a window is the phase its run happened to have; the
  oracle finds it by trying every first window opening ``t0`` and the README records the
  one that matched, which the ``rsp4j`` reading reproduces with the window origin
  ``(t0 + size) mod step`` (``--window-origin``). rsep then evaluates at each close c, which on
  this stream is RSP4J's report instant too: RSP4J reports ``[c−a, c)`` at the first arrival
  at or after c, and an item arrives at every second from 0 to 33 s.
- **Oracle.** :func:`oracle_verdict` recomputes the oracle's verdict from an answer file as
  its code does (eu.planetdata.srbench.oracle: windows ``[max(0, c−a), c)``, t0 from
  ``firstt0`` to ``firstt0 + size`` in steps of 1 s, the query's ``booleanquery`` over the
  window's graphs, empty relations dropped, a contiguous subsequence; a binding with a
  numeric literal is compared by its numbers only, as its ``TimestampedRelationElement``
  does), to check the verdicts the README records.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pyoxigraph as ox

from rsep.algebra.policy import R2S
from rsep.algebra.query import ContinuousQuery
from rsep.lang import apply_option, parse_query
from rsep.runtime.engine import Engine
from rsep.stream.event import Event
from rsep.stream.time import TimeKind

STREAM = "http://inputstream.org"  # the stream every rspqlquery reads (data/data_NN.ttl)
ENGINES = ("yasper", "csparql2")
ITEMS = 34  # setup.properties: importer.data.maxtime = 33, one file per second
INTERVAL = 1000
NUMERIC = {f"http://www.w3.org/2001/XMLSchema#{t}" for t in (
    "double", "float", "decimal", "integer", "int", "long")}
# The verdicts of the upstream oracle's reports, as the data's README records them:
# the t0 at which it matched, None where it matched at none.
RECORDED_VERDICTS: dict[str, dict[int, int | None]] = {
    "yasper": {1: 0, 2: 0, 3: 2000, 5: None, 6: 1000, 7: 1000},
    "csparql2": {1: 1000, 2: 0, 3: 1000, 4: 1000, 5: 0, 6: 1000, 7: 1000},
}
READINGS = ("rspql", "rsp4j")


def data_dir() -> Path:
    """``$RSEP_CSRBENCH_DATA``, else ``../shared/data/csrbench`` beside the checkout."""
    given = os.environ.get("RSEP_CSRBENCH_DATA")
    if given:
        return Path(given)
    return Path(__file__).resolve().parents[2].parent / "shared" / "data" / "csrbench"


def resources() -> Path:
    return data_dir() / "src" / "main" / "resources"


# ---------------------------------------------------------------- inputs


def read_properties(text: str) -> dict[str, str]:
    """A Java properties file as Apache Commons Configuration reads it (the oracle's reader):
    a line ending in a backslash continues on the next, with the next line's leading blanks
    dropped, also when blanks follow the backslash (srbench-queries.properties has such
    lines, which ``java.util.Properties`` would end there)."""
    props: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip() if pending else raw
        if not pending and (not line.strip() or line.lstrip().startswith(("#", "!"))):
            continue
        body = line.rstrip()
        if body.endswith("\\") and (len(body) - len(body.rstrip("\\"))) % 2 == 1:
            pending += body[:-1]
            continue
        key, _, value = (pending + line).partition("=")
        props[key.strip()] = value.strip()
        pending = ""
    return props


@dataclass(frozen=True)
class CsrQuery:
    number: int
    size: int  # window.size, ms
    slide: int  # window.slide, ms
    firstt0: int
    booleanquery: str  # what the oracle runs over each window
    rspql: str  # what YASPER and C-SPARQL 2.0 registered


@cache
def queries() -> dict[int, CsrQuery]:
    p = read_properties((resources() / "srbench-queries.properties").read_text(encoding="utf-8"))
    out = {}
    for n in range(1, 8):
        k = f"srb.query{n}"
        out[n] = CsrQuery(n, int(p[f"{k}.window.size"]), int(p[f"{k}.window.slide"]),
                          int(p[f"{k}.window.firstt0"]), p[f"{k}.booleanquery"], p[f"{k}.rspqlquery"])
    return out


@cache
def operators(engine: str) -> dict[int, R2S]:
    """Each query's output operator in ``<engine>.properties`` (C-SPARQL 2.0's Q1: ISTREAM)."""
    p = read_properties((resources() / f"{engine}.properties").read_text(encoding="utf-8"))
    return {n: R2S[p[f"srb.query{n}.output"].upper()] for n in range(1, 8)
            if f"srb.query{n}.output" in p}


def rsep_text(q: CsrQuery) -> str:
    """The query as rsep reads it. Q7's text closes one brace more than it opens (after
    ``FILTER(?value1>?value)}``); YASPER's and C-SPARQL 2.0's parsers ignored the last one,
    rsep refuses it (a syntax error at the brace), so the comparison drops it."""
    text = q.rspql
    if text.count("}") > text.count("{"):
        text = text[: text.rstrip().rfind("}")]
    return text


@cache
def stream_items() -> tuple[tuple[int, tuple[ox.Triple, ...]], ...]:
    """(time, triples) of data/data_NN.ttl, NN × 1000 ms."""
    out = []
    for n in range(ITEMS):
        path = data_dir() / "data" / f"data_{n:02d}.ttl"
        out.append((n * INTERVAL, tuple(q.triple for q in ox.parse(path=str(path), format=ox.RdfFormat.TURTLE))))
    return tuple(out)


# ---------------------------------------------------------------- relations

Row = tuple[tuple[str, str], ...]  # (variable, canonical term), by variable


@dataclass(frozen=True)
class Relation:
    time: int  # rsep: the close in the stream's own time; an engine: its wall-clock stamp
    rows: frozenset[Row]
    window: str = ""  # rsep: the window's items, in the stream's own time

    def __len__(self) -> int:
        return len(self.rows)


_LITERAL = re.compile(r'^"(.*)"\^\^<([^>]*)>$', re.S)


def canonical(term: str) -> str:
    """An N-Triples term, a numeric literal as its value (``"83.0"^^xsd:double`` and
    ``"83"^^xsd:double`` are the same number)."""
    m = _LITERAL.match(term)
    if m and m[2] in NUMERIC:
        return f"number {float(m[1])!r}"
    return term


def json_term(t: dict) -> str:
    if t["type"] == "uri":
        return f"<{t['value']}>"
    value = json.dumps(t["value"])
    return f"{value}^^<{t['datatype']}>" if t.get("datatype") else value


def engine_relations(engine: str, number: int) -> list[Relation] | None:
    """An engine's recorded answer, its bindings grouped by their stamp; None: none recorded."""
    path = resources() / "answers" / f"{engine}-answer-{number}.json"
    if not path.exists():
        return None
    groups: dict[int, set[Row]] = {}
    for rel in json.loads(path.read_text(encoding="utf-8"))["relations"]:
        for b in rel["results"]["bindings"]:
            row = tuple(sorted((v, canonical(json_term(t))) for v, t in b["binding"].items()))
            groups.setdefault(b["timestamp"], set()).add(row)
    return [Relation(t, frozenset(rows)) for t, rows in sorted(groups.items())]


def answer_variables(engine: str, number: int) -> tuple[str, ...]:
    """The variables an engine's recorder wrote (its observer picks them out of the result:
    Q2's ``SELECT *`` also binds ?res and ?value, which it drops)."""
    path = resources() / "answers" / f"{engine}-answer-{number}.json"
    return tuple(json.loads(path.read_text(encoding="utf-8"))["relations"][0]["head"]["vars"])


def window_origin(q: CsrQuery, t0: int) -> int:
    """The ``--window-origin`` that puts rsep's closes where the oracle's windows with first
    opening t0 close: t0 + size + k·slide."""
    return (t0 + q.size) % q.slide


@cache
def rsep_relations(q: CsrQuery, variables: tuple[str, ...], *, reading: str, r2s: R2S,
                   t0: int = 0) -> tuple[Relation, ...]:
    """rsep's answer to ``q`` under ``reading``, grouped by evaluation time, projected on
    the variables the engine recorded; times and windows in the stream's own time."""
    parsed = parse_query(rsep_text(q))
    assert isinstance(parsed, ContinuousQuery)
    if reading == "rsp4j":  # as `rsep run --window-bounds left-closed --window-origin O` reads it
        parsed = apply_option(parsed, "--window-bounds", "left-closed")
        parsed = apply_option(parsed, "--window-origin", str(window_origin(q, t0)))
        assert isinstance(parsed, ContinuousQuery)
    elif reading != "rspql":
        raise ValueError(f"unknown reading {reading!r}: {', '.join(READINGS)}")
    parsed.r2s = r2s
    eng = Engine(time_unit_ms=1)
    eng.register(parsed)
    events = [Event(stream=STREAM, graph=f"{STREAM}/{t}", start=t, end=t,
                    triples=triples, kind=TimeKind.ABSTRACT) for t, triples in stream_items()]
    groups: dict[int, set[Row]] = {}
    for out in eng.run(events):
        assert out.bindings is not None
        groups.setdefault(out.time, set()).add(
            tuple(sorted((v, canonical(out.bindings[v])) for v in variables if v in out.bindings)))
    if reading == "rsp4j":
        return tuple(Relation(c, frozenset(r), f"[{c - q.size}, {c})") for c, r in sorted(groups.items()))
    return tuple(Relation(c, frozenset(r), f"({c - q.size}, {c}]") for c, r in sorted(groups.items()))


# ---------------------------------------------------------------- comparison


@dataclass(frozen=True)
class Difference:
    """``missing``: an rsep window the engine does not report; ``extra``: an engine relation
    that is no rsep window; ``differs``: aligned, with rows only rsep has (``rsep_only``) and
    rows only the engine has (``engine_only``)."""

    kind: str
    rsep: Relation | None
    engine: Relation | None
    rsep_only: int = 0
    engine_only: int = 0
    outside: bool = False  # missing, before the engine's first relation or after its last
    same_as: Relation | None = None  # differs / extra: an rsep window with exactly these rows

    def __str__(self) -> str:
        if self.kind == "missing":
            assert self.rsep is not None
            return f"misses rsep's window {self.rsep.window} ({_rows(len(self.rsep))})"
        assert self.engine is not None
        again = f": rsep's window {self.same_as.window} again" if self.same_as else ""
        if self.kind == "extra":
            what = "a relation that is no rsep window" if not again else "a relation"
            return f"reports at {self.engine.time} {what} ({_rows(len(self.engine))}){again}"
        assert self.rsep is not None
        return (f"at {self.engine.time} differs from rsep's window {self.rsep.window}: "
                f"{_rows(self.rsep_only)} only in rsep, {self.engine_only} only in the engine{again}")


def _rows(n: int) -> str:
    return "1 row" if n == 1 else f"{n} rows"


@dataclass(frozen=True)
class Comparison:
    number: int
    engine: str
    reading: str
    r2s: R2S
    t0: int  # the phase the rsp4j reading gives rsep; the rspql reading has 0's alignment
    rsep: tuple[Relation, ...]
    answer: list[Relation]
    equal: int  # engine relations equal to the rsep window they are aligned with
    differences: list[Difference]
    contiguous: bool  # the engine's relations are a contiguous subsequence of rsep's

    @property
    def inner(self) -> list[Difference]:
        """The differences within the stretch the engine reports: rsep's windows before the
        engine's first relation or after its last are not among them (the oracle's rule
        passes those too)."""
        return [d for d in self.differences if not d.outside]


def _matcher(rsep: Sequence[Relation], answer: Sequence[Relation]) -> difflib.SequenceMatcher:
    return difflib.SequenceMatcher(None, [r.rows for r in rsep], [r.rows for r in answer], autojunk=False)


def is_contiguous(seq: Sequence[object], sub: Sequence[object]) -> bool:
    return any(list(seq[i: i + len(sub)]) == list(sub) for i in range(len(seq) - len(sub) + 1))


def compare(number: int, engine: str, reading: str) -> Comparison | None:
    """rsep against ``engine`` on query ``number``; None when the engine recorded no answer."""
    answer = engine_relations(engine, number)
    if answer is None:
        return None
    q = queries()[number]
    r2s = operators(engine)[number]
    t0 = RECORDED_VERDICTS[engine].get(number)
    # No recorded phase (YASPER's Q5): a 1 s step makes every phase the same windows.
    t0 = q.firstt0 if t0 is None else t0
    rsep = rsep_relations(q, answer_variables(engine, number), reading=reading, r2s=r2s, t0=t0)
    diffs: list[Difference] = []
    equal = 0
    windows = {r.rows: r for r in reversed(rsep)}  # the first window with those rows
    for tag, i1, i2, j1, j2 in _matcher(rsep, answer).get_opcodes():
        if tag == "equal":
            equal += i2 - i1
            continue
        pairs = min(i2 - i1, j2 - j1)
        for k in range(pairs):
            a, b = rsep[i1 + k], answer[j1 + k]
            diffs.append(Difference("differs", a, b, len(a.rows - b.rows), len(b.rows - a.rows),
                                    same_as=windows.get(b.rows)))
        diffs += [Difference("missing", r, None, outside=j1 + pairs in (0, len(answer)))
                  for r in rsep[i1 + pairs: i2]]
        diffs += [Difference("extra", None, r, same_as=windows.get(r.rows)) for r in answer[j1 + pairs: j2]]
    return Comparison(number, engine, reading, r2s, t0, rsep, answer, equal, diffs,
                      is_contiguous([r.rows for r in rsep], [r.rows for r in answer]))


# ---------------------------------------------------------------- the oracle


@cache
def item_store() -> ox.Store:
    """Every stream item as a named graph: a window's graphs are the dataset's default graph,
    as the oracle's Sesame dataset makes them."""
    store = ox.Store()
    store.bulk_extend([ox.Quad(t.subject, t.predicate, t.object, ox.NamedNode(f"{STREAM}/{time}"))
                       for time, triples in stream_items() for t in triples])
    return store


@cache
def oracle_relations(number: int, t0: int, r2s: R2S) -> tuple[Relation, ...]:
    """The oracle's answer for first opening t0 (report policy window close and non-empty
    content, no empty relations: yasper.properties and csparql2.properties), each relation
    stamped with its window's close."""
    q = queries()[number]
    items = stream_items()
    store = item_store()
    last = (ITEMS - 1) * INTERVAL + q.size
    out: list[Relation] = []
    previous: frozenset[Row] | None = None
    close = t0
    while True:
        close += q.size if close < q.size else q.slide
        opening = max(0, close - q.size)
        if opening > last:
            break
        graphs: list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph] = [
            ox.NamedNode(f"{STREAM}/{t}") for t, _ in items if opening <= t < close]
        if not graphs:
            continue
        result = store.query(q.booleanquery, default_graph=graphs)
        assert isinstance(result, ox.QuerySolutions)
        names = [v.value for v in result.variables]
        rel = frozenset(tuple(sorted((v, canonical(str(s[v]))) for v in names if s[v] is not None))
                        for s in result)
        new = rel if previous is None or r2s is R2S.RSTREAM else rel - previous
        if new:
            out.append(Relation(close, new, f"[{opening}, {close})"))
        previous = rel
    return tuple(out)


def oracle_key(row: Row) -> Row:
    """A binding as the oracle's TimestampedRelationElement compares it: by its numeric
    literals alone when it has one (its equals() then looks at nothing else, and all such
    elements share one hash code), else by every term."""
    numbers = tuple((v, t) for v, t in row if t.startswith("number "))
    return numbers or row


def oracle_verdict(engine: str, number: int) -> tuple[int, ...]:
    """The t0s at which the oracle finds the engine's answer (it stops at the first)."""
    answer = engine_relations(engine, number)
    assert answer is not None
    q = queries()[number]

    def keyed(rels: Sequence[Relation]) -> list[frozenset[Row]]:
        return [frozenset(oracle_key(r) for r in rel.rows) for rel in rels]

    return tuple(t0 for t0 in range(q.firstt0, q.firstt0 + q.size + 1, INTERVAL)
                 if is_contiguous(keyed(oracle_relations(number, t0, operators(engine)[number])),
                                  keyed(answer)))


def oracle_windows(number: int, t0: int) -> tuple[dict[int, frozenset[Row]], dict[int, frozenset[Row]]]:
    """rsep's ``rsp4j`` reading at phase t0 and the oracle at t0, RSTREAM, as {close: rows},
    each on the windows both can report: the oracle's from its first; rsep's up to the last
    item (33 s), after which the oracle goes on closing windows that RSP4J, with no arrival
    left to report them, never does."""
    q = queries()[number]
    oracle = oracle_relations(number, t0, R2S.RSTREAM)
    variables = tuple(v for v, _ in next(iter(oracle[0].rows)))
    ours = {r.time: r.rows for r in rsep_relations(q, variables, reading="rsp4j", r2s=R2S.RSTREAM, t0=t0)
            if r.time - q.size >= _first_opening(q, t0)}
    return ours, {r.time: r.rows for r in oracle if r.time <= (ITEMS - 1) * INTERVAL}


def _first_opening(q: CsrQuery, t0: int) -> int:
    """The opening of the oracle's first window for t0 (its Windower: the first close is
    t0 + size while t0 < size, else t0 + slide)."""
    return max(0, (t0 + q.size if t0 < q.size else t0 + q.slide) - q.size)


# ---------------------------------------------------------------- the table


def comparisons(readings: Sequence[str] = READINGS) -> list[Comparison]:
    out = []
    for number in range(1, 8):
        for engine in ENGINES:
            for reading in readings:
                c = compare(number, engine, reading)
                if c is not None:
                    out.append(c)
    return out


def _verdict(t0s: Sequence[int | None]) -> str:
    found = [str(t) for t in t0s if t is not None]
    return "t0=" + ",".join(found) if found else "no t0"


def report(out: Callable[[str], None] = print, readings: Sequence[str] = READINGS) -> int:
    """Print the table, each comparison followed by its differences."""
    out(f"{'q':<3}{'engine':<10}{'r2s':<9}{'reading':<8}{'phase':>6}{'rsep':>6}{'engine':>8}"
        f"{'equal':>7}{'differ':>8}{'outside':>9}  {'contig.':<8}{'oracle':<14}README")
    for c in comparisons(readings):
        verdict = oracle_verdict(c.engine, c.number)
        recorded = [RECORDED_VERDICTS[c.engine].get(c.number)]
        phase = f"{c.t0}" if c.reading == "rsp4j" else "-"
        out(f"Q{c.number:<2}{c.engine:<10}{c.r2s.name:<9}{c.reading:<8}{phase:>6}{len(c.rsep):>6}"
            f"{len(c.answer):>8}{c.equal:>7}{len(c.inner):>8}{len(c.differences) - len(c.inner):>9}  {'yes' if c.contiguous else 'no':<8}"
            f"{_verdict(verdict):<14}{_verdict(recorded)}")
        for d in c.differences:
            out(f"      {c.engine} {d}")
    return 0


def main(argv: Sequence[str] = ()) -> int:
    if not resources().is_dir():
        print(f"rsep.testing csrbench: no CSRBench data at {data_dir()} (set RSEP_CSRBENCH_DATA)",
              file=sys.stderr)
        return 2
    readings = [a for a in argv if not a.startswith("-")] or list(READINGS)
    unknown = [r for r in readings if r not in READINGS]
    if unknown:
        print(f"rsep.testing csrbench: unknown reading {unknown[0]!r} (readings: {', '.join(READINGS)})",
              file=sys.stderr)
        return 2
    return report(readings=readings)
