"""A FILTER of numeric comparisons in the form the native engines compute it.

The native CEP engines (native/src/chain.rs, epsparql.rs, rsepql.rs) compare numbers on
decoded values with filters.py's exact arithmetic; their planners (rsep/events/native.py,
rsep/epsparql/native.py, rsep/spaseq/native.py) hand them each comparison as postfix tokens
(native/src/py.rs's ``epsparql_num``):

* ``v<n>``: variable number ``n`` (what a variable stands for is the caller's: a BEP's
  variable, a GPM's bound one, EP-SPARQL's getDURATION() as ``d``);
* ``c<literal>``: an xsd:integer, xsd:decimal or xsd:double literal in N-Triples syntax;
* ``+ - *``: the two operands before it.

A number filters.py leaves to pyoxigraph (:class:`Fallback`) is refused here too, so the
native engines decide no value differently from today's path; so is every other operator
(a division's typing is pyoxigraph's).
"""

from __future__ import annotations

from collections.abc import Callable

from rsep.algebra.expression import (
    Arithmetic,
    Compare,
    Expression,
    Iri,
    Variable,
    conjuncts,
    signed_literal,
)
from rsep.sparql.filters import Fallback, literal_value

Operand = tuple[str, ...]
# (left, operator, right)
Cmp = tuple[Operand, str, Operand]
# a variable's tokens, or why the native path does not take it there
VariableTokens = Callable[[Variable], Operand | str]

OPS = ("<", "<=", ">", ">=", "=", "!=")
ARITH = ("+", "-", "*")
XSD = "http://www.w3.org/2001/XMLSchema#"
NUMBERS = tuple(XSD + t for t in ("integer", "decimal", "double"))


def numeric_conjunction(e: Expression, variable: VariableTokens, *, not_comparison: str,
                        other_term: str, constants: bool = True) -> list[Cmp] | str:
    """``e`` as a conjunction of comparisons of numeric expressions, or why not:
    ``not_comparison`` for a conjunct that is no comparison, ``other_term`` for an operand
    that is neither a variable nor a number, ``variable``'s text for a variable it refuses.
    ``constants=False`` refuses a comparison that reads no variable."""
    out: list[Cmp] = []
    for c in conjuncts(e):
        if not isinstance(c, Compare) or c.op not in OPS:
            return not_comparison
        left = numeric_operand(c.left, variable, other_term)
        if isinstance(left, str):
            return left
        right = numeric_operand(c.right, variable, other_term)
        if isinstance(right, str):
            return right
        if not constants and not any(tok.startswith("v") for tok in (*left, *right)):
            return "a comparison of two constants"
        out.append((left, c.op, right))
    return out


def numeric_operand(e: Expression, variable: VariableTokens, other_term: str) -> Operand | str:
    """A numeric expression in postfix tokens, or why not."""
    if isinstance(e, Variable):
        return variable(e)
    if isinstance(e, Arithmetic):
        if e.op not in ARITH:
            return f"the operator {e.op} (the native path takes + - *)"
        left = numeric_operand(e.left, variable, other_term)
        if isinstance(left, str):
            return left
        right = numeric_operand(e.right, variable, other_term)
        if isinstance(right, str):
            return right
        return (*left, *right, e.op)
    lit = signed_literal(e)
    if lit is None or lit.language is not None or not isinstance(lit.datatype, Iri) \
            or lit.datatype.value not in NUMBERS:
        return other_term
    try:
        kind, _ = literal_value(lit.lexical, lit.datatype.value)
    except Fallback:
        return f"the number {lit.lexical} (filters.py leaves it to pyoxigraph)"
    if kind not in ("n", "d", "f"):
        return f"the number {lit.lexical}"
    # (N-Triples: the lexical form of a number needs no escape)
    return (f'c"{lit.lexical}"^^<{lit.datatype.value}>',)
