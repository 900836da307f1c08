"""GPMs compiled to Python: a basic graph pattern and FILTERs matched over one event's triples.

A SPARQL call costs ~40 us however small the graph, far more than matching a
handful of triple patterns against an event of a handful of triples. GPMs
whose body is a plain BGP with FILTERs made of comparisons, ``&&``, ``||``,
``!`` and ``+ - *`` over variables and constants are compiled here; anything
else (OPTIONAL, UNION, GRAPH, functions, blank nodes in the pattern, BASE) is
left to pyoxigraph.

Exactness against pyoxigraph is kept by refusing what is not mirrored
exactly: a FILTER meets a value it does not handle (an xsd:float, a date, a
language string, a derived integer type, an ill-typed literal, a result
outside xsd:integer's 64 bits ...) raises :class:`Fallback`, and the caller
asks pyoxigraph for that row or event. Typed literals are canonicalised as
Oxigraph's store does (``"01"^^xsd:integer`` is stored and returned as
``"1"``), so bindings are the same terms the store path returns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import pyoxigraph as ox

from rsep.algebra.spaseq import GPM, Mapping

XSD = "http://www.w3.org/2001/XMLSchema#"
_STRING = ox.NamedNode(XSD + "string")
_INTEGER = ox.NamedNode(XSD + "integer")
_DECIMAL = ox.NamedNode(XSD + "decimal")
_DOUBLE = ox.NamedNode(XSD + "double")
_LANG = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#langString")
_LITERAL = ox.Literal
_RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
_I64 = 2 ** 63
_DEC_RE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)\Z")
_DEC_CANON = re.compile(r"-?(0|[1-9][0-9]*)\.[0-9]*[1-9]\Z")
_DBL_RE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")

Term = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple
# A FILTER operand (see _value): ("n", int) | ("d", Decimal) | ("f", float) | ("s", str) |
# ("i", NamedNode). The value's type is the one its kind names, which no type can say.
Operand = tuple[str, Any]


def _lexical_int(v: str) -> bool:
    """Whether v is in xsd:integer's lexical space, ``[+-]?[0-9]+``."""
    d = v[1:] if v[:1] in ("+", "-") else v
    return d.isascii() and d.isdigit()


def _canonical_int(v: str) -> bool:
    """Whether v is an xsd:integer's canonical lexical form, ``(0|-?[1-9][0-9]*)``."""
    d = v[1:] if v[:1] == "-" else v
    return d.isascii() and d.isdigit() and (d[0] != "0" or v == "0")


class Fallback(Exception):
    """The compiled form cannot decide this row exactly: ask pyoxigraph."""


class NotCompiled(Exception):
    """The GPM is outside the compiled subset."""


# ---------------------------------------------------------------- canonical terms (as stored)


class Canon:
    """Typed literals as Oxigraph's store returns them, cached per distinct literal."""

    def __init__(self) -> None:
        self._cache: dict[ox.Literal, Term] = {}
        self._store = ox.Store()
        self._g = ox.NamedNode("urn:rsep:canon")
        self._s = ox.NamedNode("urn:rsep:s")

    def term(self, t: object) -> object:
        if type(t) is not ox.Literal:
            return t
        got = self._cache.get(t)
        return got if got is not None else self._canonical(t)

    def _canonical(self, t: ox.Literal) -> Term:
        """A literal not in the cache: its canonical form, cached."""
        dt = t.datatype
        # integers first: a stream's literals are mostly numbers, and most are new
        got: Term
        if dt == _INTEGER and _canonical_int(t.value) or dt == _STRING or dt == _LANG \
                or dt == _DECIMAL and _DEC_CANON.match(t.value):
            got = t
        else:
            self._store.add(ox.Quad(self._s, self._s, t, self._g))
            got = next(iter(self._store.quads_for_pattern(None, None, None, self._g))).object
            self._store.remove_graph(self._g)
        if len(self._cache) > 200_000:  # distinct values of a long stream: stay bounded
            self._cache.clear()
        self._cache[t] = got
        return got

    def indexed(self, triples: tuple[ox.Triple, ...], preds: frozenset | None = None) -> Indexed:
        """An event's triples with canonical literals, indexed by predicate: this runs for
        every event. With ``preds`` (when every pattern's predicate is one of them), only
        those triples. Not de-duplicated (hashing every term costs more than matching): a
        repeated triple only repeats solutions, which the matchers read as a set."""
        cache = self._cache
        out: list[tuple[object, object, object]] = []
        by_pred: dict[object, list[tuple[object, object, object]]] = {}
        for t in triples:
            p = t.predicate
            if preds is not None and p not in preds:
                continue
            o = t.object
            if type(o) is _LITERAL:
                got = cache.get(o)
                o = got if got is not None else self._canonical(o)
            tr = (t.subject, p, o)
            out.append(tr)
            bucket = by_pred.get(p)
            if bucket is None:
                by_pred[p] = [tr]
            else:
                bucket.append(tr)
        return Indexed(out, by_pred)


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


class _Parser:
    def __init__(self, text: str, prefixes: dict[str, str], canon: Canon) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.prefixes = prefixes
        self.canon = canon
        self.blanks = 0

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
            return _RDF_TYPE
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
                return self.canon.term(ox.Literal(value, datatype=self.iri(dk, dtext)))
            return ox.Literal(value)
        if kind == "num":
            dt = _DOUBLE if "e" in text.lower() else _DECIMAL if "." in text else _INTEGER
            return self.canon.term(ox.Literal(text, datatype=dt))
        raise NotCompiled(f"term {text!r}")

    # ---------------------------------------------------------------- the group

    def group(self) -> tuple[list[tuple[object, object, object]], list[Callable[[dict], object]]]:
        """``{ triples . FILTER(...) ... }``: the triple patterns and the FILTERs' token spans."""
        self.take("{")
        triples: list[tuple[object, object, object]] = []
        filters: list[Callable[[dict], object]] = []
        while not self.at("}"):
            tok = self.peek()
            if tok is None:
                raise NotCompiled("unclosed group")
            if tok[0] == "word" and tok[1].upper() == "FILTER":
                self.take()
                filters.append(self.filter())
                if self.at("."):
                    self.take()
                continue
            if tok[0] == "word" and tok[1] != "a" or tok[1] == "{":
                raise NotCompiled(f"{tok[1]} in a GPM")
            s: object
            if tok[1] == "[":
                s = self.anonymous(triples)
                if self.at(".") or self.at("}"):  # [ p o ] . on its own
                    if self.at("."):
                        self.take()
                    continue
            else:
                s = self.term()
            self.properties(s, triples)
            if self.at("."):
                self.take()
        self.take("}")
        if self.peek() is not None:
            raise NotCompiled("text after the group")
        return triples, filters

    def properties(self, s: object, triples: list) -> None:
        """``p o, o ; p o ...`` of subject s."""
        while True:
            p = self.term()
            while True:
                o = self.anonymous(triples) if self.at("[") else self.term()
                triples.append((s, p, o))
                if not self.at(","):
                    break
                self.take()
            if not self.at(";"):
                break
            self.take()
            if self.at(".") or self.at("}") or self.at("]"):
                break

    def anonymous(self, triples: list) -> tuple[str, str]:
        """``[ p o ; ... ]``: a blank node, matched as a variable that no mapping shows
        (its name, with a colon, is no SPARQL variable's)."""
        self.take("[")
        self.blanks += 1
        b = ("var", f"_:b{self.blanks}")
        if not self.at("]"):
            self.properties(b, triples)
        self.take("]")
        return b

    # ---------------------------------------------------------------- FILTER expressions

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
        if dt == _INTEGER and _lexical_int(v):
            return ("n", int(v))
        if dt == _STRING:
            return ("s", v)
        if dt == _DECIMAL and _DEC_RE.match(v):
            return ("d", Decimal(v))
        if dt == _DOUBLE and _DBL_RE.match(v):
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


# ---------------------------------------------------------------- compiled GPMs


def prefixes_of(prologue: str) -> dict[str, str]:
    # BASE is harmless: relative IRIs are refused, in the pattern and in PREFIX.
    out = {m.group(1) or "": m.group(2)
           for m in re.finditer(r"PREFIX\s+([A-Za-z][\w.-]*)?:\s*<([^>]*)>", prologue, re.I)}
    if any(":" not in iri for iri in out.values()):
        raise NotCompiled("relative PREFIX IRI")
    return out


class CompiledGPM:
    """A group pattern (BGP + FILTERs) matched on one item, and FILTERs on variables bound
    elsewhere (a GPM's stateful ones), as Python functions: a SPASEQ GPM's local pattern
    and an RSEP-QL BEP are the same thing."""

    def __init__(self, prologue: str, pattern: str, stateful_filters: Sequence[str],
                 canon: Canon) -> None:
        prefixes = prefixes_of(prologue)
        self.triples, self.local_filters = _Parser(pattern, prefixes, canon).group()
        if not self.triples:
            raise NotCompiled("no triple pattern")
        self.stateful = [_filter_of(f, prefixes, canon) for f in stateful_filters]
        # The BGP with its variables numbered by first occurrence: GPMs that differ only in
        # their variables' names (Queries 3 and 4's A, B, C ...) are matched once per event.
        names: list[str] = []
        shape = []
        for tp in self.triples:
            pos: list[object] = []  # a variable's number, or a constant term
            for x in tp:
                if isinstance(x, tuple):
                    if x[1] not in names:
                        names.append(x[1])
                    pos.append(names.index(x[1]))
                else:
                    pos.append(x)
            shape.append(tuple(pos))
        self.shape = tuple(shape)
        self.names = tuple(names)
        # blank nodes ([ ... ]) are matched like variables but bound in no mapping
        keep = [i for i, n in enumerate(names) if not n.startswith("_:")]
        self.perm = sorted(keep, key=lambda i: names[i])
        self.sorted_names = tuple(names[i] for i in self.perm)
        # What values() returns: the bound variables in order of first occurrence.
        self.bound = tuple(names[i] for i in keep)
        self._project = None if len(keep) == len(names) else \
            eval(f"lambda v: ({''.join(f'v[{i}], ' for i in keep)})")
        # A solution's mapping built by one generated expression: a generic loop (zip,
        # sorting) costs several times more and runs per GPM and event.
        body = ", ".join(f"(_n{k}, v[{i}])" for k, i in enumerate(self.perm))
        env = {f"_n{k}": n for k, n in enumerate(self.sorted_names)}
        # Only indices are spliced into the source; the names come in through env.
        self._build = eval(f"lambda v: ({body},)" if body else "lambda v: ()", env)
        # Events cache a shape's solutions under a small integer: a tuple of terms is
        # re-hashed at every lookup.
        self.shape_id = _SHAPE_IDS.setdefault(self.shape, len(_SHAPE_IDS))
        # Two GPMs with the same row_key have the same values() on every event (Queries 3
        # and 4's A, B, C ...): their rows are computed once per event.
        self.row_key = None if self.local_filters else (self.shape_id, tuple(keep))

    def _solutions(self, ev: Indexed) -> list[tuple]:
        """The BGP's solutions as value tuples (index = variable number), local FILTERs
        applied; the shape's part cached on the event for every GPM of that shape."""
        sols = ev.shapes.get(self.shape_id)
        if sols is None:
            sols = ev.shapes[self.shape_id] = _match_shape(self.shape, ev)
        if sols and self.local_filters:
            sols = _filtered(sols, self.names, self.local_filters)
        return sols

    def match(self, ev: Indexed) -> list[Mapping]:
        """The solutions of the BGP over the event's (canonical) triples, local FILTERs applied."""
        build = self._build
        return [build(vals) for vals in self._solutions(ev)]

    def values(self, ev: Indexed) -> list[tuple]:
        """The solutions as tuples of :attr:`bound` values (local FILTERs applied), distinct.
        Raises Fallback when a local FILTER cannot be decided here."""
        sols = self._solutions(ev)
        if sols and self._project is not None:
            # blank nodes are bound in no mapping: solutions that differ only there are one
            sols = list(dict.fromkeys(map(self._project, sols)))
        return sols

    def holds(self, mu: Mapping | dict) -> bool:
        d = mu if isinstance(mu, dict) else dict(mu)
        for f in self.stateful:
            if f(d) is not True:
                return False
        return True


def _filtered(sols: list[tuple], names: tuple[str, ...], fs: list) -> list[tuple]:
    return [vals for vals in sols
            if all(f(mu) is True for mu in (dict(zip(names, vals, strict=True)),) for f in fs)]


def _filter_of(text: str, prefixes: dict[str, str], canon: Canon) -> Callable[[dict], object]:
    p = _Parser(text, prefixes, canon)
    if (tok := p.peek()) is not None and tok[1] == "(":
        e = p.filter()
    else:
        raise NotCompiled("FILTER without parentheses")
    if p.peek() is not None:
        raise NotCompiled("text after the FILTER")
    return e


class Indexed:
    """An event's canonical triples by predicate, and the BGP shapes matched on it so far."""

    __slots__ = ("triples", "by_pred", "shapes", "by_term")

    def __init__(self, triples: list[tuple[object, object, object]],
                 by_pred: dict[object, list[tuple[object, object, object]]] | None = None
                 ) -> None:
        self.triples = triples
        if by_pred is None:
            by_pred = {}
            for tr in triples:
                got = by_pred.get(tr[1])
                if got is None:
                    by_pred[tr[1]] = [tr]
                else:
                    got.append(tr)
        self.by_pred = by_pred
        self.shapes: dict[int, list[tuple]] = {}
        # (predicate, position) -> term at that position -> triples, built on first use
        self.by_term: dict[tuple[object, int], dict[object, list]] | None = None

    def index(self, p: object, pos: int, cands: list) -> dict[object, list]:
        if self.by_term is None:
            self.by_term = {}
        idx = self.by_term.get((p, pos))
        if idx is None:
            idx = self.by_term[(p, pos)] = {}
            for tr in cands:
                got = idx.get(tr[pos])
                if got is None:
                    idx[tr[pos]] = [tr]
                else:
                    got.append(tr)
        return idx


_PLANS: dict[tuple, tuple] = {}
_SHAPE_IDS: dict[tuple, int] = {}


def _plan(shape: tuple) -> tuple:
    """Per triple pattern: (constant predicate | None, constant positions, positions whose
    variable an earlier position bound, positions that bind a variable, the (position,
    variable) to look the triples up by). Which variables are bound before a pattern is
    fixed by the order alone (a BGP has no OPTIONAL)."""
    nvars = 1 + max((x for tp in shape for x in tp if type(x) is int), default=-1)
    bound: set[int] = set()
    steps = []
    for tp in shape:
        before = set(bound)
        consts, checks, binds = [], [], []
        for pos, x in enumerate(tp):
            if type(x) is not int:
                consts.append((pos, x))
            elif x in bound:
                checks.append((pos, x))
            else:
                bound.add(x)
                binds.append((pos, x))
        p = tp[1] if type(tp[1]) is not int else None
        # a subject (else object) of a constant predicate bound by an earlier pattern
        key = next((c for c in checks if c[0] != 1 and c[1] in before), None) \
            if p is not None else None
        steps.append((p, tuple(c for c in consts if c[0] != 1 or p is None),
                      tuple(checks), tuple(binds), key))
    return nvars, tuple(steps)


# Below this many candidates a scan beats building an index: stream events are small.
INDEX_MIN = 16


def _match_shape(shape: tuple, ev: Indexed) -> list[tuple]:
    """Solutions of a numbered BGP as tuples of values (index = variable number)."""
    plan = _PLANS.get(shape)
    if plan is None:
        plan = _PLANS[shape] = _plan(shape)
    nvars, steps = plan
    sols: list[list] = [[None] * nvars]
    by_pred = ev.by_pred
    for p, consts, checks, binds, key in steps:
        cands = ev.triples if p is None else by_pred.get(p)
        if not cands:
            return []
        nxt = []
        # Joining on a bound term by scanning is quadratic in the event's size (SRBench's
        # events hold thousands of triples): look the term up instead.
        idx = ev.index(p, key[0], cands) if key is not None and len(cands) >= INDEX_MIN \
            else None
        for mu in sols:
            for tr in cands if idx is None else idx.get(mu[key[1]], ()):
                for pos, c in consts:
                    if tr[pos] != c:
                        break
                else:
                    if binds:
                        new = mu.copy()
                        for pos, x in binds:
                            new[x] = tr[pos]
                    else:
                        new = mu
                    for pos, x in checks:
                        if new[x] != tr[pos]:
                            break
                    else:
                        nxt.append(new)
        if not nxt:
            return []
        sols = nxt
    return [tuple(mu) for mu in sols]


def _match_shape_generic(shape: tuple, ev: Indexed) -> list[tuple]:
    """The unplanned matcher: the reference for :func:`_match_shape` in the tests."""
    nvars = 1 + max((x for tp in shape for x in tp if type(x) is int), default=-1)
    sols: list[list] = [[None] * nvars]
    for tp in shape:
        p = tp[1]
        cands = ev.triples if type(p) is int else ev.by_pred.get(p)
        if not cands:
            return []
        nxt = []
        for mu in sols:
            for tr in cands:
                new = None
                for x, v in zip(tp, tr, strict=True):
                    if type(x) is int:
                        cur = (new or mu)[x]
                        if cur is None:
                            if new is None:
                                new = mu.copy()
                            new[x] = v
                        elif cur != v:
                            break
                    elif x != v:
                        break
                else:
                    nxt.append(new if new is not None else mu)
        if not nxt:
            return []
        sols = nxt
    return [tuple(mu) for mu in sols]


def compile_gpm(gpm: GPM, canon: Canon) -> CompiledGPM | None:
    """The compiled form, or None when the GPM needs pyoxigraph."""
    if gpm.background:
        return None
    return compile_pattern(gpm.prologue, gpm.local_pattern, canon, gpm.stateful_filters)


def compile_pattern(prologue: str, pattern: str, canon: Canon,
                    stateful_filters: Sequence[str] = ()) -> CompiledGPM | None:
    """A group graph pattern ``{ ... }`` compiled, or None when it needs pyoxigraph."""
    try:
        return CompiledGPM(prologue, pattern, stateful_filters, canon)
    except (NotCompiled, Fallback, IndexError):
        return None
