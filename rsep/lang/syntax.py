"""What a parse tree says, in terms every dialect shares.

``Syntax`` collects the RSP constructs of a parsed query (with their positions),
resolves IRIs, reads window specs, and rewrites the query text into plain
SPARQL 1.1 by splicing: the rest of the query reaches pyoxigraph verbatim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import cast

from lark import Token, Tree

from rsep.algebra.expression import Iri, PrefixedName
from rsep.algebra.pattern import DEFAULT_BASE, is_absolute, resolve_iri
from rsep.algebra.window import Boundary, WindowKind, WindowSpec
from rsep.lang.errors import QueryError, position
from rsep.stream.time import Duration, TimeError, parse_datetime_ms, parse_duration

# Which dialect each construct belongs to; None: shared.
FEATURE_DIALECT = {
    "register_rspql": "rspql",
    "register_csparql": "csparql",
    "from_named_window": "rspql",
    "from_named_win_as": "rspql",
    "window_graph_pattern": "rspql",
    "from_stream": "csparql",
    "from_named_stream": "csparql",
    "timestamp_call": "csparql",
    "stream_graph_pattern": "cqels",
    "w_range_slide": "cqels",
    "w_triples": "cqels",
    "w_all": "cqels",
    "w_range_tumbling": "csparql",
    "w_range_triples": "csparql",
    "w_from_to": "rspql",
    "w_rows": "rspql",
    "w_elements": "rspql",
    "w_landmark": "rspql",
    "w_unbounded": "rspql",
    "event_decl": "rspql",
    "match_pattern": "rspql",
}

FEATURE_TEXT = {
    "register_rspql": "REGISTER RSTREAM/ISTREAM/DSTREAM",
    "register_csparql": "REGISTER QUERY/STREAM",
    "from_named_window": "FROM NAMED WINDOW",
    "from_named_win_as": "FROM NAMED ... WIN [...] AS",
    "window_graph_pattern": "WINDOW graph pattern",
    "from_stream": "FROM STREAM",
    "from_named_stream": "FROM NAMED STREAM",
    "timestamp_call": "timestamp()",
    "stream_graph_pattern": "STREAM graph pattern in WHERE",
    "w_range_slide": "[RANGE d SLIDE d]",
    "w_triples": "[TRIPLES n]",
    "w_all": "[ALL]",
    "w_range_tumbling": "[RANGE d TUMBLING]",
    "w_range_triples": "[RANGE TRIPLES n]",
    "w_from_to": "[FROM NOW-d TO NOW-d]",
    "w_rows": "[ROWS n]",
    "w_elements": "[ELEMENTS n]",
    "w_landmark": "[LANDMARK t0]",
    "w_unbounded": "[UNBOUNDED]",
    "event_decl": "EVENT ON ... AS",
    "match_pattern": "MATCH",
}

# An ISO 8601 duration with years or months (P1Y, P2M, P1Y2M3DT4H): calendar units.
_CALENDAR = re.compile(r"^P([0-9]+Y)?([0-9]+M)?(?<=[YM])", re.I)

DIALECT_NAMES = {"rspql": "RSP-QL", "csparql": "C-SPARQL", "cqels": "CQELS"}

FORMS = {
    "select_query": "SELECT",
    "construct_query": "CONSTRUCT",
    "ask_query": "ASK",
    "describe_query": "DESCRIBE",
}


def start_of(node: Tree | Token) -> int:
    pos = node.start_pos if isinstance(node, Token) else node.meta.start_pos
    assert pos is not None  # (the lexer gives every token its position)
    return pos


def end_of(node: Tree | Token) -> int:
    pos = node.end_pos if isinstance(node, Token) else node.meta.end_pos
    assert pos is not None
    return pos


def token(node: Tree | Token) -> Token:
    """A child where the grammar puts a terminal: what a parse tree's type cannot say."""
    return cast(Token, node)


def first_token(node: Tree | Token) -> Token:
    if isinstance(node, Token):
        return node
    for c in node.children:
        t = first_token(c)
        if t is not None:
            return t
    raise ValueError("empty node")


@dataclass
class Feature:
    name: str
    node: Tree
    line: int
    column: int

    @property
    def dialect(self) -> str | None:
        return FEATURE_DIALECT.get(self.name)


class Terms:
    """What every dialect's parser needs to read terms and report errors: the query
    text, its prefixes and base, and located errors. Subclasses set the attributes."""

    text: str
    source: str | None
    prefixes: dict[str, str]
    base: str | None

    def error(self, message: str, node: Tree | Token | None = None) -> QueryError:
        if node is None:
            return QueryError(message, source=self.source)
        line, col = position(self.text, start_of(node))
        return QueryError(message, line, col, self.source)

    def _iriref(self, tok: Token) -> str:
        iri = str(tok)[1:-1]
        if is_absolute(iri):
            return iri
        try:
            return resolve_iri(iri, self.base or DEFAULT_BASE)
        except (SyntaxError, ValueError) as e:
            raise self.error(f"invalid IRI <{iri}>: {e}", tok) from None

    def _pname(self, tok: Token) -> str:
        ns, _, local = str(tok).partition(":")
        if ns not in self.prefixes:
            raise self.error(f"undeclared prefix '{ns}:'", tok)
        return self.prefixes[ns] + re.sub(r"\\(.)", r"\1", local)

    def resolve(self, c: Iri | PrefixedName) -> str:
        """An IRI of an expression's tree (rsep.algebra.expression), absolute: read as
        :meth:`_iriref` and :meth:`_pname` read tokens (an error here has no position)."""
        if isinstance(c, PrefixedName):
            if c.prefix not in self.prefixes:
                raise self.error(f"undeclared prefix '{c.prefix}:'")
            return self.prefixes[c.prefix] + re.sub(r"\\(.)", r"\1", c.local)
        if is_absolute(c.value):
            return c.value
        try:
            return resolve_iri(c.value, self.base or DEFAULT_BASE)
        except (SyntaxError, ValueError) as e:
            raise self.error(f"invalid IRI <{c.value}>: {e}") from None

    def prologue_text(self) -> str:
        """BASE and PREFIX declarations that make a fragment of the query stand alone."""
        out = f"BASE <{self.base or DEFAULT_BASE}>\n"
        return out + "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in self.prefixes.items())


@dataclass
class Syntax(Terms):
    text: str
    tree: Tree
    source: str | None = None
    prefixes: dict[str, str] = field(default_factory=dict)
    base: str | None = None
    features: list[Feature] = field(default_factory=list)
    form: str = "SELECT"
    services: list[Tree] = field(default_factory=list)
    edits: list[tuple[int, int, str]] = field(default_factory=list)
    # Offsets of the IRIs that only DEFAULT_BASE resolves (relative, before any absolute BASE).
    relative_iris: list[int] = field(default_factory=list)

    # ------------------------------------------------------------ collection

    @classmethod
    def of(cls, text: str, tree: Tree, source: str | None = None) -> Syntax:
        s = cls(text, tree, source)
        prologue = tree.children[0]
        based_at = len(text)  # where the first absolute BASE stands
        for d in prologue.children:
            if d.data == "prefix_decl":
                ns = str(d.children[1].children[0])[:-1]
                s.prefixes[ns] = s._iriref(token(d.children[2]))
            elif d.data == "base_decl":
                tok = d.children[1]
                if is_absolute(str(tok)[1:-1]):
                    based_at = min(based_at, start_of(tok))
                s.base = s._iriref(token(tok))
        # An IRI left relative before any absolute BASE is resolved against DEFAULT_BASE,
        # here and (by a BASE put in front of it, see all_edits) in the rewritten query.
        s.relative_iris = [t.start_pos for t in tree.scan_values(lambda v: isinstance(v, Token))
                           if t.type == "IRIREF" and t.start_pos < based_at
                           and not is_absolute(t[1:-1])]
        s._check_prefixes(tree)
        body = tree.children[1]
        s.form = next(FORMS[c.data] for c in body.children if isinstance(c, Tree) and c.data in FORMS)
        for node in tree.iter_subtrees_topdown():
            if node.data in FEATURE_DIALECT or node.data in ("w_range", "w_range_step", "w_now"):
                line, col = position(text, start_of(node))
                s.features.append(Feature(node.data, node, line, col))
            elif node.data == "service_graph_pattern":
                s.services.append(node)
            elif node.data == "select_bare_aggregate":
                agg = text[start_of(node.children[0]):end_of(node.children[0])]
                var = text[start_of(node.children[-1]):end_of(node.children[-1])]
                bare = text[start_of(node):end_of(node)]
                raise s.error(f"SELECT {bare}: SPARQL needs the parentheses, ({agg} AS {var})",
                              node)
        return s

    def _check_prefixes(self, tree: Tree) -> None:
        """Every prefixed name's prefix declared: found here, the error names the prefix at
        its first use (pyoxigraph's check, later, says only "Prefix not found", after it)."""
        stack: list[Tree | Token] = [tree]
        while stack:
            n = stack.pop()
            if isinstance(n, Token):
                if n.type in ("PNAME_LN", "PNAME_NS") and n.partition(":")[0] not in self.prefixes:
                    raise self.error(f"undeclared prefix '{n.partition(':')[0]}:' (no PREFIX "
                                     "declares it)", n)
            elif n.data != "prefix_decl":
                stack.extend(reversed(n.children))

    def nodes(self, *names: str) -> list[Tree]:
        return [f.node for f in self.features if f.name in names]

    def dataset_clauses(self) -> list[Tree]:
        body = self.tree.children[1]
        query = next(c for c in body.children if isinstance(c, Tree) and c.data in FORMS)
        out = []
        for c in query.children:
            if isinstance(c, Tree) and (c.data in ("dataset_clause", "event_decl") or c.data.startswith("from_")):
                out.append(c)
            elif isinstance(c, Tree) and c.data in ("construct_triples_template",
                                                    "construct_construct_template"):
                out.extend(x for x in c.children if isinstance(x, Tree) and
                           (x.data in ("dataset_clause", "event_decl") or x.data.startswith("from_")))
        return out

    # ------------------------------------------------------------ dialects

    def detect(self, forced: str | None) -> str:
        """The dialect: forced, or the one whose constructs the query uses."""
        by: dict[str, Feature] = {}
        for f in self.features:
            if f.dialect and f.dialect not in by:
                by[f.dialect] = f
        if forced:
            for d, f in by.items():
                if d != forced:
                    raise QueryError(
                        f"{FEATURE_TEXT[f.name]} is {DIALECT_NAMES[d]} syntax, but the query is "
                        f"read as {DIALECT_NAMES.get(forced, forced)}",
                        f.line, f.column, self.source)
            return forced
        if len(by) > 1:
            (d1, f1), (d2, f2) = sorted(by.items(), key=lambda kv: (kv[1].line, kv[1].column))[:2]
            raise QueryError(
                f"the query mixes dialects: {FEATURE_TEXT[f1.name]} (line {f1.line}) is "
                f"{DIALECT_NAMES[d1]}, {FEATURE_TEXT[f2.name]} (line {f2.line}) is {DIALECT_NAMES[d2]}",
                f2.line, f2.column, self.source)
        return next(iter(by), "rspql")

    # ------------------------------------------------------------ terms

    def iri(self, node: Tree | Token) -> str:
        if isinstance(node, Token):
            if node.type == "IRIREF":
                return self._iriref(node)
            if node.type in ("PNAME_LN", "PNAME_NS"):
                return self._pname(node)
            return str(node)
        if node.data in ("iri", "source_selector", "var_or_iri", "register_name", "prefixed_name"):
            return self.iri(node.children[0])
        raise self.error("expected an IRI", node)


    def is_var(self, node: Tree) -> bool:
        return isinstance(node, Tree) and node.data == "var_or_iri" and \
            isinstance(node.children[0], Tree) and node.children[0].data == "var"

    # ------------------------------------------------------------ windows

    def duration(self, node: Tree) -> Duration:
        tok = node.children[0]
        text = str(tok) if isinstance(tok, Token) else self.text[start_of(tok):end_of(tok)]
        try:
            if isinstance(tok, Tree):  # "PT5S"^^xsd:duration
                lex = first_token(tok)
                text = str(lex)[1:-1]
            if _CALENDAR.match(text):
                raise self.error(f"duration {text}: years and months have no fixed length, so a "
                                 "window cannot be measured in them (RSP4J's java.time.Duration "
                                 "refuses them too); write days, hours, minutes or seconds, "
                                 "e.g. P30D", node)
            return parse_duration(text)
        except TimeError as e:
            raise self.error(str(e), node) from None

    def time_value(self, node: Tree) -> int | Duration:
        tok = node.children[0]
        if isinstance(tok, Token):
            return int(str(tok))
        lex = str(first_token(tok)).strip("\"'")
        try:
            return parse_datetime_ms(lex) if not lex.lstrip("-").isdigit() else int(lex)
        except TimeError as e:
            raise self.error(str(e), node) from None

    def window_spec(self, spec_node: Tree, boundary: Boundary = Boundary.RIGHT_CLOSED) -> WindowSpec:
        """The window of a ``[...]`` spec; a time window without STEP slides by one time unit."""
        body = spec_node.children[0]
        text = self.text[start_of(spec_node):end_of(spec_node)]
        kind = body.data
        durs = [self.duration(c) for c in body.children if isinstance(c, Tree) and c.data == "duration"]
        ints = [int(str(c)) for c in body.children if isinstance(c, Token) and c.type == "INTEGER"]
        if kind in ("w_range", "w_range_step", "w_range_slide", "w_range_tumbling"):
            rng = durs[0]
            if kind == "w_range":
                step = None
            elif kind == "w_range_tumbling":
                step = rng
            else:
                step = durs[1]
            if rng.amount <= 0 or (step is not None and step.amount <= 0):
                raise self.error("window range and step must be positive", spec_node)
            if step is not None and rng.in_ms != step.in_ms:
                raise self.error("window range and step must both be plain integers or both "
                                 "carry a time unit", spec_node)
            return WindowSpec(WindowKind.TIME, range=rng, step=step, boundary=boundary, text=text)
        if kind == "w_from_to":
            a = durs[0]
            b = durs[1] if len(durs) > 1 and self._has_second_minus(body) else Duration(0, a.in_ms, "0")
            step = durs[-1] if self._has_step(body) else None
            if b.amount >= a.amount:
                raise self.error("[FROM NOW-a TO NOW-b] needs a > b", spec_node)
            return WindowSpec(WindowKind.TIME, range=a, step=step, offset=b, boundary=boundary, text=text)
        if kind == "w_elements" and len(ints) > 1 and ints[1] != 1:
            raise self.error(f"{text}: a count window that reports every {ints[1]} items has no "
                             "counterpart in rsep's algebra (its count windows slide by one item "
                             f"and report on every arrival); write [ELEMENTS {ints[0]}]", spec_node)
        if kind in ("w_rows", "w_elements", "w_triples", "w_range_triples"):
            n = ints[0]
            if n <= 0:
                raise self.error("a count-based window needs a positive size", spec_node)
            return WindowSpec(WindowKind.COUNT, count=n, count_triples=kind not in ("w_rows", "w_elements"),
                              text=text)
        if kind == "w_landmark":
            tv = next(c for c in body.children if isinstance(c, Tree) and c.data == "time_value")
            return WindowSpec(WindowKind.LANDMARK, landmark=self.time_value(tv),
                              step=durs[0] if durs else None, text=text)
        if kind == "w_now":
            return WindowSpec(WindowKind.NOW, text=text)
        if kind in ("w_unbounded", "w_all"):
            return WindowSpec(WindowKind.UNBOUNDED, text=text)
        raise self.error(f"unknown window {text}", spec_node)

    @staticmethod
    def _has_step(body: Tree) -> bool:
        return any(isinstance(c, Token) and c.type == "KW_STEP" for c in body.children)

    @staticmethod
    def _has_second_minus(body: Tree) -> bool:
        return sum(1 for c in body.children if isinstance(c, Token) and c.type == "MINUS") > 1

    # ------------------------------------------------------------ rewriting

    def replace(self, node: Tree | Token, text: str) -> None:
        self.edits.append((start_of(node), end_of(node), text))

    def replace_span(self, start: int, end: int, text: str) -> None:
        self.edits.append((start, end, text))

    def all_edits(self, extra: list[tuple[int, int, str]] | None = None) -> list[tuple[int, int, str]]:
        """The edits (and ``extra`` ones), with ``BASE <DEFAULT_BASE>`` put in front
        when a relative IRI is left in the text that needs it."""
        edits = self.edits + (extra or [])
        if any(not any(start <= at < end for start, end, _ in edits) for at in self.relative_iris):
            edits.append((0, 0, f"BASE <{DEFAULT_BASE}> "))
        return edits

    def rewritten(self, extra: list[tuple[int, int, str]] | None = None) -> str:
        """The query text with the edits (and ``extra`` ones) applied.

        Back to front, so earlier offsets stay valid; of two edits at one offset the
        longer goes first, so an insertion there lands before the replacement.
        """
        out = self.text
        for start, end, text in sorted(self.all_edits(extra), key=lambda e: (e[0], e[1]),
                                       reverse=True):
            out = out[:start] + text + out[end:]
        return out


def nodes_in(node: Tree, name: str) -> list[Tree]:
    return [n for n in node.iter_subtrees_topdown() if n.data == name]
