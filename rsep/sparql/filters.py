"""The FILTER compiler: SPARQL FILTER expressions compiled to Python functions, one for
every per-item match (rsep.sparql.matcher's GPMs and BEPs).

Comparisons, ``&&``, ``||``, ``!`` and ``+ - *`` over variables and constants are
compiled; anything else (functions, division, ...) is refused with :class:`NotCompiled`
and the caller asks pyoxigraph. Exactness against pyoxigraph is kept by refusing what is
not mirrored exactly: a FILTER that meets a value it does not handle (an xsd:float, a
date, a language string, a derived integer type, an ill-typed literal, a result outside
xsd:integer's 64 bits ...) raises :class:`Fallback`, and the caller asks pyoxigraph for
that row. Proven equal to pyoxigraph by tests/test_spaseq_compiled.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

import pyoxigraph as ox

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

# A FILTER operand (see _value): ("n", int) | ("d", Decimal) | ("f", float) | ("s", str) |
# ("i", NamedNode). The value's type is the one its kind names, which no type can say.
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


# ---------------------------------------------------------------- tokens


_TOKEN = re.compile(r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<iri><[^<>"{}|^`\\\s]*>)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<lang>@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*)
  | (?P<var>[?$]\w+)
  | (?P<num>[0-9]+\.[0-9]*[eE][+-]?[0-9]+|[0-9]*\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+(?:[eE][+-]?[0-9]+)?)
  | (?P<op>\^\^|&&|\|\||!=|<=|>=|[{}\[\]().;,=<>!+*/-])
  | (?P<pname>(?:[A-Za-z][\w.-]*)?:(?:[\w-](?:[\w.-]*[\w-])?)?)
  | (?P<word>[A-Za-z_]+)
""", re.VERBOSE)


def _tokens(text: str) -> list[tuple[str, str]]:
    out = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise NotCompiled(f"unexpected text at {text[pos:pos + 10]!r}")
        pos = m.end()
        if m.lastgroup != "ws":
            out.append((m.lastgroup or "", m.group()))
    return out


_ESC = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch == "\\":
            nxt = s[i + 1]
            if nxt not in _ESC:
                raise NotCompiled("unicode escape")
            out.append(_ESC[nxt])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)



class TermParser:
    """Terms and FILTER expressions of a pattern's text; ``canon`` gives a typed
    literal as the store returns it."""

    def __init__(self, text: str, prefixes: dict[str, str],
                 canon: Callable[[object], object]) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.prefixes = prefixes
        self.canon = canon

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value):
            raise NotCompiled(f"expected {value!r}")
        self.i += 1
        return tok

    def at(self, value: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[1] == value and tok[0] in ("op", "word")

    # ---------------------------------------------------------------- terms

    def iri(self, kind: str, text: str) -> ox.NamedNode:
        if kind == "iri":
            iri = text[1:-1]
            if ":" not in iri:
                raise NotCompiled("relative IRI")
            return ox.NamedNode(iri)
        prefix, _, local = text.partition(":")
        if prefix not in self.prefixes or "\\" in local or "%" in local:
            raise NotCompiled("prefixed name")
        return ox.NamedNode(self.prefixes[prefix] + local)

    def term(self, allow_var: bool = True) -> object:
        kind, text = self.take()
        if kind == "var":
            if not allow_var:
                raise NotCompiled("variable")
            return ("var", text[1:])
        if kind in ("iri", "pname"):
            return self.iri(kind, text)
        if kind == "word" and text == "a":
            return RDF_TYPE
        if kind == "word" and text in ("true", "false"):
            return ox.Literal(text, datatype=ox.NamedNode(XSD + "boolean"))
        if kind == "str":
            if text.startswith(('"""', "'''")):
                raise NotCompiled("long string")
            value = _unescape(text[1:-1])
            nxt = self.peek()
            if nxt and nxt[0] == "lang":
                self.take()
                return ox.Literal(value, language=nxt[1][1:])
            if nxt and nxt[1] == "^^":
                self.take()
                dk, dtext = self.take()
                return self.canon(ox.Literal(value, datatype=self.iri(dk, dtext)))
            return ox.Literal(value)
        if kind == "num":
            dt = DOUBLE if "e" in text.lower() else DECIMAL if "." in text else INTEGER
            return self.canon(ox.Literal(text, datatype=dt))
        raise NotCompiled(f"term {text!r}")



    def filter(self) -> Callable[[dict], object]:
        if not self.at("("):
            raise NotCompiled("FILTER without parentheses")
        self.take("(")
        e = self.or_()
        self.take(")")
        return e

    def or_(self) -> Callable[[dict], object]:
        e = self.and_()
        while self.at("||"):
            self.take()
            e = _or(e, self.and_())
        return e

    def and_(self) -> Callable[[dict], object]:
        e = self.rel()
        while self.at("&&"):
            self.take()
            e = _and(e, self.rel())
        return e

    def rel(self) -> Callable[[dict], object]:
        if self.at("!"):
            self.take()
            return _not(self.rel())
        if self.at("("):
            save = self.i
            self.take()
            try:
                e = self.or_()
                self.take(")")
                if not any(self.at(o) for o in ("=", "!=", "<", ">", "<=", ">=", "+", "-", "*")):
                    return e
            except NotCompiled:
                pass
            self.i = save
        left = self.add()
        for op in ("=", "!=", "<=", ">=", "<", ">"):
            if self.at(op):
                self.take()
                return _compare(op, left, self.add())
        raise NotCompiled("a FILTER operand that is not a comparison")

    def add(self) -> Callable[[dict], object]:
        e = self.mul()
        while self.at("+") or self.at("-"):
            op = self.take()[1]
            e = _arith(op, e, self.mul())
        return e

    def mul(self) -> Callable[[dict], object]:
        e = self.unary()
        while self.at("*"):
            self.take()
            e = _arith("*", e, self.unary())
        if self.at("/"):
            raise NotCompiled("division")
        return e

    def unary(self) -> Callable[[dict], object]:
        if self.at("-"):
            self.take()
            inner = self.unary()
            return lambda mu: _neg(inner(mu))
        if self.at("+"):
            self.take()
            return self.unary()
        if self.at("("):
            self.take()
            e = self.add()
            self.take(")")
            return e
        t = self.term()
        if isinstance(t, tuple):
            name = t[1]

            def var(mu: dict, name: str = name) -> object:
                v = mu.get(name)
                if v is None:
                    return _ERROR
                return _value(v)
            return var
        val = _value(t)
        return lambda mu: val



# ---------------------------------------------------------------- values (SPARQL operators)


class _Err:
    __slots__ = ()


_ERROR = _Err()  # a SPARQL expression error (the FILTER is false), distinct from Fallback
_BOOL = ox.NamedNode(XSD + "boolean")


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
    if type(t) is ox.NamedNode:
        return ("i", t)
    if type(t) is ox.Literal:
        dt = t.datatype
        v = t.value
        # integers first: most of a stream's literals, most of them new
        if dt == INTEGER and lexical_int(v):
            return ("n", int(v))
        if dt == STRING:
            return ("s", v)
        if dt == DECIMAL and _DEC_RE.match(v):
            return ("d", Decimal(v))
        if dt == DOUBLE and _DBL_RE.match(v):
            return ("f", float(v))
    raise Fallback(repr(t))


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
    if kind == "d" and abs(v) >= Decimal(10) ** 17:
        raise Fallback("decimal range")
    return (kind, v)


def _arith(op: str, left: Callable, right: Callable) -> Callable[[dict], object]:
    def f(mu: dict) -> object:
        a, b = left(mu), right(mu)
        if a is _ERROR or b is _ERROR:
            return _ERROR
        x, y, k = _promote(_num(a), _num(b))
        try:
            r = x + y if op == "+" else x - y if op == "-" else x * y
        except InvalidOperation:
            raise Fallback("decimal arithmetic") from None
        return _check(k, r)
    return f


def _neg(a: Any) -> object:
    """``-a``: ``a`` an Operand, or _ERROR (what a FILTER expression's function returns)."""
    if a is _ERROR:
        return _ERROR
    k, v = _num(a)
    return _check(k, -v)


def _compare(op: str, left: Callable, right: Callable) -> Callable[[dict], object]:
    def f(mu: dict) -> object:
        a, b = left(mu), right(mu)
        if a is _ERROR or b is _ERROR:
            return _ERROR
        ka, kb = a[0], b[0]
        if ka in "ndf" and kb in "ndf":
            x, y, _ = _promote(a, b)
        elif ka == kb == "s":
            x, y = a[1], b[1]
        elif ka == "i" or kb == "i":
            if op not in ("=", "!="):
                raise Fallback("an IRI ordered")
            if ka != kb:
                # an IRI is never equal to a literal (RDFterm-equal)
                return op == "!="
            x, y = a[1], b[1]
            return (x == y) == (op == "=")
        else:
            raise Fallback("mixed operand types")
        if op == "=":
            return x == y
        if op == "!=":
            return x != y
        if op == "<":
            return x < y
        if op == ">":
            return x > y
        if op == "<=":
            return x <= y
        return x >= y
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



def filter_of(text: str, prefixes: dict[str, str], canon: Callable[[object], object]) -> Callable[[dict], object]:
    p = TermParser(text, prefixes, canon)
    if (tok := p.peek()) is not None and tok[1] == "(":
        e = p.filter()
    else:
        raise NotCompiled("FILTER without parentheses")
    if p.peek() is not None:
        raise NotCompiled("text after the FILTER")
    return e

