"""SPARQL's aggregates and term order as pyoxigraph 0.5.13 computes them, mirrored in Python.

What a maintained window result (rsep.windows.maintained) needs to give pyoxigraph's answers
without asking it: the numeric tower (xsd:integer as a checked i64, xsd:decimal as an i128
holding the value times 10^18, xsd:float and xsd:double as IEEE binary32 and binary64, and
the promotions between them), the fold of each aggregate (oxigraph's ``SumAccumulator``,
``AvgAccumulator``, ``MinAccumulator`` / ``MaxAccumulator`` over ``cmp_terms``,
``GroupConcatAccumulator`` and ``Sample`` in lib/spareval/src/eval.rs; the decimal
arithmetic of lib/oxsdatatypes/src/decimal.rs), and the lexical forms pyoxigraph prints.

Terms are read as canonical terms, as a store gives them back (rsep.sparql.matcher.Canon).
What is not mirrored exactly raises :class:`Undecided` and the caller asks pyoxigraph: a
literal of another datatype (booleans, dates, derived integer types, ill-typed literals), a
NaN ordered, or an order between values whose comparison in oxigraph is not the exact one
(an integer beyond 2^53 compared with a double, numbers compared with strings: oxigraph's
``cmp_terms`` is not transitive there). Proven equal to pyoxigraph by
tests/sparql/test_aggregates.py.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

import pyoxigraph as ox

XSD = "http://www.w3.org/2001/XMLSchema#"
INTEGER = ox.NamedNode(XSD + "integer")
DECIMAL = ox.NamedNode(XSD + "decimal")
FLOAT = ox.NamedNode(XSD + "float")
DOUBLE = ox.NamedNode(XSD + "double")
STRING = ox.NamedNode(XSD + "string")
LANG_STRING = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#langString")

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
I128_MIN, I128_MAX = -(1 << 127), (1 << 127) - 1
SCALE = 10 ** 18  # an xsd:decimal is held as value * 10^18 (18 fractional digits)
# powers of ten as Python ints (the compiled build would make ``10 ** n`` of a C int a float)
_TEN = [10 ** k for k in range(80)]
_TWO = [2 ** k for k in range(130)]

# What a term is for the mirror (its kind), with its value:
INT = 0  # xsd:integer: int (i64)
DEC = 1  # xsd:decimal: int (value * 10^18, i128)
FLT = 2  # xsd:float: float (a binary32 value)
DBL = 3  # xsd:double: float
STR = 4  # xsd:string or a language string: (lexical form, datatype IRI, language or "")
IRI = 5  # str
BNODE = 6  # str (its id)
OTHER = 7  # anything else: not mirrored
NUMERIC = (INT, DEC, FLT, DBL)
Value = tuple[int, Any]


class Undecided(Exception):
    """The mirror cannot give pyoxigraph's answer exactly: ask pyoxigraph."""


class _Error:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ERROR"


ERROR = _Error()  # an expression error: an aggregate's argument that has no value


# ---------------------------------------------------------------- reading terms

@functools.lru_cache(maxsize=200_000)  # (distinct values of a long stream: bounded)
def classify(t: object) -> Value:
    """A canonical term as (kind, value), cached."""
    if type(t) is ox.NamedNode:
        return IRI, t.value
    if type(t) is ox.BlankNode:
        return BNODE, t.value
    if type(t) is not ox.Literal:
        return OTHER, None
    lang = t.language
    if lang is not None:
        return STR, (t.value, LANG_STRING.value, lang)
    dt, v = t.datatype, t.value
    if dt == STRING:
        return STR, (v, STRING.value, "")
    if dt == INTEGER:
        n = _int_lexical(v)
        return (INT, n) if n is not None else (OTHER, None)
    if dt == DECIMAL:
        d = parse_decimal(v)
        return (DEC, d) if d is not None else (OTHER, None)
    if dt == DOUBLE:
        x = _float_lexical(v)
        return (DBL, x) if x is not None else (OTHER, None)
    if dt == FLOAT:
        x = _float_lexical(v)
        return (FLT, to_f32(x)) if x is not None else (OTHER, None)
    return OTHER, None


def _int_lexical(v: str) -> int | None:
    d = v[1:] if v[:1] in ("+", "-") else v
    if not d or not d.isascii() or not d.isdigit():
        return None
    n = int(v)
    return n if I64_MIN <= n <= I64_MAX else None


def _float_lexical(v: str) -> float | None:
    if v in ("INF", "+INF"):
        return float("inf")
    if v == "-INF":
        return float("-inf")
    if v == "NaN":
        return float("nan")
    if not v or not all(c in "0123456789.eE+-" for c in v):
        return None
    try:
        return float(v)
    except ValueError:
        return None


def parse_decimal(v: str) -> int | None:
    """``xsd:decimal``'s lexical form as oxigraph reads it (``Decimal::from_str``): the value
    times 10^18, or None (not a decimal, more than 18 fractional digits, beyond i128)."""
    s = v[1:] if v[:1] in ("+", "-") else v
    whole, _, frac = s.partition(".")
    digits = whole + frac
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    frac = frac.rstrip("0")
    if len(frac) > 18:
        return None
    n = int(whole or "0") * SCALE + (int(frac) * _TEN[18 - len(frac)] if frac else 0)
    n = -n if v[:1] == "-" else n
    return n if I128_MIN <= n <= I128_MAX else None


# ---------------------------------------------------------------- numbers

_np: Any = None


def _numpy() -> Any:
    global _np
    if _np is None:  # (numpy only when a float is met: start-up)
        import numpy

        _np = numpy
    return _np


def to_f32(x: float) -> float:
    """A double rounded to the nearest binary32 (Rust's ``as f32``: overflow gives INF)."""
    np = _numpy()
    with np.errstate(over="ignore"):
        return float(np.float32(x))


def f32_op(op: str, a: float, b: float) -> float:
    """``a op b`` in binary32 (a and b binary32 values)."""
    np = _numpy()
    x, y = np.float32(a), np.float32(b)
    with np.errstate(all="ignore"):
        r = x + y if op == "+" else x / y
    return float(r)


def int_to_f32(n: int) -> float:
    """``i64 as f32``: the nearest binary32, ties to even (one rounding, not two)."""
    if -(1 << 53) <= n <= (1 << 53):
        return to_f32(float(n))
    m = abs(n)
    shift = m.bit_length() - 24
    q, r = divmod(m, _TWO[shift])
    half = _TWO[shift - 1]
    if r > half or r == half and q % 2:
        q += 1
    v = float(q * _TWO[shift])
    return -v if n < 0 else v


def dec_to_f64(v: int) -> float:
    """``Double::from(Decimal)``: trailing zeros stripped, then ``value as f64 / shift``."""
    shift = SCALE
    if v:
        while shift != 1 and v % 10 == 0:
            v //= 10
            shift //= 10
    return float(v) / float(shift)


def dec_to_f32(v: int) -> float:
    return to_f32(dec_to_f64(v))


def _trunc_div(a: int, b: int) -> int:
    """Rust's integer division (towards zero)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def dec_div(a: int, b: int) -> int | None:
    """``Decimal::checked_div`` (both scaled): the dividend shifted left as far as i128
    allows, the divisor's trailing zeros dropped, then truncating divisions; None on
    overflow or division by zero."""
    left, shift_left = a, 0
    if left:
        while I128_MIN <= left * 10 <= I128_MAX:
            left *= 10
            shift_left += 1
    right, shift_right = b, 0
    if right:
        while right % 10 == 0:
            right = _trunc_div(right, 10)
            shift_right += 1
    shift = shift_left + shift_right - 18
    if shift < 0 or right == 0 or left == I128_MIN and right == -1:
        return None
    if shift >= 39:  # 10^39 > i128::MAX: checked_pow fails
        return None
    p = _TEN[shift]
    return _trunc_div(_trunc_div(left, right), p)


def _promote(ka: int, a: Any, kb: int, b: Any) -> tuple[int, Any, Any]:
    """oxigraph's ``NumericBinaryOperands::new``: both operands in their common type."""
    if ka == kb:
        return ka, a, b
    if ka == DBL or kb == DBL:
        return DBL, _as_f64(ka, a), _as_f64(kb, b)
    if ka == FLT or kb == FLT:
        return FLT, _as_f32(ka, a), _as_f32(kb, b)
    # an integer and a decimal
    return DEC, a * SCALE if ka == INT else a, b * SCALE if kb == INT else b


def _as_f64(k: int, v: Any) -> float:
    if k == INT:
        return float(v)
    if k == DEC:
        return dec_to_f64(v)
    return float(v)  # a float is exact in a double


def _as_f32(k: int, v: Any) -> float:
    if k == INT:
        return int_to_f32(v)
    if k == DEC:
        return dec_to_f32(v)
    return float(v)


def add(ka: int, a: Any, kb: int, b: Any) -> Value | None:
    """``a + b`` as the SUM fold adds (None: overflow, an error)."""
    k, x, y = _promote(ka, a, kb, b)
    if k == INT:
        r = x + y
        return (INT, r) if I64_MIN <= r <= I64_MAX else None
    if k == DEC:
        r = x + y
        return (DEC, r) if I128_MIN <= r <= I128_MAX else None
    if k == FLT:
        return FLT, f32_op("+", x, y)
    return DBL, x + y


def fold_sum(values: Iterable[Value]) -> Value | None:
    """``SumAccumulator`` over the values in their order: None when one is not a number or
    a step overflows; Undecided for a value the mirror does not read."""
    k: int = INT
    acc: Any = 0
    for kv, v in values:
        if kv == OTHER:
            raise Undecided("a value of a type the mirror does not read")
        if kv > DBL:
            return None
        got = add(k, acc, kv, v)
        if got is None:
            return None
        k, acc = got
    return k, acc


def average(total: Value | None, count: int) -> Value | None:
    """``AvgAccumulator::finish``: the sum divided by the count, integers giving a decimal."""
    if total is None:
        return None
    if count == 0:
        return INT, 0
    k, s = total
    if k == FLT:
        return FLT, f32_op("/", s, int_to_f32(count))
    if k == DBL:
        return DBL, s / float(count)
    d = dec_div(s * SCALE if k == INT else s, count * SCALE)
    return None if d is None else (DEC, d)


# ---------------------------------------------------------------- lexical forms


def decimal_lexical(v: int) -> str:
    """``Decimal``'s Display: no exponent, no trailing zeros, "0" for zero."""
    if v == 0:
        return "0"
    sign = "-" if v < 0 else ""
    whole, frac = divmod(abs(v), SCALE)
    if not frac:
        return f"{sign}{whole}"
    return f"{sign}{whole}.{frac:018d}".rstrip("0")


def double_lexical(x: float) -> str:
    """``Double``'s Display: the shortest digits that read back as x, without exponent."""
    if x != x:
        return "NaN"
    if x in (_INF, -_INF):
        return "INF" if x > 0 else "-INF"
    return _shortest(x, repr(x), float)


def float_lexical(x: float) -> str:
    """``Float``'s Display: the shortest digits that read back as the binary32 x."""
    if x != x:
        return "NaN"
    if x in (_INF, -_INF):
        return "INF" if x > 0 else "-INF"
    np = _numpy()
    return _shortest(x, np.format_float_scientific(np.float32(x), unique=True), to_f32)


_INF = float("inf")


def _shortest(x: float, shortest: str, back: Any) -> str:
    """x's digits as Rust prints them: as many significant digits as the shortest form that
    reads back (``shortest``, from Python or numpy), rounded from x's exact value with ties
    away from zero where Python and numpy round them to even."""
    digits = Decimal(shortest).normalize()
    n = len(digits.as_tuple().digits)
    exact = Decimal(x)
    if exact:
        q = exact.quantize(Decimal(1).scaleb(exact.adjusted() - n + 1), rounding=ROUND_HALF_UP)
        if back(float(q)) == x:
            digits = q
    out = format(digits, "f")
    if "." in out:
        out = out.rstrip("0").rstrip(".")
    return "-0" if out == "0" and str(x).startswith("-") else out


_TERMS: dict[Value, ox.Literal] = {}


def term_of(v: Value) -> ox.Literal:
    """A numeric value as the literal pyoxigraph returns."""
    got = _TERMS.get(v)
    if got is not None:
        return got
    k, x = v
    if k == INT:
        got = ox.Literal(str(x), datatype=INTEGER)
    elif k == DEC:
        got = ox.Literal(decimal_lexical(x), datatype=DECIMAL)
    elif k == DBL:
        got = ox.Literal(double_lexical(x), datatype=DOUBLE)
    else:
        got = ox.Literal(float_lexical(x), datatype=FLOAT)
    if len(_TERMS) > 100_000:
        _TERMS.clear()
    if x == x and (x or k <= DEC):  # (NaN is not found again; 0.0 would find -0.0)
        _TERMS[v] = got
    return got


# ---------------------------------------------------------------- order (cmp_terms)

_B53 = 1 << 53
_B24 = 1 << 24


class Traits:
    """What decides whether ``cmp_terms`` over a multiset of values is the exact order the
    mirror sorts by (counts, so that values can come and go)."""

    __slots__ = ("n", "bad", "num", "str", "dbl", "flt", "not_f64", "not_f32")

    def __init__(self) -> None:
        self.n = self.bad = self.num = self.str = self.dbl = self.flt = 0
        self.not_f64 = self.not_f32 = 0

    def add(self, v: Value, sign: int = 1) -> None:
        self.n += sign
        k, x = v
        if k == OTHER or k >= FLT and k <= DBL and x != x:
            self.bad += sign
        elif k == STR:
            self.str += sign
        elif k <= DBL:
            self.num += sign
            if k == DBL:
                self.dbl += sign
            elif k == FLT:
                self.flt += sign
            else:
                e64, e32 = exactness(k, x)
                if not e64:
                    self.not_f64 += sign
                if not e32:
                    self.not_f32 += sign

    def ordered(self) -> bool:
        """Is ``cmp_terms`` over these values the exact order of :func:`order_key`?"""
        return not (self.bad or self.num and self.str or self.dbl and self.not_f64
                    or self.flt and self.not_f32)


_EXACT: dict[Value, tuple[bool, bool]] = {}


def exactness(k: int, x: int) -> tuple[bool, bool]:
    """(exact as a double, exact as a float) for an integer or a decimal, as oxigraph
    converts them when comparing with a double or a float."""
    got = _EXACT.get((k, x))
    if got is not None:
        return got
    if k == INT:
        got = (abs(x) <= _B53, abs(x) <= _B24)
    else:
        exact = Fraction(x, SCALE)
        got = (Fraction(dec_to_f64(x)) == exact, Fraction(dec_to_f32(x)) == exact)
    if len(_EXACT) > 100_000:
        _EXACT.clear()
    _EXACT[(k, x)] = got
    return got


def order_key(v: Value) -> tuple:
    """The term's place in ``cmp_terms``'s order, where it is exact (:class:`Traits`): blank
    nodes by id, then IRIs, then literals (numbers by value, strings by lexical form,
    datatype and language); a value the order does not cover sorts last, apart."""
    k, x = v
    if k <= DBL:
        if k == DEC:
            return (2, x // SCALE if x % SCALE == 0 else Fraction(x, SCALE))
        if x != x:
            return (9, 0)
        return (2, x)
    if k == STR:
        return (3, x)
    if k == IRI:
        return (1, x)
    if k == BNODE:
        return (0, x)
    return (9, 0)


def reverse_key(v: Value) -> tuple:
    """A key whose ascending order is :func:`order_key`'s descending one."""
    rank, x = order_key(v)
    if rank == 2:
        return (-rank, -x)
    if rank == 3:
        return (-rank, _rev(x[0]), _rev(x[1]), _rev(x[2]))
    if rank in (0, 1):
        return (-rank, _rev(x))
    return (-rank, 0)


def _rev(s: str) -> tuple[int, ...]:
    # a string's reversed order: shorter is greater when a prefix (the trailing 1)
    return (*(-ord(c) for c in s), 1)


def best(values: Sequence[Value], largest: bool) -> int | None:
    """The index of MIN's (MAX's) result among values in arrival order: the first of the
    smallest (largest), as the fold keeps the first of equals; Undecided where the
    order is not exact."""
    traits = Traits()
    for v in values:
        traits.add(v)
    if not traits.ordered():
        raise Undecided("values cmp_terms does not order exactly")
    if not values:
        return None
    key = reverse_key if largest else order_key
    return min(range(len(values)), key=lambda i: (key(values[i]), i))


# ---------------------------------------------------------------- strings


def str_of(t: object) -> object:
    """``STR(t)``: an IRI's text or a literal's lexical form as a simple literal; ERROR for
    a blank node."""
    if type(t) is ox.NamedNode or type(t) is ox.Literal:
        return ox.Literal(t.value)
    return ERROR


def group_concat(values: Iterable[Value], separator: str) -> ox.Literal | None:
    """``GroupConcatAccumulator`` (0.5.x) over the values in their order: None when one is
    not a string; the language of the result is the one all values share, if any."""
    parts: list[str] = []
    lang: str | None = None
    first = True
    for k, x in values:
        if k == OTHER:
            raise Undecided("a value of a type the mirror does not read")
        if k != STR:
            return None
        lex, _, tag = x
        if first:
            lang, first = tag, False
        elif lang != tag:
            lang = ""
        parts.append(lex)
    text = separator.join(parts)
    return ox.Literal(text, language=lang) if lang else ox.Literal(text)
