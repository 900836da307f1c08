"""The FILTER compiler: SPARQL FILTER expressions (rsep.algebra.expression's trees, as every
dialect's algebra holds them) compiled to Python functions, one for every FILTER that rsep
evaluates per row: rsep.sparql.matcher's GPMs and BEPs, and EP-SPARQL's FILTERs
(rsep.epsparql.expr).

Comparisons, ``&&``, ``||``, ``!``, ``BOUND``, effective boolean values and ``+ - *``
over variables and constants are compiled; anything else (functions, division, ...) is
refused with :class:`NotCompiled` and the caller asks pyoxigraph. Exactness against
pyoxigraph is kept by refusing what is not mirrored exactly: a FILTER that meets a value
it does not handle (an xsd:float, a date, a language string, an ill-typed literal, a
result outside xsd:integer's 64 bits or xsd:decimal's 18 fractional digits ...) raises
:class:`Fallback`, and the caller asks pyoxigraph for that row. Variables are read with
a reader the caller chooses (pyoxigraph terms: :func:`value_of`; N-Triples strings:
:func:`nt_value`); ``given`` variables hold operands the caller made (EP-SPARQL's time
functions). Proven equal to pyoxigraph by tests/spaseq/test_spaseq_compiled.py and
tests/epsparql/test_epsparql_expr.py.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from decimal import Context, Decimal, InvalidOperation
from typing import Any

import pyoxigraph as ox

from rsep.algebra.expression import (
    And,
    Arithmetic,
    Bound,
    Compare,
    Expression,
    Iri,
    Literal,
    Not,
    Or,
    PrefixedName,
    UnaryMinus,
    UnaryPlus,
    Variable,
)

XSD = "http://www.w3.org/2001/XMLSchema#"
STRING = ox.NamedNode(XSD + "string")
INTEGER = ox.NamedNode(XSD + "integer")
DECIMAL = ox.NamedNode(XSD + "decimal")
DOUBLE = ox.NamedNode(XSD + "double")
LANG = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#langString")
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
_I64 = 2 ** 63
_DEC_RE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)\Z")
DEC_CANON = re.compile(r"-?(0|[1-9][0-9]*)\.[0-9]*[1-9]\Z")
_DBL_RE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")

# Oxigraph reads derived integer types as xsd:integer (no range check: "300"^^xsd:byte is 300)
_INTEGERS = frozenset(XSD + t for t in (
    "integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
    "negativeInteger", "nonPositiveInteger", "unsignedLong", "unsignedInt", "unsignedShort",
    "unsignedByte"))
_DURATIONS = frozenset((XSD + "duration", XSD + "dayTimeDuration"))
# a day-time duration (no years or months); what else Oxigraph reads is left to it
_DUR_RE = re.compile(r"(-?)P(?:([0-9]+)D)?(?:T(?=[0-9])(?:([0-9]+)H)?(?:([0-9]+)M)?"
                     r"(?:([0-9]+(?:\.[0-9]+)?)S)?)?\Z")
# Oxigraph's xsd:decimal has 18 fractional digits; results are checked below 10^17
_DEC_MAX = Decimal(10) ** 17
_EXACT = Context(prec=100)  # exact + - * of two such decimals (Python's default rounds at 28)

# A FILTER operand (see _value): ("n", int) | ("d", Decimal) | ("f", float) | ("s", str) |
# ("i", NamedNode) | ("u", a day-time duration in ms: int or Decimal). The value's type is
# the one its kind names, which no type can say.
Operand = tuple[str, Any]


def lexical_int(v: str) -> bool:
    """Whether v is in xsd:integer's lexical space, ``[+-]?[0-9]+``."""
    d = v[1:] if v[:1] in ("+", "-") else v
    return d.isascii() and d.isdigit()


def canonical_int(v: str) -> bool:
    """Whether v is an xsd:integer's canonical lexical form, ``(0|-?[1-9][0-9]*)``."""
    d = v[1:] if v[:1] == "-" else v
    return d.isascii() and d.isdigit() and (d[0] != "0" or v == "0")


class Fallback(Exception):
    """The compiled form cannot decide this row exactly: ask pyoxigraph."""


class NotCompiled(Exception):
    """The pattern or expression is outside the compiled subset."""


# ---------------------------------------------------------------- the compiler


# a compiled expression: the row -> True, False or _ERROR (booleans), or an Operand
Fn = Callable[[dict], Any]
_BOOLEANS = (Or, And, Not, Compare, Bound)


class _Compiler:
    """The tree to functions. Booleans are ``&&``, ``||``, ``!``, comparisons, ``BOUND`` and
    effective boolean values; values are variables, constants and ``+ - *`` (unary ones too)
    of values. A boolean is never an operand (``!?a < 3``), which is refused."""

    def __init__(self, prefixes: dict[str, str], canon: Callable[[object], object],
                 read: Callable[[Any], Operand] | None, given: frozenset[str]) -> None:
        self.prefixes = prefixes
        self.canon = canon
        self.read = _value if read is None else read  # a variable's value as an Operand
        self.given = given  # variables whose values are Operands already

    def boolean(self, e: Expression) -> Fn:
        if isinstance(e, Or):
            return _or(self.boolean(e.left), self.boolean(e.right))
        if isinstance(e, And):
            return _and(self.boolean(e.left), self.boolean(e.right))
        if isinstance(e, Not):
            return _not(self.boolean(e.arg))
        if isinstance(e, Compare):
            return _compare(e.op, self.value(e.left), self.value(e.right))
        if isinstance(e, Bound):
            name = e.var.name
            return lambda mu: mu.get(name) is not None
        return _ebv(self.value(e))

    def value(self, e: Expression) -> Fn:
        """A variable, a constant or arithmetic, as an Operand (or _ERROR: unbound)."""
        if isinstance(e, Arithmetic):
            if e.op == "/":
                raise NotCompiled("division")
            return _arith(e.op, self.value(e.left), self.value(e.right))
        if isinstance(e, UnaryMinus):
            inner = self.value(e.arg)
            return lambda mu: _neg(inner(mu))
        if isinstance(e, UnaryPlus):
            inner = self.value(e.arg)
            return lambda mu: _pos(inner(mu))
        if isinstance(e, Variable):
            return self.variable(e.name)
        if isinstance(e, (Iri, PrefixedName, Literal)):
            val = _value(self.term(e))
            return lambda mu: val
        if isinstance(e, _BOOLEANS):
            raise NotCompiled("a boolean operand")
        raise NotCompiled(type(e).__name__)

    def variable(self, name: str) -> Fn:
        if name in self.given:
            return lambda mu: mu.get(name, _ERROR)
        read = self.read

        def var(mu: dict) -> object:
            v = mu.get(name)
            if v is None:
                return _ERROR
            return read(v)
        return var

    def term(self, e: Iri | PrefixedName | Literal) -> object:
        """A constant as a pyoxigraph term (typed literals as ``canon`` gives them)."""
        if not isinstance(e, Literal):
            return self.iri(e)
        if e.language is not None:
            return ox.Literal(e.lexical, language=e.language)
        if e.datatype is None:
            return ox.Literal(e.lexical)
        dt = self.iri(e.datatype)
        if dt == _BOOL:
            return ox.Literal(e.lexical, datatype=dt)
        return self.canon(ox.Literal(e.lexical, datatype=dt))

    def iri(self, e: Iri | PrefixedName) -> ox.NamedNode:
        if isinstance(e, Iri):
            if ":" not in e.value:
                raise NotCompiled("relative IRI")
            iri = e.value
        else:
            if e.prefix not in self.prefixes or "\\" in e.local or "%" in e.local:
                raise NotCompiled("prefixed name")
            iri = self.prefixes[e.prefix] + e.local
        try:
            return ox.NamedNode(iri)
        except ValueError:
            raise NotCompiled("an IRI pyoxigraph does not take") from None


def compile_expression(e: Expression, prefixes: dict[str, str],
                       canon: Callable[[object], object],
                       read: Callable[[Any], Operand] | None = None,
                       given: frozenset[str] = frozenset()) -> Callable[[dict], object]:
    """An expression's effective boolean value as a function of the row: True, False or an
    error (neither). ``prefixes``: the prologue's (:func:`prefixes_of`); ``canon``: a typed
    literal as the store returns it; ``read``: a variable's value as an Operand (default
    pyoxigraph terms); ``given``: variables whose values are Operands already. Raises
    NotCompiled outside the compiled subset, Fallback for a constant it does not mirror."""
    return _Compiler(prefixes, canon, read, given).boolean(e)


# ---------------------------------------------------------------- values (SPARQL operators)


class _Err:
    __slots__ = ()


_ERROR = _Err()  # a SPARQL expression error (the FILTER is false), distinct from Fallback
_BOOL = ox.NamedNode(XSD + "boolean")
_COMPARISONS = ("=", "!=", "<=", ">=", "<", ">")
_OPERATORS = (*_COMPARISONS, "+", "-", "*", "/")
_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt,
    "<=": operator.le, ">=": operator.ge}
_INT_OP: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul}
_DEC_OP: dict[str, Callable[[Any, Any], Any]] = {
    "+": _EXACT.add, "-": _EXACT.subtract, "*": _EXACT.multiply}


_VALUES: dict[object, Operand] = {}


def _value(t: object) -> Operand:
    """A term as the operand of a comparison: ("n", number) | ("s", str) | ("i", NamedNode)."""
    got = _VALUES.get(t)
    if got is not None:
        return got
    got = value_of(t)
    if len(_VALUES) > 100_000:  # distinct values of a long stream: stay bounded
        _VALUES.clear()
    _VALUES[t] = got
    return got


def value_of(t: object) -> Operand:
    """A pyoxigraph term as an Operand; Fallback for what is not mirrored."""
    if type(t) is ox.NamedNode:
        return ("i", t)
    if type(t) is ox.Literal:
        return literal_value(t.value, t.datatype.value)
    raise Fallback(repr(t))


def literal_value(v: str, dt: str) -> Operand:
    """The literal ``v^^dt`` as an Operand, read as Oxigraph reads it; Fallback otherwise."""
    # integers first: most of a stream's literals, most of them new
    if dt in _INTEGERS and lexical_int(v):
        n = int(v)
        if -_I64 <= n < _I64:
            return ("n", n)
    elif dt == XSD + "string":
        return ("s", v)
    elif dt == XSD + "decimal" and _DEC_RE.match(v):
        return _decimal(Decimal(v))
    elif dt == XSD + "double" and _DBL_RE.match(v):
        return ("f", float(v))
    elif dt in _DURATIONS and (m := _DUR_RE.match(v)) and any(m.groups()[1:]):
        sign, d, h, mi, sec = m.groups()
        ms = ((int(d or 0) * 24 + int(h or 0)) * 60 + int(mi or 0)) * 60_000
        exact = Decimal(sec or 0)
        if exact.as_tuple().exponent >= -18:  # type: ignore[operator]
            ms_sec = exact * 1000
            total = ms + (int(ms_sec) if ms_sec == ms_sec.to_integral_value() else ms_sec)
            if total < _DEC_MAX:
                return ("u", -total if sign else total)
    raise Fallback(f"{v!r}^^<{dt}>")


_NT: dict[str, Operand] = {}


def nt_value(t: str) -> Operand:
    """An N-Triples term (a string, as EP-SPARQL holds values) as an Operand."""
    got = _NT.get(t)
    if got is not None:
        return got
    if t[:1] == '"':
        if t[-1:] == '"':
            lex, dt = t[1:-1], XSD + "string"
        elif t[-1:] == ">" and '"^^<' in t:
            lex, dt = t[1:-1].rsplit('"^^<', 1)
        else:
            raise Fallback(t)  # a language string
        if "\\" in lex:
            raise Fallback(t)  # escapes: rare, read by pyoxigraph
        got = literal_value(lex, dt)
    elif t[:1] == "<" and t[-1:] == ">" and "\\" not in t:
        got = ("i", ox.NamedNode(t[1:-1]))
    else:
        raise Fallback(t)  # a blank node
    if len(_NT) > 100_000:
        _NT.clear()
    _NT[t] = got
    return got


def _decimal(v: Decimal) -> Operand:
    """An xsd:decimal Oxigraph holds exactly: below 10^17, at most 18 fractional digits."""
    if not abs(v) < _DEC_MAX:
        raise Fallback("decimal range")
    if v.as_tuple().exponent < -18 and v.normalize(_EXACT).as_tuple().exponent < -18:  # type: ignore[operator]
        raise Fallback("decimal precision")
    return ("d", v)


def _num(a: Operand) -> Operand:
    if a[0] not in ("n", "d", "f"):
        raise Fallback("non-numeric operand")
    return a


def _promote(a: Operand, b: Operand) -> tuple[Any, Any, str]:
    """The two numbers in one type (the kind returned)."""
    ka, kb = a[0], b[0]
    if ka == kb:
        return a[1], b[1], ka
    if "f" in (ka, kb):
        return float(a[1]), float(b[1]), "f"
    return Decimal(a[1]), Decimal(b[1]), "d"


def _check(kind: str, v: Any) -> Operand:
    if kind == "n" and not -_I64 <= v < _I64:
        raise Fallback("integer overflow")
    if kind == "d":
        return _decimal(v)
    return (kind, v)


def _arith(op: str, left: Callable, right: Callable) -> Callable[[dict], object]:
    fn, dec, mul = _INT_OP[op], _DEC_OP[op], op == "*"

    def f(mu: dict) -> object:
        a, b = left(mu), right(mu)
        if a is _ERROR or b is _ERROR:
            return _ERROR
        if a[0] == "n" and b[0] == "n":
            r = fn(a[1], b[1])
            if -_I64 <= r < _I64:
                return ("n", r)
            raise Fallback("integer overflow")
        ka, kb = _num(a)[0], _num(b)[0]
        if ka != "f" and kb != "f":  # an int and a Decimal: _EXACT reads the int exactly
            try:
                r = dec(a[1], b[1])
            except InvalidOperation:
                raise Fallback("decimal arithmetic") from None
            if mul:
                return _decimal(r)
            if not abs(r) < _DEC_MAX:  # a sum keeps its operands' fractional digits
                raise Fallback("decimal range")
            return ("d", r)
        x, y, k = _promote(a, b)
        return (k, fn(x, y))
    return f


def _neg(a: Any) -> object:
    """``-a``: ``a`` an Operand, or _ERROR (what a FILTER expression's function returns)."""
    if a is _ERROR:
        return _ERROR
    k, v = _num(a)
    return _check(k, -v)


def _pos(a: Any) -> object:
    """``+a``: a number is itself; anything else is left to pyoxigraph (``+"abc"`` is an
    error there, not the string)."""
    if a is _ERROR:
        return _ERROR
    return _num(a)


def _compare(op: str, left: Callable, right: Callable) -> Callable[[dict], object]:
    fn = _CMP[op]
    eq = op in ("=", "!=")

    def f(mu: dict) -> object:
        a, b = left(mu), right(mu)
        if a is _ERROR or b is _ERROR:
            return _ERROR
        ka, kb = a[0], b[0]
        if ka == kb and ka != "i":  # the same type: Python orders it as SPARQL does
            return fn(a[1], b[1])
        if ka in ("n", "d") and kb in ("n", "d"):  # Python compares int and Decimal exactly
            return fn(a[1], b[1])
        if ka in ("n", "d", "f") and kb in ("n", "d", "f"):
            x, y, _ = _promote(a, b)
            return fn(x, y)
        if ka == "i" or kb == "i":
            if not eq:
                raise Fallback("an IRI ordered")
            # an IRI is never equal to a literal (RDFterm-equal)
            return fn(ka == kb and a[1] == b[1], True)
        raise Fallback("mixed operand types")
    return f


def _ebv(inner: Callable) -> Callable[[dict], object]:
    """An operand's effective boolean value (SPARQL 17.2.2)."""
    def f(mu: dict) -> object:
        a = inner(mu)
        if a is _ERROR:
            return _ERROR
        k, v = a
        if k == "s":
            return v != ""
        if k == "n" or k == "d":
            return v != 0
        if k == "f":
            return v == v and v != 0  # NaN is false
        raise Fallback("the EBV of an IRI or a duration")
    return f


def _and(left: Callable, right: Callable) -> Callable[[dict], object]:
    def f(mu: dict) -> object:
        a = left(mu)
        if a is False:
            return False
        b = right(mu)
        if b is False:
            return False
        return _ERROR if a is _ERROR or b is _ERROR else True
    return f


def _or(left: Callable, right: Callable) -> Callable[[dict], object]:
    def f(mu: dict) -> object:
        a = left(mu)
        if a is True:
            return True
        b = right(mu)
        if b is True:
            return True
        return _ERROR if a is _ERROR or b is _ERROR else False
    return f


def _not(inner: Callable) -> Callable[[dict], object]:
    def f(mu: dict) -> object:
        a = inner(mu)
        return a if a is _ERROR else not a
    return f


def prefixes_of(prologue: str) -> dict[str, str]:
    # BASE is harmless: relative IRIs are refused, in the pattern and in PREFIX.
    out = {m.group(1) or "": m.group(2)
           for m in re.finditer(r"PREFIX\s+([A-Za-z][\w.-]*)?:\s*<([^>]*)>", prologue, re.I)}
    if any(":" not in iri for iri in out.values()):
        raise NotCompiled("relative PREFIX IRI")
    return out


