"""EP-SPARQL FILTERs compiled to Python for the common case (numeric comparisons,
arithmetic, &&, ||, !, BOUND, getDURATION() against a number or a day-time duration).

One pyoxigraph call costs ~40 us, which dominated the per-event cost. The compiled form
follows SPARQL 1.1 (17.2, 17.3): integers and decimals are exact (``int`` / ``Decimal``),
an error is ``None`` (false in a FILTER, absorbed by ``||`` / ``&&`` as the truth tables
say). Anything else (strings, IRIs, doubles, dateTimes, division, functions) is not
compiled, or, met in a value at run time, raises :class:`Fallback` and the batch goes to
pyoxigraph: compiled and uncompiled evaluation give the same answers.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

XSD = "http://www.w3.org/2001/XMLSchema#"
_INTEGERS = {XSD + t for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                               "positiveInteger", "negativeInteger", "nonPositiveInteger",
                               "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte")}
_DURATIONS = {XSD + "duration", XSD + "dayTimeDuration"}
_DUR_RX = re.compile(r"^(-?)P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")
_TOKEN = re.compile(r"""\s*(?:
    (?P<var>[?$][A-Za-z_][A-Za-z0-9_]*)
  | (?P<lit>"[^"\\]*"\^\^(?:<[^>]*>|[A-Za-z][\w.-]*:[\w.-]+))
  | (?P<num>\d+(?:\.\d+)?(?![\w.eE]))
  | (?P<op>&&|\|\||<=|>=|!=|[<>=!+\-*()])
  | (?P<bound>BOUND(?=\s*\())
)""", re.X | re.I)


class NotCompiled(Exception):
    """The expression uses something the compiled form does not cover."""


class Fallback(Exception):
    """A value the compiled form does not cover: evaluate with pyoxigraph."""


class Dur:
    """A day-time duration in ms (years/months durations are not compiled)."""

    __slots__ = ("ms",)

    def __init__(self, ms: float) -> None:
        self.ms = ms


def duration_ms(lex: str) -> float | None:
    m = _DUR_RX.match(lex)
    if not m or not any(m.groups()[1:]):
        return None
    sign, d, h, mi, s = m.groups()
    ms = ((float(d or 0) * 24 + float(h or 0)) * 60 + float(mi or 0)) * 60_000 + float(s or 0) * 1000
    return -ms if sign else ms


_cache: dict[str, Any] = {}


def term_value(t: str) -> Any:
    """An N-Triples term as a number (int / Decimal) or a Dur; Fallback otherwise."""
    v = _cache.get(t)
    if v is not None:
        return v
    if not t.startswith('"') or "^^<" not in t:
        raise Fallback(t)
    lex, dt = t[1:].rsplit('"^^<', 1)
    dt = dt[:-1]
    try:
        if dt in _INTEGERS:
            v = int(lex)
        elif dt == XSD + "decimal":
            v = Decimal(lex)
        else:
            raise Fallback(t)
    except (ValueError, InvalidOperation):
        raise Fallback(t) from None
    if len(_cache) > 200_000:
        _cache.clear()
    _cache[t] = v
    return v


def _num(x: Any) -> bool:
    return isinstance(x, (int, Decimal)) and not isinstance(x, bool)


def _cmp(op: str, a: Any, b: Any) -> bool | None:
    if a is None or b is None:
        return None
    if isinstance(a, Dur) and isinstance(b, Dur):
        a, b = a.ms, b.ms
    elif isinstance(a, bool) or isinstance(b, bool):
        raise Fallback("a comparison of booleans")  # rare; left to pyoxigraph's reading
    elif not (_num(a) and _num(b)):
        return None  # a type error (mixed types)
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    if op == ">=":
        return a >= b
    if op == "=":
        return a == b
    return a != b


def _ebv(x: Any) -> bool | None:
    if isinstance(x, bool) or x is None:
        return x
    if _num(x):
        return x != 0
    return None


def _arith(op: str, a: Any, b: Any) -> Any:
    if a is None or b is None or not (_num(a) and _num(b)):
        return None
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    return a * b


_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "=": operator.eq,
    "!=": operator.ne, "+": operator.add, "-": operator.sub, "*": operator.mul}
Env = Callable[[str], Any]  # variable name -> value (None: unbound); may raise Fallback
Fn = Callable[[Env], Any]


class _Parser:
    def __init__(self, text: str, prefixes: dict[str, str], datetime: bool) -> None:
        self.toks: list[tuple[str, str]] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise NotCompiled(text[pos:pos + 20])
            kind = m.lastgroup
            assert kind is not None
            self.toks.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0
        self.prefixes = prefixes
        self.datetime = datetime

    def peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.toks):
            raise NotCompiled("end")
        t = self.toks[self.i]
        if want is not None and t[1] != want:
            raise NotCompiled(t[1])
        self.i += 1
        return t

    def parse(self) -> Fn:
        f = self.or_()
        if self.i != len(self.toks):
            raise NotCompiled(self.toks[self.i][1])
        return f

    def or_(self) -> Fn:
        f = self.and_()
        while self.peek() == "||":
            self.take()
            g, h = f, self.and_()

            def f(env: Env, g: Fn = g, h: Fn = h) -> bool | None:
                a, b = _ebv(g(env)), _ebv(h(env))
                if a is True or b is True:
                    return True
                return None if a is None or b is None else False
        return f

    def and_(self) -> Fn:
        f = self.rel()
        while self.peek() == "&&":
            self.take()
            g, h = f, self.rel()

            def f(env: Env, g: Fn = g, h: Fn = h) -> bool | None:
                a, b = _ebv(g(env)), _ebv(h(env))
                if a is False or b is False:
                    return False
                return None if a is None or b is None else True
        return f

    def rel(self) -> Fn:
        f = self.add()
        if self.peek() in ("<", "<=", ">", ">=", "=", "!="):
            op = self.take()[1]
            g, h = f, self.add()
            fn = _OPS[op]

            def rel(env: Env) -> bool | None:
                a, b = g(env), h(env)
                ta, tb = type(a), type(b)
                if (ta is int or ta is Decimal) and (tb is int or tb is Decimal):
                    return fn(a, b)
                return _cmp(op, a, b)
            return rel
        return f

    def add(self) -> Fn:
        f = self.mul()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            g, h = f, self.mul()

            def f(env: Env, g: Fn = g, h: Fn = h, op: str = op, fn: Callable = _OPS[op]) -> Any:
                a, b = g(env), h(env)
                ta, tb = type(a), type(b)
                if (ta is int or ta is Decimal) and (tb is int or tb is Decimal):
                    return fn(a, b)
                return _arith(op, a, b)
        return f

    def mul(self) -> Fn:
        f = self.unary()
        while self.peek() == "*":
            self.take()
            g, h = f, self.unary()

            def f(env: Env, g: Fn = g, h: Fn = h) -> Any:
                a, b = g(env), h(env)
                ta, tb = type(a), type(b)
                if (ta is int or ta is Decimal) and (tb is int or tb is Decimal):
                    return a * b
                return _arith("*", a, b)
        return f

    def unary(self) -> Fn:
        p = self.peek()
        if p == "!":
            self.take()
            g = self.unary()

            def neg(env: Env) -> bool | None:
                v = _ebv(g(env))
                return None if v is None else not v
            return neg
        if p in ("-", "+"):
            self.take()
            g = self.unary()
            sign = -1 if p == "-" else 1
            return lambda env: _arith("*", sign, g(env))
        return self.primary()

    def primary(self) -> Fn:
        kind, text = self.take()
        if text == "(":
            f = self.or_()
            self.take(")")
            return f
        if kind == "bound":
            self.take("(")
            k, v = self.take()
            if k != "var":
                raise NotCompiled(v)
            self.take(")")
            name = v[1:]
            return lambda env: env(name) is not None
        if kind == "var":
            name = text[1:]
            if self.datetime and name in ("__s", "__e"):
                raise NotCompiled(text)
            return lambda env: env(name)
        if kind == "num":
            c: Any = Decimal(text) if "." in text else int(text)
            return lambda env: c
        if kind == "lit":
            lex, dt = text[1:].split('"^^', 1)
            if dt.startswith("<"):
                dt = dt[1:-1]
            else:
                pfx, local = dt.split(":", 1)
                if pfx not in self.prefixes:
                    raise NotCompiled(text)
                dt = self.prefixes[pfx] + local
            if dt in _DURATIONS:
                ms = duration_ms(lex)
                if ms is None:
                    raise NotCompiled(text)
                d = Dur(ms)
                return lambda env: d
            try:
                c = term_value(f'"{lex}"^^<{dt}>')
            except Fallback:
                raise NotCompiled(text) from None
            return lambda env: c
        raise NotCompiled(text)


_PREFIX = re.compile(r"PREFIX\s+([A-Za-z][\w.-]*)?:\s*<([^>]*)>", re.I)


def compile_filter(text: str, prologue: str, datetime: bool) -> Fn | None:
    """A function env -> True / False / None (error) for the expression, or None when it
    is not covered. ``datetime``: the time functions give a dateTime stream's values."""
    prefixes = {m.group(1) or "": m.group(2) for m in _PREFIX.finditer(prologue)}
    try:
        f = _Parser(text, prefixes, datetime).parse()
    except NotCompiled:
        return None
    return lambda env: _ebv(f(env))
