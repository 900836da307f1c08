"""Where a query breaks a SPARQL 1.1 scoping, grouping or VALUES rule.

pyoxigraph checks these rules (SPARQL 1.1, 18.2.1 and 18.2.4.1) while it parses,
but reports a broken one at the end of the enclosing pattern or query, at times
without saying which rule. Once pyoxigraph has rejected a query, ``locate`` looks
for the offending variable or row in the parse tree so that the error can point
at it. It only points: it never rejects a query by itself, and where it is unsure
it finds nothing (pyoxigraph's own message is used then).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

from lark import Token, Tree

Finding = tuple[Tree | Token, str]

# Patterns whose variables are in scope after them: GRAPH-like ones bind their name too.
_NAMED = ("graph_graph_pattern", "service_graph_pattern", "window_graph_pattern",
          "stream_graph_pattern")


def _var_tokens(node: Tree | Token) -> Iterator[Token]:
    if isinstance(node, Token):
        if node.type in ("VAR1", "VAR2"):
            yield node
        return
    yield from node.scan_values(lambda v: isinstance(v, Token) and v.type in ("VAR1", "VAR2"))


def _name(node: Tree | Token) -> str:
    tok = next(_var_tokens(node))
    return str(tok)[1:]


def _child(node: Tree, name: str) -> Tree | None:
    return next((c for c in node.children if isinstance(c, Tree) and c.data == name), None)


def _the(node: Tree, name: str) -> Tree:
    """The child the grammar requires of ``node`` (what a parse tree's type cannot say)."""
    return cast(Tree, _child(node, name))


def _children(node: Tree, name: str) -> list[Tree]:
    return [c for c in node.children if isinstance(c, Tree) and c.data == name]


def group_scope(ggp: Tree) -> set[str]:
    """The in-scope variables of a ``{ ... }`` group (18.2.1)."""
    sub = _child(ggp, "sub_select")
    if sub is not None:
        return projected(sub)
    sub = _child(ggp, "group_graph_pattern_sub")
    out: set[str] = set()
    for element in _elements(sub) if sub is not None else []:
        out |= _scope(element)
    return out


def projected(select: Tree) -> set[str]:
    clause = _child(select, "select_clause")
    items = _children(clause, "select_clause_var_or_expression") if clause is not None else []
    if not items:  # SELECT *
        where = _child(select, "where_clause")
        ggp = _child(where, "group_graph_pattern") if where is not None else None
        return group_scope(ggp) if ggp is not None else set()
    return {_name(item.children[0] if item.children[0].data == "var" else
                  _the(item.children[0], "var")) for item in items}


def _elements(sub: Tree) -> Iterator[Tree]:
    """The triples blocks and other patterns of a group, in order."""
    for c in sub.children:
        if not isinstance(c, Tree):
            continue
        if c.data == "triples_block":
            yield c
        elif c.data == "group_graph_pattern_sub_other":
            for cc in c.children:
                if isinstance(cc, Tree) and cc.data == "graph_pattern_not_triples":
                    yield cc.children[0]
                elif isinstance(cc, Tree) and cc.data == "triples_block":
                    yield cc


def _scope(p: Tree) -> set[str]:
    if p.data == "triples_block":
        return {str(t)[1:] for t in _var_tokens(p)}
    if p.data == "group_or_union_graph_pattern":
        return set().union(*(group_scope(g) for g in _children(p, "group_graph_pattern")))
    if p.data == "optional_graph_pattern":
        return group_scope(_the(p, "group_graph_pattern"))
    if p.data in _NAMED:
        target = _child(p, "var_or_iri")
        names = {_name(target)} if target is not None and _child(target, "var") else set()
        return names | group_scope(_the(p, "group_graph_pattern"))
    if p.data == "bind":
        return {_name(_the(p, "var"))}
    if p.data == "inline_data":
        block = _the(p, "data_block")
        return {_name(v) for v in _children(block.children[0], "var")}
    return set()  # MINUS, FILTER, and what this module does not know: nothing


# ------------------------------------------------------------------ checks


def _check_binds(sub: Tree, out: list[Finding]) -> None:
    seen: set[str] = set()
    for element in _elements(sub):
        if element.data == "bind":
            var = _child(element, "var")
            if var is not None and _name(var) in seen:
                n = _name(var)
                out.append((var, f"BIND ... AS ?{n}: ?{n} is already bound earlier in the group"))
        seen |= _scope(element)


def _is_aggregate(node: Tree) -> bool:
    if node.data == "aggregate":
        return True
    if node.data == "iri_or_function" and len(node.children) > 1:
        return any(isinstance(c, Token) and c.type == "DISTINCT" for c in node.children[1].children)
    return False


def _has_aggregate(node: Tree) -> bool:
    return any(_is_aggregate(n) for n in node.iter_subtrees())


def _free_vars(node: Tree | Token) -> Iterator[Token]:
    """Variables of an expression outside aggregates (and outside EXISTS patterns)."""
    if isinstance(node, Token):
        if node.type in ("VAR1", "VAR2"):
            yield node
        return
    if _is_aggregate(node) or node.data in ("exists_func", "not_exists_func"):
        return
    for c in node.children:
        yield from _free_vars(c)


def _bare_var(expr: Tree | None) -> str | None:
    """The variable an expression is made of alone, if it is."""
    node: Tree | Token | None = expr
    while isinstance(node, Tree) and len(node.children) == 1 and node.data != "var":
        node = node.children[0]
    return _name(node) if isinstance(node, Tree) and node.data == "var" else None


def _check_select(q: Tree, out: list[Finding]) -> None:
    clause = _child(q, "select_clause")
    if clause is None:
        return
    modifier = _child(q, "solution_modifier")
    group = _child(modifier, "group_clause") if modifier is not None else None
    items = _children(clause, "select_clause_var_or_expression")
    if not items:
        star = next((c for c in clause.children if isinstance(c, Token) and c.type == "ASTERIX"), None)
        if group is not None and star is not None:
            out.append((star, "SELECT * is not allowed with GROUP BY"))
        return
    where = _child(q, "where_clause")
    ggp = _child(where, "group_graph_pattern") if where is not None else None
    bound = group_scope(ggp) if ggp is not None else set()
    grouped = group is not None or _has_aggregate(clause) or (
        modifier is not None and _has_aggregate(modifier))
    keys: set[str] = set()
    if group is not None:
        for cond in _children(group, "group_condition"):
            inner = cond.children[0]
            if isinstance(inner, Tree) and inner.data == "var":
                keys.add(_name(inner))
            elif isinstance(inner, Tree) and inner.data == "group_condition_expression_as_var":
                if (v := _child(inner, "var")) is not None:  # (expr AS ?v)
                    keys.add(_name(v))
                elif (bare := _bare_var(_child(inner, "expression"))) is not None:  # (?v)
                    keys.add(bare)
            # grouping by another expression (STR(?v), (?a + ?b)) groups no variable
    names: set[str] = set()
    for item in items:
        inner = item.children[0]
        if inner.data == "var":
            n = _name(inner)
            if n in names:
                out.append((inner, f"?{n} is projected twice"))
            elif grouped and n not in keys:
                out.append((inner, f"?{n} is neither grouped (GROUP BY) nor aggregated"))
            names.add(n)
            continue
        var = _the(inner, "var")
        n = _name(var)
        if grouped:
            expr = _child(inner, "expression")
            free = [t for t in _free_vars(expr) if str(t)[1:] not in keys | names] if expr else []
            if free:
                f = str(free[0])[1:]
                out.append((free[0], f"?{f} is neither grouped (GROUP BY) nor aggregated"))
        if n in names:
            out.append((var, f"?{n} is projected twice"))
        elif n in bound:
            out.append((var, f"(... AS ?{n}): ?{n} is already bound in the WHERE clause"))
        names.add(n)


def _check_values(block: Tree, out: list[Finding]) -> None:
    n = len(_children(block, "var"))
    for row in _children(block, "data_block_value_group"):
        k = len(_children(row, "data_block_value"))
        if k != n:
            out.append((row, f"this VALUES row has {k} value{'s' * (k != 1)} for "
                             f"{n} variable{'s' * (n != 1)}"))


def locate(tree: Tree) -> list[Finding]:
    """The broken rules found, each with the node to point at."""
    out: list[Finding] = []
    for node in tree.iter_subtrees_topdown():
        if node.data == "group_graph_pattern_sub":
            _check_binds(node, out)
        elif node.data in ("select_query", "sub_select"):
            _check_select(node, out)
        elif node.data == "inline_data_full":
            _check_values(node, out)
    return out
