"""SPASEQ queries (002): text -> :class:`rsep.algebra.spaseq.SpaseqQuery`.

The grammar is sparqlib's SPARQL 1.1 grammar plus ``spaseq.lark`` (LALR), so a
GPM body is parsed as a SPARQL group graph pattern. Everything the grammar
cannot say is checked here and reported with its line and column: undefined or
unused GPMs, GPMs on undeclared streams, FILTER variables that no earlier GPM
binds, misplaced ``+ ? !``, and (through pyoxigraph) the SPARQL of each GPM.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import pyoxigraph as ox
from lark import Lark, Token, Tree

from rsep.algebra.expression import Constraint
from rsep.algebra.pattern import PatternRefused
from rsep.algebra.spaseq import (
    GPM,
    And,
    Atom,
    AtomKind,
    BopNode,
    Leaf,
    Or,
    Sequence,
    SpaseqQuery,
    Strategy,
)
from rsep.lang.common import refuse_unknown_calls
from rsep.lang.errors import QueryError, position
from rsep.lang.expression import ExpressionReader
from rsep.lang.parser import READABLE, grammar_beside, parse_with, sparql_lalr
from rsep.lang.pattern import group_pattern
from rsep.lang.syntax import Terms, token
from rsep.lang.syntax import end_of as _end
from rsep.lang.syntax import start_of as _start
from rsep.stream.time import Duration

_UNIT_MS = {"MILLISECONDS": 1, "SECONDS": 1000, "MINUTES": 60_000, "HOURS": 3_600_000,
            "DAYS": 86_400_000}

_WORDS = {
    **READABLE,
    "NAME": "a name", "COLON": "':'", "AMP": "'&'", "QMARK": "'?'", "PIPE": "'|'",
    "PLUS": "'+'", "EXCLAMATION_MARK": "'!'", "SEMICOLON": "';'", "COMMA": "','",
}


@functools.cache
def parser() -> Lark:
    return sparql_lalr(grammar_beside(__file__, "spaseq.lark"), "spaseq_unit")


def _parse(text: str, source: str | None) -> Tree:
    return parse_with(parser(), text, source, _WORDS)



def _var_name(tok: Token) -> str:
    return str(tok)[1:]


def _tokens(node: Tree | Token) -> list[Token]:
    if isinstance(node, Token):
        return [node]
    return [t for t in node.scan_values(lambda v: isinstance(v, Token))]


class _Builder(Terms):
    def __init__(self, text: str, source: str | None) -> None:
        self.text = text
        self.source = source
        self.prefixes: dict[str, str] = {}
        self.base: str | None = None
        self.expressions: list[tuple[str, str, frozenset[str]]] = []

    # ------------------------------------------------------------ terms

    def iri(self, node: Tree | Token) -> str:
        if isinstance(node, Tree):
            return self.iri(node.children[0])
        if node.type == "IRIREF":
            return self._iriref(node)
        return self._pname(node)


    # ------------------------------------------------------------ query

    def build(self, tree: Tree) -> SpaseqQuery:
        prologue, query = tree.children
        for d in prologue.children:
            if d.data == "prefix_decl":
                ns = str(d.children[1].children[0])[:-1]
                self.prefixes[ns] = self._iriref(token(d.children[2]))
            elif d.data == "base_decl":
                self.base = self._iriref(token(d.children[1]))
        refuse_unknown_calls(tree, self.iri, self.error)
        select_node, *clauses, where = query.children
        select, distinct, select_toks = self._select(select_node)
        within: Duration | None = None
        streams: dict[str, str] = {}
        stream_toks: dict[str, Token] = {}
        partition: tuple[str, ...] = ()
        partition_node: Tree | None = None
        seen_within: Tree | None = None
        for c in clauses:
            c = c.children[0]
            if c.data == "within_clause":
                if seen_within is not None:
                    raise self.error("only one WITHIN clause per query", c)
                seen_within = c
                within = self._within(c)
            elif c.data == "partition_clause":
                if partition_node is not None:
                    raise self.error("only one PARTITION BY clause per query", c)
                partition_node = c
                partition = tuple(_var_name(token(v.children[0])) for v in c.children
                                  if isinstance(v, Tree) and v.data == "var")
            elif c.data == "from_stream":
                name_tok = next(t for t in c.children if isinstance(t, Token) and t.type == "NAME")
                iri_node = next(t for t in c.children if isinstance(t, Tree) and t.data == "iri")
                name = str(name_tok)
                if name in streams:
                    raise self.error(f"stream {name} is declared twice", name_tok)
                streams[name] = self.iri(iri_node)
                stream_toks[name] = name_tok
        if not streams:
            raise self.error("the query reads no stream: declare one with FROM STREAM Name <iri>",
                             where)
        seq_clause = next(c for c in where.children if isinstance(c, Tree) and c.data == "seq_clause")
        defs = [c for c in where.children if isinstance(c, Tree) and c.data == "gpm_def"]
        gpms = self._gpms(defs, streams)
        seq = self._sequence(seq_clause, gpms, frozenset(partition))
        used = {lf.gpm.name for lf in seq.leaves()}
        for d in defs:
            name = str(d.children[2])
            if name not in used:
                raise self.error(f"GPM {name} is defined but not used in SEQ", d.children[2])
        bound = set(seq.variables())
        aliases = {v for v, _, _ in self.expressions}
        for v, tok in zip(select or (), select_toks, strict=False):
            if v in aliases:
                if v in bound:
                    raise self.error(f"?{v} is bound by a GPM: (expr AS ?{v}) needs a new "
                                     "variable (SPARQL 1.1, 18.2.4.4)", tok)
            elif v not in bound:
                raise self.error(f"?{v} is selected but no GPM binds it", tok)
        for v in partition:
            for a in seq.atoms:
                if a.kind is AtomKind.NEGATION:
                    continue
                for lf in a.body.leaves():
                    if v not in lf.gpm.variables:
                        raise self.error(f"PARTITION BY ?{v}: GPM {lf.gpm.name} does not bind ?{v}",
                                         partition_node)
        return SpaseqQuery(select=select, within=within, streams=streams, gpms=gpms, seq=seq,
                           distinct=distinct, partition_by=partition, text=self.text,
                           source=self.source, expressions=tuple(self.expressions),
                           prologue=self.prologue_text())

    def _select(self, node: Tree) -> tuple[tuple[str, ...] | None, bool, list[Token]]:
        distinct = False
        out: list[str] = []
        toks: list[Token] = []
        star = False
        for c in node.children:
            if isinstance(c, Token):
                if c.type == "ASTERIX":
                    star = True
                elif str(c).upper() == "DISTINCT":
                    distinct = True
                continue
            inner = c.children[0]
            if inner.data == "var":
                tok = token(inner.children[0])
            else:  # (expr AS ?v): evaluated by pyoxigraph over each match's bindings
                expr, tok = inner.children[0], token(inner.children[-1].children[0])
                if any(n.data == "aggregate" for n in expr.iter_subtrees()):
                    raise self.error("aggregates need the end of the stream: a SPASEQ query "
                                     "outputs each match as it is detected", expr)
                text = self.text[_start(expr):_end(expr)]
                self._check_expression(text, expr)
                self.expressions.append((_var_name(tok), text,
                                         frozenset(_var_name(t) for t in _tokens(expr)
                                                   if t.type in ("VAR1", "VAR2"))))
            name = _var_name(tok)
            if name in out:
                raise self.error(f"?{name} is selected twice", tok)
            out.append(name)
            toks.append(tok)
        return (None if star else tuple(out)), distinct, toks

    def _check_expression(self, text: str, node: Tree) -> None:
        try:
            ox.Store().query(f"{self.prologue_text()}SELECT ({text} AS ?__v) WHERE {{ }}")
        except SyntaxError as e:
            raise self.error(f"invalid expression: {e}", node) from None
        except (OSError, RuntimeError, ValueError, TypeError):
            pass

    def _within(self, node: Tree) -> Duration:
        n_tok = next(t for t in node.children if isinstance(t, Token) and t.type == "INTEGER")
        n = int(str(n_tok))
        if n <= 0:
            raise self.error("the WITHIN window must be positive", n_tok)
        unit = next((c for c in node.children if isinstance(c, Tree) and c.data == "time_unit"), None)
        if unit is None:
            return Duration(n, False, str(n))
        word = str(unit.children[0]).upper()
        return Duration(n * _UNIT_MS[word], True, f"{n} {word}")

    # ------------------------------------------------------------ GPMs

    def _gpms(self, defs: list[Tree], streams: dict[str, str]) -> dict[str, GPM]:
        out: dict[str, GPM] = {}
        prologue = self.prologue_text()
        for d in defs:
            name_tok, stream_tok, body = token(d.children[2]), d.children[4], d.children[5]
            name = str(name_tok)
            if name in out:
                raise self.error(f"GPM {name} is defined twice", name_tok)
            sname = str(stream_tok)
            if sname not in streams:
                declared = ", ".join(streams)
                raise self.error(f"GPM {name} is defined ON {sname}, but no FROM STREAM declares "
                                 f"{sname} (declared: {declared})", stream_tok)
            out[name] = self._gpm(name, sname, streams[sname], body, prologue, name_tok)
        return out

    def _gpm(self, name: str, sname: str, stream: str, body: Tree, prologue: str,
             name_tok: Token) -> GPM:
        inner = body.children[0]
        background: list[str] = []
        for n in body.iter_subtrees_topdown():
            if n.data == "service_graph_pattern":
                raise self.error("SERVICE is refused: a query cannot reach the network", n)
            if n.data == "graph_graph_pattern":
                target = n.children[1]
                if isinstance(target.children[0], Tree) and target.children[0].data == "var":
                    raise self.error(f"GPM {name}: GRAPH needs the IRI of a background graph, "
                                     "not a variable", target)
                iri = self.iri(target.children[0])
                if iri not in background:
                    background.append(iri)
        variables = _bound_variables(body)
        top_filters = _top_level_filters(inner)
        stateful: list[Constraint] = []
        local_filters: list[Constraint] = []
        cuts: list[tuple[int, int]] = []
        all_fv: set[str] = set()
        filter_at: dict[str, tuple[int, int]] = {}
        for n in body.iter_subtrees_topdown():
            if n.data == "filter":
                for t in _filter_tokens(n):
                    filter_at.setdefault(_var_name(t), position(self.text, _start(t)))
        reader = ExpressionReader(self.text)
        for f, dot in top_filters:
            fv = _filter_variables(f)
            all_fv |= fv
            c = reader.constraint(f, prologue)
            if fv - variables:
                stateful.append(c)
                cuts.append((_start(f), _end(dot) if dot is not None else _end(f)))
            else:
                local_filters.append(c)
        top_ids = {id(f) for f, _ in top_filters}
        for n in body.iter_subtrees_topdown():
            if n.data == "filter" and id(n) not in top_ids:
                missing = _filter_variables(n) - variables
                if missing:
                    v = sorted(missing)[0]
                    raise self.error(f"GPM {name}: ?{v} is not bound by {name}; a FILTER using "
                                     "variables of earlier GPMs must stand at the top level of "
                                     "the GPM", n)
        start, end = _start(body), _end(body)
        pattern = self.text[start:end]
        local = pattern
        for a, b in sorted(cuts, reverse=True):
            local = local[: a - start] + " " * (b - a) + local[b - start:]
        line, col = position(self.text, _start(name_tok))
        g = GPM(name=name, stream_name=sname, stream=stream, pattern=pattern, local_pattern=local,
                stateful=tuple(stateful), variables=frozenset(variables),
                background=tuple(background), prologue=prologue, line=line, column=col,
                filter_variables=frozenset(all_fv), filter_at=filter_at,
                required_variables=frozenset(_required_variables(inner)),
                local_filters=tuple(local_filters))
        self._validate(g, start)
        # The local pattern's tree, read once, for the compiled matcher; where the tree
        # does not hold it (or the shared grammar reads it otherwise than pyoxigraph, which
        # has just taken it), pyoxigraph matches the text.
        try:
            tree = group_pattern(local, prologue)
        except (PatternRefused, RecursionError, QueryError):
            return g
        return dataclasses.replace(g, local_tree=tree)

    def _validate(self, g: GPM, start: int) -> None:
        """pyoxigraph checks the SPARQL the grammar lets through (scoping, BIND, aggregates)."""
        head = g.prologue + "SELECT * WHERE "
        for body in (g.pattern, g.local_pattern):
            q = head + body
            try:
                res = ox.Store().query(q)
                assert isinstance(res, ox.QuerySolutions)
                for _ in res:
                    break
            except SyntaxError as e:
                m = re.match(r"error at (\d+):(\d+): ?(.*)", str(e), re.S)
                if not m:
                    raise self.error(f"GPM {g.name}: invalid pattern: {e}") from None
                line, col, what = int(m.group(1)), int(m.group(2)), m.group(3)
                lines = q.split("\n")
                off = sum(len(x) + 1 for x in lines[: line - 1]) + col - 1 - len(head)
                off = max(0, min(len(body), off))
                ln, cl = position(self.text, start + off)
                raise QueryError(f"GPM {g.name}: invalid pattern: {what}", ln, cl,
                                 self.source) from None
            except (OSError, RuntimeError, ValueError, TypeError):
                pass  # evaluation errors on an empty store say nothing about the pattern

    # ------------------------------------------------------------ SEQ

    def _sequence(self, node: Tree, gpms: dict[str, GPM], partition: frozenset[str]) -> Sequence:
        expr = next(c for c in node.children if isinstance(c, Tree) and c.data == "seq_expr")
        atoms_nodes: list[Tree] = []
        ops: list[Strategy] = []
        for c in expr.children:
            if c.data == "seq_atom":
                atoms_nodes.append(c)
            elif c.data == "seq_op":
                ops.append(Strategy(str(c.children[0])))
            elif c.data == "trailing_op":
                op = str(c.children[0].children[0])
                raise self.error(f"the sequence ends with '{op}': an operator needs an element "
                                 "after it", c)
        counter = [0]
        atoms: list[Atom] = []
        earlier: set[str] = set()
        later_binders = self._binders(atoms_nodes, gpms)
        for i, an in enumerate(atoms_nodes):
            kind, body = self._atom(an, gpms, counter)
            local: frozenset[str] = frozenset()
            if kind is AtomKind.KLEENE:
                assert isinstance(body, Leaf)
                local = frozenset(body.gpm.variables - earlier - partition)
            self._check_filters(body, set(earlier), an, later_binders, i)
            atoms.append(Atom(kind, body, i, local))
            if kind is not AtomKind.NEGATION:
                for lf in body.leaves():
                    earlier |= lf.gpm.variables
        self._check_positions(atoms, atoms_nodes)
        return Sequence(tuple(atoms), tuple(ops))

    def _binders(self, atoms_nodes: list[Tree], gpms: dict[str, GPM]) -> list[dict[str, str]]:
        """Per atom, variable -> name of a GPM in it that binds it (for error messages)."""
        out = []
        for an in atoms_nodes:
            d: dict[str, str] = {}
            for t in _tokens(an):
                if t.type == "NAME" and str(t) in gpms:
                    for v in gpms[str(t)].variables:
                        d.setdefault(v, str(t))
            out.append(d)
        return out

    def _atom(self, node: Tree, gpms: dict[str, GPM], counter: list[int]) -> tuple[AtomKind, BopNode]:
        primary = node.children[0]
        suffix = node.children[1] if len(node.children) > 1 else None
        kind = AtomKind.BOP if suffix is None else AtomKind(str(suffix.children[0]))
        if primary.data == "nested_seq":
            raise self.error("a sequence cannot be nested in parentheses: parentheses group "
                             "'&' and '|' expressions", primary)
        if primary.data == "gpm_ref":
            body: BopNode = self._leaf(token(primary.children[0]), gpms, counter)
        else:
            body = self._bop(primary.children[1], gpms, counter)
        if kind is not AtomKind.BOP and not isinstance(body, Leaf):
            raise self.error(f"'{kind.value}' applies to one GPM (Definition 4: Atom ::= GPM '+'), "
                             "not to a conjunction or disjunction", suffix)
        return kind, body

    def _leaf(self, tok: Token, gpms: dict[str, GPM], counter: list[int]) -> Leaf:
        name = str(tok)
        if name not in gpms:
            defined = ", ".join(gpms) or "none"
            raise self.error(f"GPM {name} is used in SEQ but not defined (defined: {defined})", tok)
        counter[0] += 1
        return Leaf(gpms[name], counter[0])

    def _bop(self, node: Tree, gpms: dict[str, GPM], counter: list[int]) -> BopNode:
        if node.data == "nested_seq":
            raise self.error("a sequence cannot be nested inside '&' or '|'", node)
        if node.data == "bop_ref":
            if len(node.children) > 1:
                suffix = node.children[1]
                raise self.error(f"'{suffix.children[0]}' cannot be used inside '&' or '|': it "
                                 "applies to a GPM of the sequence", suffix)
            return self._leaf(token(node.children[0]), gpms, counter)
        if node.data == "bop_group":
            return self._bop(node.children[1], gpms, counter)
        items = [self._bop(c, gpms, counter) for c in node.children if isinstance(c, Tree)]
        if len(items) == 1:
            return items[0]
        return And(tuple(items)) if node.data == "bop_and" else Or(tuple(items))

    def _check_filters(self, body: BopNode, earlier: set[str], node: Tree,
                       later: list[dict[str, str]], index: int) -> None:
        def visit(n: BopNode, before: set[str]) -> set[str]:
            if isinstance(n, Leaf):
                g = n.gpm
                missing = g.filter_variables - g.variables - before
                if missing:
                    v = sorted(missing)[0]
                    hint = ""
                    for d in later[index:]:
                        if v in d:
                            hint = f" (GPM {d[v]} binds it, but does not come before {g.name})"
                            break
                    line, col = g.filter_at.get(v, (g.line, g.column))
                    raise QueryError(f"?{v} is used in a FILTER of GPM {g.name}, but neither "
                                     f"{g.name} nor any GPM before it binds it{hint}",
                                     line, col, self.source)
                return set(g.variables)
            if isinstance(n, And):
                acc = set(before)
                for it in n.items:
                    acc |= visit(it, acc)
                return acc - before
            assert isinstance(n, Or)
            out: set[str] = set()
            for it in n.items:
                out |= visit(it, before)
            return out

        visit(body, earlier)

    def _check_positions(self, atoms: list[Atom], nodes: list[Tree]) -> None:
        n = len(atoms)
        for a, node in zip(atoms, nodes, strict=True):
            if a.kind is AtomKind.NEGATION:
                if a.index == 0 or a.index == n - 1:
                    raise self.error("a negated GPM must stand between two elements of the "
                                     "sequence (it forbids matching events between them)", node)
                for nb in (atoms[a.index - 1], atoms[a.index + 1]):
                    if nb.kind in (AtomKind.NEGATION, AtomKind.OPTIONAL):
                        raise self.error("a negated GPM cannot be next to an optional or "
                                         "negated one", node)
        if all(a.kind is AtomKind.OPTIONAL for a in atoms):
            raise self.error("every element of the sequence is optional: it could match no event",
                             nodes[0])


# ---------------------------------------------------------------- pattern analysis


def _bound_variables(body: Tree) -> set[str]:
    """Variables a group graph pattern can bind: all but those only used in expressions."""
    out: set[str] = set()

    def walk(n: Tree | Token) -> None:
        if isinstance(n, Token):
            if n.type in ("VAR1", "VAR2"):
                out.add(_var_name(n))
            return
        if n.data == "filter":
            return
        if n.data == "bind":
            walk(n.children[-1])
            return
        for c in n.children:
            walk(c)

    walk(body)
    return out


def _required_variables(inner: Tree) -> set[str]:
    """Variables of the triple patterns at the top of a group (and of its GRAPH blocks)."""
    out: set[str] = set()
    parts = [c for c in inner.children if isinstance(c, Tree)]
    for other in [c for c in parts if c.data == "group_graph_pattern_sub_other"]:
        parts.extend(c for c in other.children if isinstance(c, Tree))
    for p in parts:
        if p.data == "triples_block":
            out |= {_var_name(t) for t in _tokens(p) if t.type in ("VAR1", "VAR2")}
        elif p.data == "graph_pattern_not_triples" and p.children[0].data == "graph_graph_pattern":
            group = p.children[0].children[2]
            if group.children[0].data == "group_graph_pattern_sub":
                out |= _required_variables(group.children[0])
    return out


def _top_level_filters(inner: Tree) -> list[tuple[Tree, Token | None]]:
    """FILTERs directly in the GPM's group, each with the '.' that may follow it."""
    out = []
    for other in inner.children:
        if not isinstance(other, Tree) or other.data != "group_graph_pattern_sub_other":
            continue
        gpnt = other.children[0]
        f = gpnt.children[0]
        if isinstance(f, Tree) and f.data == "filter":
            dot = next((c for c in other.children if isinstance(c, Token) and c.type == "DOT"), None)
            out.append((f, dot))
    return out


def _filter_tokens(f: Tree) -> list[Token]:
    """The variable tokens a FILTER reads, leaving out those local to EXISTS patterns."""
    out: list[Token] = []

    def walk(n: Tree | Token) -> None:
        if isinstance(n, Token):
            if n.type in ("VAR1", "VAR2"):
                out.append(n)
            return
        if n.data in ("exists_func", "not_exists_func"):
            return
        for c in n.children:
            walk(c)

    walk(f)
    return out


def _filter_variables(f: Tree) -> set[str]:
    return {_var_name(t) for t in _filter_tokens(f)}


def parse_spaseq(text: str, *, source: str | None = None) -> SpaseqQuery:
    """Parse and check a SPASEQ SELECT query."""
    tree = _parse(text, source)
    return _Builder(text, source).build(tree)



__all__ = ["parse_spaseq", "parser"]
