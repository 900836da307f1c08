"""The W3C SPARQL 1.1 evaluation tests through every dialect (project issue 16).

A plain SPARQL 1.1 query, its data one event at time 0, must give inside each
dialect what the W3C expects of SPARQL. This module reads the test manifests,
keeps the tests pyoxigraph itself passes (*counted*), rewrites each query into
each dialect at the level of its text, runs it through that dialect's real
``parse_query`` + ``Engine`` path and compares the results as bags:

- numeric and boolean literals by value (within their datatype; pyoxigraph canonicalises
  them), language tags without case;
- blank nodes as wildcards, up to one consistent bijection over the whole result;
- in order only where the query has a top-level ORDER BY and the expected result
  is in an ordered format (SPARQL XML, JSON, TSV, CSV).

Some dialects refuse a construct by design (EP-SPARQL: what needs the end of an
unbounded stream; SPASEQ: what its grammar cannot say; an RSEP-QL event pattern
holds a basic graph pattern only): :data:`REFUSALS` lists each, by reason, with
the message its QueryError must carry at parse time. ``python -m rsep.testing w3c``
(or ``python tests/sparql/test_w3c_eval.py``) prints the counts per dialect.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TextIO

from rsep.algebra.output import Output
from rsep.algebra.query import Query
from rsep.lang import QueryError, parse_query
from rsep.runtime.engine import Engine
from rsep.stream.event import Event
from rsep.stream.time import TimeKind
from rsep.testing.dialects import refusals, rewrite, shape
from rsep.testing.suite import (
    DIALECTS,
    DIRS,
    EVENT,
    STREAM,
    Result,
    W3CTest,
    data_triples,
    difference,
    expected_result,
    outputs_result,
    pyoxigraph_result,
    read_manifests,
)

# ---------------------------------------------------------------- running


def event_of(test: W3CTest) -> Event:
    return Event(STREAM, EVENT, 0, 0, tuple(data_triples(test)), TimeKind.ABSTRACT, 0, f"{test.data}:1")


@dataclass(frozen=True)
class Silence:
    """A (test, dialect) whose dialect, by its semantics, evaluates nothing: no output at all."""

    dialect: str
    reason: str
    applies: Callable[[W3CTest], bool]


SILENCES: tuple[Silence, ...] = (
    # C-SPARQL reports at window close only windows that hold something (CSRBench; SECRET's
    # non-empty content): an event with no triples leaves the window empty.
    Silence("csparql", "C-SPARQL evaluates no window without a triple (non-empty content); "
            "the data is empty", lambda t: not data_triples(t)),
)


# 002 defines a GPM's [[P]]_G as a *set* of mappings annotated with the event's time, and a
# match's Omega as their join (docs/semantics.md, "SPARQL 1.1 inside a GPM"): where SPARQL's
# bag repeats a row, SPASEQ gives it once. Its results are compared as sets.
SET_SEMANTICS = frozenset({"spaseq"})


@dataclass(frozen=True)
class Divergence:
    """A (test, dialect) whose dialect, by its semantics, cannot give SPARQL's one-shot answer
    and says so at run time with a known error."""

    dialect: str
    reason: str
    error: str  # the exception's class name


DIVERGENCES: tuple[Divergence, ...] = (
    # 003: a CONSTRUCT query is a rule whose triples re-enter the stream (the Q-closure); a
    # template whose blank nodes its own pattern matches derives new triples forever.
    Divergence("epsparql", "a CONSTRUCT rule whose blank-node triples its own pattern matches "
               "derives forever (003's Q-closure)", "RuleLoopError"),
)


def ordered(test: W3CTest) -> bool:
    """Compared in order: a top-level ORDER BY and an expected result in an ordered format."""
    return test.result.suffix.lower() in (".srx", ".srj", ".tsv", ".csv") and shape(test.text()).order_by


def distinct(r: Result) -> Result:
    """The result with each row once (a set)."""
    if r.form not in ("bindings", "csv"):
        return r
    seen: dict[tuple, dict] = {}
    for row in r.rows:
        seen.setdefault(tuple(sorted(row.items())), row)
    return Result(r.form, list(seen.values()), r.boolean)


# The instant at which each dialect's answer over the event at 0 is read: C-SPARQL's
# windows are [c-1, c), so the event at 0 is in the window closing at 1; every other
# reading evaluates at 0 (window close at 0 of (-1, 0], or on the arrival).
UNTIL = {"csparql": 1}


def dialect_text(test: W3CTest, dialect: str) -> str:
    return rewrite(test.text(), dialect, base=test.query.as_uri())


def parse(test: W3CTest, dialect: str) -> Query:
    """The rewritten query through the dialect's ``parse_query`` (MATCH is RSP-QL's)."""
    return parse_query(dialect_text(test, dialect), "rspql" if dialect == "match" else dialect,
                       source=f"{test.id}[{dialect}]")


def run_query(test: W3CTest, dialect: str, query: Query) -> list[Output]:
    """A parsed query registered and run as ``rsep run`` does (Engine.register, Engine.run)
    over the test's one event: its outputs."""
    eng = Engine()
    eng.register(query, source=f"{test.id}[{dialect}]")
    return list(eng.run([event_of(test)], until=UNTIL.get(dialect)))


@dataclass
class Outcome:
    status: str  # "passed" | "refused" | "silent" | "failed"
    detail: str = ""
    reason: str = ""


def outcome(test: W3CTest, dialect: str) -> Outcome:
    """Run one (test, dialect) and judge it: a refusal the table expects must happen at parse
    time with its message, a silence must output nothing, anything else must give the W3C's
    expected result."""
    s = shape(test.text())
    expected = refusals(s, dialect)
    try:
        q = parse(test, dialect)
    except QueryError as e:
        hit = next((r for r in expected if r.matches(e.message)), None)
        if hit is not None:
            return Outcome("refused", str(e), hit.reason)
        why = f" (expected a refusal: {'; '.join(r.reason for r in expected)})" if expected else ""
        return Outcome("failed", f"refused at parse time: {e}{why}")
    if expected:
        return Outcome("failed", "expected a refusal at parse time: " + "; ".join(r.reason for r in expected))
    try:
        outs = run_query(test, dialect, q)
    except Exception as e:  # noqa: BLE001 - every failure is reported, not raised
        div = next((x for x in DIVERGENCES if x.dialect == dialect and x.error == type(e).__name__), None)
        if div is not None:
            return Outcome("refused", str(e), div.reason)
        return Outcome("failed", f"{type(e).__name__}: {e}")
    silence = next((x for x in SILENCES if x.dialect == dialect and x.applies(test)), None)
    if silence is not None:
        if outs:
            return Outcome("failed", f"expected no evaluation ({silence.reason}), got {len(outs)} outputs")
        return Outcome("silent", "", silence.reason)
    want, got = expected_result(test), outputs_result(s.form, outs)
    if dialect in SET_SEMANTICS:
        want, got = distinct(want), distinct(got)
    diff = difference(want, got, ordered(test))
    return Outcome("passed") if diff is None else Outcome("failed", diff)

@cache
def counted(root: Path | None = None) -> tuple[W3CTest, ...]:
    """The tests pyoxigraph itself passes: only those measure the dialects."""
    out = []
    for t in read_manifests(root):
        try:
            diff = difference(expected_result(t), pyoxigraph_result(t), ordered(t))
        except (SyntaxError, OSError, ValueError, RuntimeError):
            continue
        if diff is None:
            out.append(t)
    return tuple(out)


def report(dialects: Iterable[str] = DIALECTS, out: TextIO | None = None, failures: bool = True) -> dict:
    """Print, per dialect, counted / passed / refused and silent (by reason) / failed, with the
    time each dialect took and, unless ``failures`` is False, every failure."""
    out = out or sys.stdout
    tests = counted()
    candidates = len(read_manifests())
    summary: dict = {}
    failed: dict[str, list[tuple[str, str]]] = {}
    for d in dialects:
        t0 = time.perf_counter()
        c: Counter = Counter()
        reasons: Counter = Counter()
        for t in tests:
            o = outcome(t, d)
            c[o.status] += 1
            if o.status in ("refused", "silent"):
                reasons[(o.status, o.reason)] += 1
            elif o.status == "failed":
                failed.setdefault(d, []).append((t.id, o.detail))
        summary[d] = {"counted": len(tests), "passed": c["passed"], "refused": c["refused"],
                      "silent": c["silent"], "failed": c["failed"], "by_reason": dict(reasons),
                      "seconds": time.perf_counter() - t0}

    def say(line: str) -> None:
        print(line, file=out)

    say(f"W3C SPARQL 1.1 evaluation tests: {candidates} with one default graph in {len(DIRS)} "
        f"directories, {len(tests)} counted (pyoxigraph passes them)")
    say(f"{'dialect':10} {'counted':>7} {'passed':>7} {'refused':>7} {'silent':>7} {'failed':>7} {'seconds':>8}")
    for d, s in summary.items():
        say(f"{d:10} {s['counted']:>7} {s['passed']:>7} {s['refused']:>7} {s['silent']:>7} "
            f"{s['failed']:>7} {s['seconds']:>8.1f}")
        for (status, reason), n in sorted(s["by_reason"].items()):
            say(f"{'':10} {n:>7} {status}: {reason}")
    if failures:
        for d, items in failed.items():
            say(f"\nfailed in {d}:")
            for tid, detail in items:
                say(f"  {tid}: {detail[:300]}")
    return summary
