"""LARS's FILTER expressions (001 Sec. 3's fragment: comparisons, &&, ||, !, bound, + - * /):
the fragment's tuples (``("cmp", op, a, b)``, ``("var", name)``, ...), read from the one
expression tree (rsep.algebra.expression), and their evaluation.

The LARS translation reads values its own way, on purpose, not as rsep.sparql.filters'
SPARQL-exact compiler does: every numeric literal (doubles and floats too) is an exact
Decimal, plain and xsd:string literals compare as strings, and there is no fallback to
pyoxigraph: the translated program is evaluated without a SPARQL engine, and the
agreement tests (tests/lars/test_lars_agreement.py) compare it with the engines on data
where the two readings agree. The tree is rebuilt as SPARQL text by :func:`show_expr`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

import pyoxigraph as ox

from rsep.algebra.expression import (
    XSD,
    Aggregate,
    And,
    Arithmetic,
    Bound,
    Compare,
    Constant,
    Exists,
    Expression,
    FunctionCall,
    In,
    Iri,
    Literal,
    Not,
    Or,
    PrefixedName,
    UnaryMinus,
    UnaryPlus,
    Variable,
    signed_literal,
)
from rsep.lars.core import LarsError

NUMERIC = {XSD + n for n in ("integer", "decimal", "double", "float", "int", "long", "short",
                             "byte", "nonNegativeInteger", "positiveInteger",
                             "negativeInteger", "nonPositiveInteger", "unsignedInt",
                             "unsignedLong", "unsignedShort", "unsignedByte")}


def literal(lex: str, datatype: str | None = None, lang: str | None = None) -> str:
    if lang:
        return str(ox.Literal(lex, language=lang))
    if datatype:
        return str(ox.Literal(lex, datatype=ox.NamedNode(datatype)))
    return str(ox.Literal(lex))


_TYPED = re.compile(r'^"(.*)"\^\^<([^>]*)>$', re.S)


class _Err(Exception):
    """A SPARQL expression error (unbound variable, incomparable values)."""


def value(term: Any) -> Any:
    """A term's comparable value: numbers for numeric literals, ("str", s) for strings."""
    if term is None or term == "null":
        raise _Err("unbound")
    if isinstance(term, (int, float, Decimal)):
        return term
    m = _TYPED.match(term)
    if m and m.group(2) in NUMERIC:
        try:
            return Decimal(m.group(1))
        except InvalidOperation as e:
            raise _Err("bad number") from e
    if m and m.group(2) == XSD + "string":
        return ("str", m.group(1))
    if m and m.group(2) == XSD + "boolean":
        return ("bool", m.group(1) in ("true", "1"))
    if term.startswith('"') and term.endswith('"'):
        return ("str", term[1:-1])
    return ("term", term)


def _cmp(op: str, a: Any, b: Any) -> bool:
    x, y = value(a), value(b)
    num = isinstance(x, Decimal) and isinstance(y, Decimal)
    if op in ("=", "!="):
        if num or (isinstance(x, tuple) and isinstance(y, tuple) and x[0] == y[0]):
            eq = x == y
        elif (isinstance(x, tuple) and x[0] == "term") or (isinstance(y, tuple) and y[0] == "term"):
            eq = False  # an IRI or blank node and a literal: not equal (RDFterm-equal)
        else:
            raise _Err("incomparable")
        return eq if op == "=" else not eq
    if not (num or (isinstance(x, tuple) and isinstance(y, tuple) and x[0] == y[0] == "str")):
        raise _Err("incomparable")
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


def evaluate(e: tuple, b: dict[str, Any]) -> Any:
    """Evaluate a filter expression under a binding (var name -> term; null: unbound)."""
    k = e[0]
    if k == "var":
        v = b.get(e[1])
        if v is None or v == "null":
            raise _Err("unbound")
        return v
    if k == "const":
        return e[1]
    if k == "cmp":
        return _cmp(e[1], evaluate(e[2], b), evaluate(e[3], b))
    if k == "bound":
        v = b.get(e[1])
        return v is not None and v != "null"
    if k == "not":
        return not ebv(evaluate(e[1], b))
    if k in ("and", "or"):
        try:
            x = ebv(evaluate(e[1], b))
        except _Err:
            x = None
        try:
            y = ebv(evaluate(e[2], b))
        except _Err:
            y = None
        if k == "and":
            if x is False or y is False:
                return False
            if x is None or y is None:
                raise _Err("error in &&")
            return True
        if x is True or y is True:
            return True
        if x is None or y is None:
            raise _Err("error in ||")
        return False
    if k == "arith":
        x, y = value(evaluate(e[2], b)), value(evaluate(e[3], b))
        if not (isinstance(x, Decimal) and isinstance(y, Decimal)):
            raise _Err("not numbers")
        r = {"+": x + y, "-": x - y, "*": x * y}.get(e[1])
        if r is None:
            if y == 0:
                raise _Err("division by zero")
            r = x / y
        return r
    raise _Err(f"unsupported {k}")


def ebv(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    x = value(v)
    if isinstance(x, Decimal):
        return x != 0
    if x[0] == "bool":
        return x[1]
    if x[0] == "str":
        return x[1] != ""
    raise _Err("no effective boolean value")


def holds(e: tuple, b: dict[str, Any]) -> bool:
    try:
        return ebv(evaluate(e, b))
    except _Err:
        return False


def expr_vars(e: tuple) -> set[str]:
    if e[0] in ("var", "bound"):
        return {e[1]}
    if e[0] == "const":
        return set()
    return set().union(*(expr_vars(x) for x in e[1:] if isinstance(x, tuple)))


def show_expr(e: tuple, sparql: bool = False) -> str:
    k = e[0]
    if k == "var":
        return f"?{e[1]}" if sparql else var_name(e[1])
    if k == "const":
        return short(e[1]) if not sparql else e[1]
    if k == "bound":
        return f"bound(?{e[1]})" if sparql else f"bound({var_name(e[1])})"
    if k == "not":
        return f"!({show_expr(e[1], sparql)})"
    if k in ("and", "or"):
        op = "&&" if k == "and" else "||"
        return f"({show_expr(e[1], sparql)} {op} {show_expr(e[2], sparql)})"
    if k in ("cmp", "arith"):
        return f"{show_expr(e[2], sparql)} {e[1]} {show_expr(e[3], sparql)}"
    return str(e)


def var_name(v: str) -> str:
    return v[:1].upper() + v[1:]


def short(term: Any) -> str:
    """Readable constants: integers bare, IRIs by their local name in quotes (as 001)."""
    if not isinstance(term, str):
        return str(term)
    m = _TYPED.match(term)
    if m and m.group(2) in NUMERIC:
        return m.group(1)
    if term.startswith("<") and term.endswith(">"):
        local = re.split(r"[/#]", term[1:-1].rstrip("/#"))[-1]
        return f'"{local}"' if local else term
    return term



def from_tree(e: Expression, constant: Callable[[Constant], str],
              fail: Callable[[str], LarsError], uses: set[str]) -> tuple:
    """A FILTER's tree (rsep.algebra.expression, as rsep.lang reads every dialect's) as the
    fragment's tuples. ``constant``: a constant's N-Triples form; ``fail``: the error for
    what is outside the fragment; ``uses`` records a NOT EXISTS (for the message)."""
    if isinstance(e, (Or, And)):
        return ("or" if isinstance(e, Or) else "and", from_tree(e.left, constant, fail, uses),
                from_tree(e.right, constant, fail, uses))
    if isinstance(e, (Compare, Arithmetic)):
        return ("cmp" if isinstance(e, Compare) else "arith", e.op,
                from_tree(e.left, constant, fail, uses), from_tree(e.right, constant, fail, uses))
    if isinstance(e, Not):
        return ("not", from_tree(e.arg, constant, fail, uses))
    if isinstance(e, UnaryMinus):
        number = signed_literal(e)  # -3: the number, as written
        if number is not None:
            return ("const", constant(number))
        return ("arith", "-", ("const", literal("0", datatype=XSD + "integer")),
                from_tree(e.arg, constant, fail, uses))
    if isinstance(e, UnaryPlus):
        return from_tree(e.arg, constant, fail, uses)
    if isinstance(e, Variable):
        return ("var", e.name)
    if isinstance(e, Bound):
        return ("bound", e.var.name)
    if isinstance(e, (Iri, PrefixedName, Literal)):
        return ("const", constant(e))
    if isinstance(e, In):
        raise fail("IN / NOT IN")
    if isinstance(e, Exists):
        if e.negated:
            uses.add("not_exists")
        raise fail("FILTER NOT EXISTS" if e.negated else "FILTER EXISTS")
    if isinstance(e, FunctionCall):
        raise fail(f"the built-in {e.function}" if isinstance(e.function, str)
                   else "a function call")
    if isinstance(e, Aggregate):
        raise fail(f"the aggregate {e.name}")
    raise fail(f"the expression {type(e).__name__}")
