"""The dialects rsep reads, one :class:`Dialect` each, in one registry looked up by name
(as sqlglot's ``Dialect.get_or_raise``): how a query in it is recognised and parsed, which
family of runtimes runs it, and which of the options that depend on the language it takes.

The layers above key their part of a dialect by its ``family``: the engine's runtimes
(:mod:`rsep.runtime.dialects`), Spark's partitioning (:mod:`rsep.spark.plan`) and
``rsep explain`` (:mod:`rsep.cli.explain`); tests/lang/test_dialect_registry.py checks that
every family has all three and walks the option x dialect matrix.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from rsep.algebra.query import ContinuousQuery, Query
from rsep.algebra.window import Boundary, WindowKind
from rsep.lang.errors import OptionRefused, QueryError

if TYPE_CHECKING:
    from rsep.algebra.epsparql import EpSparqlQuery
    from rsep.lang.syntax import Syntax

RSP, SPASEQ, EPSPARQL = "rsp", "spaseq", "epsparql"  # the families (one algebra and runtime each)


@dataclass(frozen=True)
class Option:
    """An option whose meaning depends on the query's language."""

    label: str  # as messages name it
    why: str  # why a dialect without it refuses it ({title}: the refusing dialect)
    # the whole message, when it reads better otherwise ({takers}: "A, B and C", {takers_list}:
    # "A, B, C", {title}, {shows}, {why})
    message: str = "{label} applies to {takers} queries, not {title}: {why}"


_ONCE = "{title} queries output each complex event once, when it is detected"

# Every language-dependent option of `rsep run`, `rsep explain` and `rsep compare`, by name.
# The others (--until, --time-unit, --max-eval-seconds, --allow-dereference, --stage-times,
# the input and output options) apply to every dialect.
OPTIONS: dict[str, Option] = {
    "--r2s": Option("--r2s / r2s", "relation-to-stream operators are RSP-QL's (000 Def. 5); "
                    + _ONCE),
    "--report": Option("--report / report", "report policies are RSP-QL's (000 Def. 5); "
                       + _ONCE),
    "--policy": Option("--policy", "event selection and consumption policies are EP-SPARQL's "
                       "(RSEP-QL's, 000, and ETALIS's; docs/semantics.md)"),
    "--max-window-triples": Option("--max-window-triples", "{title} queries keep no windows"),
    "--max-results": Option("--max-results", "it bounds the results of one window "
                            "evaluation; " + _ONCE),
    "--max-matches": Option("--max-matches", "it bounds the matches of one SPASEQ instant"),
    "--max-derived": Option("--max-derived", "it bounds the triples EP-SPARQL's CONSTRUCT "
                            "rules derive at one instant"),
    "--lars": Option("--lars", "", "--lars: 001's translation covers RSP queries "
                     "({takers_list}), not {title}; explain without --lars prints {shows}"),
    "--window-bounds": Option("--window-bounds", "{title} queries have no RSP-QL time windows "
                              "(000 Def. 3) to bound"),
    "--window-origin": Option("--window-origin", "{title} queries have no RSP-QL time windows "
                              "(000 Def. 3) to align"),
    # every dialect reads background graphs, so every dialect takes their changes
    "--graph-updates": Option("--graph-updates", "{title} queries read no background graph"),
    "compare": Option("rsep compare", "", "rsep compare runs a query as C-SPARQL and as "
                      "CQELS (001): it takes RSP queries ({takers_list}), not {title}"),
}

_RSP_OPTIONS = frozenset({"--r2s", "--report", "--max-window-triples", "--max-results",
                          "--lars", "compare", "--graph-updates", "--window-bounds",
                          "--window-origin"})


@dataclass(frozen=True)
class Dialect:
    name: str  # as --dialect spells it
    title: str  # as the papers spell it
    family: str  # RSP, SPASEQ or EPSPARQL: which algebra and runtime
    takes: frozenset[str]  # the OPTIONS it takes
    shows: str  # what rsep explain prints for it
    # Entry points as "module:function", imported when the dialect is first used (a run
    # of one dialect never loads the others' grammars and algebras).
    # The RSP dialects: the builder over the shared parse tree (rsep.lang.parse_query)
    builder: str | None = None
    # a grammar of its own: recognised in the text by a construct no RSP query has, and parsed
    marker: re.Pattern[str] | None = None
    parser: str | None = None

    @property
    def build(self) -> Callable[[Syntax], ContinuousQuery] | None:
        return None if self.builder is None else entry(self.builder)

    @property
    def parse(self) -> Callable[..., Query] | None:
        return None if self.parser is None else entry(self.parser)

    def refusal(self, option: str) -> str | None:
        """Why this dialect refuses ``option``; None if it takes it (or it is no OPTION)."""
        if option not in OPTIONS or option in self.takes:
            return None
        o = OPTIONS[option]
        takers = [d.title for d in DIALECTS.values() if option in d.takes]
        return o.message.format(
            label=o.label, why=o.why.format(title=self.title), title=self.title,
            shows=self.shows, takers_list=", ".join(takers),
            takers=", ".join(takers[:-1]) + " and " + takers[-1] if len(takers) > 1 else takers[0])

    def check(self, option: str, source: str | None = None) -> None:
        """An OptionRefused (a QueryError) if this dialect refuses ``option``."""
        why = self.refusal(option)
        if why is not None:
            raise OptionRefused(why, source=source)


@functools.cache
def entry(ref: str) -> Any:
    """What a "module:name" reference names, its module imported on first use (as entry
    points are): the registries name a dialect's modules, so that a run imports only those
    of the dialects it reads."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def _with_policy(q: Query, policy: str) -> Query:
    assert dialect_of(q).family == EPSPARQL  # (the dialect that takes --policy)
    return cast("EpSparqlQuery", q).with_policy(policy)


DIALECTS: dict[str, Dialect] = {d.name: d for d in (
    Dialect("rspql", "RSP-QL", RSP, _RSP_OPTIONS, "its RSP model",
            builder="rsep.lang.rspql:build"),
    Dialect("csparql", "C-SPARQL", RSP, _RSP_OPTIONS, "its RSP model",
            builder="rsep.lang.csparql:build"),
    Dialect("cqels", "CQELS", RSP, _RSP_OPTIONS, "its RSP model", builder="rsep.lang.cqels:build"),
    # SPASEQ's DEFINE GPM (002)
    Dialect("spaseq", "SPASEQ", SPASEQ, frozenset({"--graph-updates", "--max-matches"}),
            "its automaton",
            marker=re.compile(r"\bDEFINE\s+GPM\b", re.I), parser="rsep.lang.spaseq:parse_spaseq"),
    # EP-SPARQL's operators between groups or its time functions (003 Sec. 4.1)
    Dialect("epsparql", "EP-SPARQL", EPSPARQL, frozenset({"--policy", "--graph-updates", "--max-derived"}),
            "its operators",
            marker=re.compile(r"}\s*(OPTIONALSEQ|EQUALSOPTIONAL|EQUALS|SEQ)\s*{|"
                              r"\bget(DURATION|STARTTIME|ENDTIME)\s*\(", re.I),
            parser="rsep.lang.epsparql:parse_epsparql"),
)}

# How a parsed query of a family with an algebra of its own names its dialect: by its type's
# qualified name (naming the type would import every dialect's algebra)
_BY_ALGEBRA: dict[str, str] = {"rsep.algebra.spaseq.SpaseqQuery": "spaseq",
                               "rsep.algebra.epsparql.EpSparqlQuery": "epsparql"}

# --window-bounds' values: the boundaries of 000 Def. 3 (RSP-QL, CQELS) and of C-SPARQL's
# Esper batches (and RSP4J's), whichever the query's dialect gives by default
WINDOW_BOUNDS = {"right-closed": "(o,c]", "left-closed": "[o,c)"}


def _with_windows(q: Query, **change: Any) -> Query:
    """``q`` with every time window's spec changed (the other windows have no grid nor
    bounds of time)."""
    assert isinstance(q, ContinuousQuery)  # (the dialects that take the window options)
    # in place, as the query was parsed for this run: its other parts (the pattern tree, the
    # SPARQL text) name the windows by IRI and stay as they are
    q.dataset.windows[:] = [
        dataclasses.replace(w, spec=dataclasses.replace(w.spec, **change))
        if w.spec.kind in (WindowKind.TIME, WindowKind.LANDMARK) else w
        for w in q.dataset.windows]
    return q


def _with_bounds(q: Query, value: str) -> Query:
    if value not in WINDOW_BOUNDS:
        raise QueryError(f"--window-bounds {value!r}: expected one of {', '.join(WINDOW_BOUNDS)}")
    return _with_windows(q, boundary=Boundary(WINDOW_BOUNDS[value]))


def _with_origin(q: Query, value: str) -> Query:
    try:
        origin = int(value)
    except ValueError:
        raise QueryError(f"--window-origin {value!r}: expected a time on the stream's timeline, "
                         "an integer in its units (milliseconds for xsd:dateTime times)") from None
    return _with_windows(q, origin=origin)


# What applies an option's value to a parsed query, by option (the dialects that take it)
_APPLY: dict[str, Callable[[Query, str], Query]] = {
    "--policy": _with_policy, "--window-bounds": _with_bounds, "--window-origin": _with_origin}


def get_dialect(name: str) -> Dialect:
    """The dialect called ``name``; a QueryError naming the known ones otherwise."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise QueryError(f"unknown dialect {name!r} (known: {', '.join(DIALECTS)})") from None


def dialect_of(q: Query) -> Dialect:
    """The dialect a parsed query was written in."""
    if isinstance(q, ContinuousQuery):
        return DIALECTS[q.dialect]
    t = type(q)
    return DIALECTS[_BY_ALGEBRA[f"{t.__module__}.{t.__qualname__}"]]


def apply_option(q: Query, option: str, value: str, source: str | None = None) -> Query:
    """``q`` with an option's value applied (e.g. --policy); refused as its dialect says."""
    dialect_of(q).check(option, source)
    return _APPLY[option](q, value)
