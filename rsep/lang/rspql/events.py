"""RSEP-QL event declarations and MATCH patterns (000 Example 4) onto the algebra."""

from __future__ import annotations

import re

from lark import Token, Tree

from rsep.algebra.dataset import StreamingDataset
from rsep.algebra.events import (
    FROM_VAR,
    TO_VAR,
    BasicEventPattern,
    EventPattern,
    First,
    Last,
    MatchPattern,
    Selection,
    Seq,
)
from rsep.algebra.pattern import Pattern, PatternRefused
from rsep.lang.errors import QueryError
from rsep.lang.expression import RSP_EXTENSIONS, ExpressionReader, group_filters
from rsep.lang.pattern import PatternReader, group_pattern
from rsep.lang.syntax import Syntax, end_of, start_of

# What a basic event pattern may contain: a BGP with FILTERs (000 Sec. 3.3 (1)).
_BEP_ALLOWED = {"group_graph_pattern", "group_graph_pattern_sub", "group_graph_pattern_sub_other",
                "graph_pattern_not_triples", "triples_block", "filter"}


def _bep_variables(syn: Syntax, pattern: Tree) -> tuple[str, ...]:
    out: list[str] = []
    for node in pattern.iter_subtrees_topdown():
        if node.data == "triples_block":
            for tok in node.scan_values(lambda v: isinstance(v, Token) and v.type in ("VAR1", "VAR2")):
                name = str(tok)[1:]
                if name not in out:
                    out.append(name)
    return tuple(out)


def _check_bep(syn: Syntax, pattern: Tree) -> None:
    for node in pattern.iter_subtrees_topdown():
        if node.data in ("optional_graph_pattern", "group_or_union_graph_pattern", "minus_graph_pattern",
                         "graph_graph_pattern", "window_graph_pattern", "stream_graph_pattern",
                         "service_graph_pattern", "bind", "inline_data", "sub_select", "match_pattern"):
            if node.data == "group_or_union_graph_pattern" and node is pattern:
                continue
            raise syn.error("an EVENT pattern is a basic graph pattern (triple patterns and "
                            "FILTERs only)", node)
        if node.data == "path_mod" or (node.data == "path_sequence" and len(node.children) > 1) \
                or (node.data == "path_alternative" and len(node.children) > 1):
            raise syn.error("an EVENT pattern is a basic graph pattern: property paths are not allowed", node)


def _tree(reader: PatternReader, pattern: Tree) -> Pattern | None:
    """A BEP's group as a tree (the compiled matcher reads its triples from it), or None
    when the tree cannot hold it (the text still runs)."""
    try:
        return reader.group(pattern)
    except (PatternRefused, RecursionError):
        return None


def event_pattern(name: str, window: str, pattern: str, variables: tuple[str, ...] = (),
                  prologue: str = "") -> BasicEventPattern:
    """A BEP made from its text alone (a test's, a tool's), read once here as a declared
    one is: its FILTERs and its tree, for the compiled matcher (the tree None where it does
    not hold the pattern: pyoxigraph matches the text). Not checked as a declaration is
    (a BEP's shape, its window), so that pyoxigraph's own patterns can be given too."""
    filters = group_filters(pattern, prologue)
    try:
        tree: Pattern | None = group_pattern(pattern, prologue)
    except (PatternRefused, RecursionError, QueryError):
        tree = None
    return BasicEventPattern(name, window, pattern, variables, prologue, filters, tree)


def declarations(syn: Syntax, ds: StreamingDataset) -> dict[str, BasicEventPattern]:
    beps: dict[str, BasicEventPattern] = {}
    prologue = syn.prologue_text()
    reader = ExpressionReader(syn.text, RSP_EXTENSIONS)
    reader_of_patterns = PatternReader(syn)
    for node in syn.nodes("event_decl"):
        iri_node = node.children[2]
        pattern = node.children[3]
        name = str(node.children[5])
        w = syn.iri(iri_node)
        if not ds.window(w):
            declared = ", ".join(f"<{x.iri}>" for x in ds.windows) or "none"
            raise syn.error(f"EVENT ON <{w}>: no window of that name is declared (declared: {declared})",
                            iri_node)
        if name in beps:
            raise syn.error(f"event {name} is declared twice", node.children[5])
        _check_bep(syn, pattern)
        text = syn.text[start_of(pattern):end_of(pattern)]
        # (a BEP holds no sub-group: its FILTERs are its group's, in the order of the text)
        filters = tuple(reader.constraint(f, prologue) for f in pattern.iter_subtrees_topdown()
                        if f.data == "filter")
        beps[name] = BasicEventPattern(name, w, text, _bep_variables(syn, pattern), prologue,
                                       filters, _tree(reader_of_patterns, pattern))
    return beps


def _expr(syn: Syntax, node: Tree, beps: dict[str, BasicEventPattern]) -> EventPattern:
    if node.data == "event_expr":
        parts = [c for c in node.children if isinstance(c, Tree)]
        e = _expr(syn, parts[0], beps)
        for p in parts[1:]:  # SEQ is left-associative
            e = Seq(e, _expr(syn, p, beps))
        return e
    if node.data == "ev_first":
        return First(_expr(syn, node.children[1], beps))
    if node.data == "ev_last":
        return Last(_expr(syn, node.children[1], beps))
    if node.data == "ev_group":
        return _expr(syn, node.children[0], beps)
    name = str(node.children[0])
    if name not in beps:
        declared = ", ".join(beps) or "none"
        raise syn.error(f"MATCH: no event named {name} is declared (declared: {declared})", node)
    return beps[name]


def matches(syn: Syntax, beps: dict[str, BasicEventPattern]) -> list[MatchPattern]:
    out = []
    exposes = bool(re.search(r"[?$]_(from|to)\b", syn.text))
    for i, node in enumerate(syn.nodes("match_pattern")):
        policy = next((str(c).upper() for c in node.children
                       if isinstance(c, Token) and c.type == "MATCH_POLICY"), "UNRESTRICTED")
        expr_node = next(c for c in node.children if isinstance(c, Tree) and c.data == "event_expr")
        expr = _expr(syn, expr_node, beps)
        variables = list(expr.variables) + ([FROM_VAR, TO_VAR] if exposes else [])
        slot = "VALUES (" + " ".join("?" + v for v in variables) + f") {{ }} # rsep-match-{i}\n"
        syn.replace(node, slot)
        out.append(MatchPattern(expr, Selection(policy), slot, exposes))
    return out


def empty_without_match(syn: Syntax) -> bool:
    """Whether the query has no solution at all whenever a MATCH has none: a SELECT or
    CONSTRUCT with no aggregate (an empty group still aggregates to one row) whose every
    MATCH is an element of the WHERE clause's own group. That group is then the join of
    an empty VALUES with the rest, which is empty; FILTER, projection and the solution
    modifiers keep it so. A MATCH under OPTIONAL, UNION, MINUS, GRAPH, a sub-group or a
    sub-query is left to pyoxigraph."""
    body = syn.tree.children[1]
    query = next((c for c in body.children
                  if isinstance(c, Tree) and c.data in ("select_query", "construct_query")), None)
    if query is None or any(n.data in ("aggregate", "group_clause", "having_clause")
                            for n in query.iter_subtrees()):
        return False
    where = next((c for c in query.children if isinstance(c, Tree) and c.data == "where_clause"), None)
    if where is None:
        return False
    top = 0
    for sub in where.children[-1].children:
        if not (isinstance(sub, Tree) and sub.data == "group_graph_pattern_sub"):
            continue
        for other in sub.children:
            if isinstance(other, Tree) and other.data == "group_graph_pattern_sub_other":
                for node in other.children:
                    if isinstance(node, Tree) and node.children and \
                            getattr(node.children[0], "data", None) == "match_pattern":
                        top += 1
    return top > 0 and top == len(syn.nodes("match_pattern"))


def match_only_projection(syn: Syntax) -> tuple[str, ...] | None:
    """The projected variables when the query is nothing but SELECT vars WHERE { MATCH {...} }.

    Such a query needs no SPARQL evaluation: its rows are the MATCH's solutions,
    projected, which the runtime produces directly.
    """
    body = syn.tree.children[1]
    query = next(c for c in body.children if isinstance(c, Tree) and c.data == "select_query")  \
        if any(isinstance(c, Tree) and c.data == "select_query" for c in body.children) else None
    if query is None or len(syn.nodes("match_pattern")) != 1:
        return None
    values = body.children[-1]
    if isinstance(values, Tree) and values.children:
        return None
    select, *rest = [c for c in query.children if isinstance(c, Tree)]
    where = next(c for c in rest if c.data == "where_clause")
    modifier = next((c for c in rest if c.data == "solution_modifier"), None)
    if modifier is not None and modifier.children:
        return None
    group = where.children[-1]
    sub = group.children[0]
    if not (isinstance(sub, Tree) and sub.data == "group_graph_pattern_sub" and len(sub.children) == 1):
        return None
    only = sub.children[0]
    if not (isinstance(only, Tree) and only.data == "group_graph_pattern_sub_other"
            and len(only.children) == 1 and only.children[0].children[0].data == "match_pattern"):
        return None
    names: list[str] = []
    for c in select.children:
        if isinstance(c, Token) and c.type == "ASTERIX":
            return ()
        if isinstance(c, Token) and str(c).upper() in ("DISTINCT", "REDUCED"):
            return None
        if isinstance(c, Tree) and c.data == "select_clause_var_or_expression":
            var = c.children[0]
            if not (isinstance(var, Tree) and var.data == "var"):
                return None
            names.append(str(var.children[0])[1:])
    return tuple(names)
