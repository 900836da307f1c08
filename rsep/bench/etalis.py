"""EP-SPARQL queries and streams as ETALIS reads them: event rules and input/4 facts.

An EP-SPARQL SELECT query is translated into an ETALIS event rule as rsep's ETALIS mode
reads it (:func:`rsep.epsparql.etalis.compile_query`, docs/semantics.md "EP-SPARQL as
ETALIS runs it"); :func:`rules` writes that rule in ETALIS's syntax, :func:`facts` a
stream of (start, end, triples) items as ``input(N, Start, End, [rdf(S, P, O), ...])``
facts that a driver loads ready-made (ETALIS then parses no RDF). Used by ``rsep bench
epsparql-etalis`` and by the recorder of ETALIS's outputs (tests/data/etalis/record.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rsep.algebra.epsparql import Var
from rsep.epsparql.etalis_rules import Atom, Op, Program, Where
from rsep.stream.time import TimeKind

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_INTEGER = XSD + "integer"
NUMBERS: dict[float, str] = {}  # the float literals rendered, by value (to map ETALIS's back)

Item = tuple[int, int, list[list[str]]] | list  # (start, end, N-Triples triples)


def term(t: object) -> str:
    """An RDF term (N-Triples) or variable as a Prolog term: IRIs are quoted atoms of
    their N-Triples form, integers numbers (as ETALIS's EP-SPARQL compiler reads them)."""
    if isinstance(t, Var):
        return "V_" + t.name
    s = str(t)
    m = re.fullmatch(rf'"([+-]?\d+)"\^\^<{re.escape(XSD_INTEGER)}>', s)
    if m:
        return str(int(m.group(1)))
    m = re.fullmatch(rf'"([+-]?\d+(?:\.\d+)?)"\^\^<{re.escape(XSD)}(?:decimal|double)>', s)
    if m:  # a float; NUMBERS maps it back to the literal
        v = float(m.group(1))
        if NUMBERS.setdefault(v, s) != s:
            raise ValueError(f"two literals with the value {v}")
        return repr(v)
    if s.startswith("<") and "'" not in s and "\\" not in s:
        return f"'{s}'"
    raise ValueError(f"ETALIS's rendering takes IRIs and numbers only, not {s}")


_TOKEN = re.compile(r"\s*(\?\w+|\d+(?:\.\d+)?|\"[^\"]*\"\^\^\S+|&&|\|\||<=|>=|!=|[<>=!+\-*/()])")
_CMP = {"<": "<", "<=": "=<", ">": ">", ">=": ">=", "=": "=:=", "!=": "=\\="}


class _Condition:
    """A FILTER condition (numbers, variables, + - * /, comparisons, && || !) as a Prolog
    goal, comparisons written as ETALIS's EP-SPARQL compiler writes them (ep_sparql.P,
    cep_rule: ``A is X, B is Y, A < B``)."""

    def __init__(self, text: str, fresh: list[int]) -> None:
        self.toks = _TOKEN.findall(text)
        if "".join(self.toks).replace(" ", "") != text.replace(" ", ""):
            raise ValueError(f"cannot render {text!r}")
        self.text = text
        self.pos = 0
        self.fresh = fresh

    def render(self) -> str:
        out = self.orx()
        if self.peek() is not None:
            raise ValueError(f"cannot render {self.text!r}")
        return out

    def peek(self) -> str | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self) -> str:
        self.pos += 1
        return self.toks[self.pos - 1]

    def orx(self) -> str:
        a = self.andx()
        while self.peek() == "||":
            self.take()
            a = f"({a} ; {self.andx()})"
        return a

    def andx(self) -> str:
        a = self.notx()
        while self.peek() == "&&":
            self.take()
            a = f"({a}, {self.notx()})"
        return a

    def notx(self) -> str:
        if self.peek() == "!":
            self.take()
            return f"\\+ ({self.notx()})"
        if self.peek() == "(" and self._bool_group():
            self.take()
            g = self.orx()
            assert self.take() == ")"
            return g
        return self.cmp()

    def _bool_group(self) -> bool:
        """Whether the parenthesis at the cursor holds a condition (not a number)."""
        depth, i = 0, self.pos
        while i < len(self.toks):
            t = self.toks[i]
            depth += t == "("
            depth -= t == ")"
            if depth == 0:
                return False
            if depth == 1 and t in ("&&", "||", *_CMP):
                return True
            i += 1
        return False

    def cmp(self) -> str:
        a = self.add()
        op = self.take()
        b = self.add()
        self.fresh[0] += 2
        x, y = f"E{self.fresh[0] - 1}", f"E{self.fresh[0]}"
        return f"({x} is {a}, {y} is {b}, {x} {_CMP[op]} {y})"

    def add(self) -> str:
        a = self.mul()
        while self.peek() in ("+", "-"):
            a = f"({a} {self.take()} {self.mul()})"
        return a

    def mul(self) -> str:
        a = self.unary()
        while self.peek() in ("*", "/"):
            a = f"({a} {self.take()} {self.unary()})"
        return a

    def unary(self) -> str:
        t = self.take()
        if t == "(":
            a = self.add()
            assert self.take() == ")"
            return a
        if t == "-":
            return f"(- {self.unary()})"
        if t.startswith("?"):
            return "V_" + t[1:]
        if t.startswith('"'):
            return term(t)
        return t


def condition(text: str, fresh: list[int]) -> str:
    """A FILTER condition as a Prolog goal; ``fresh`` numbers its comparison variables."""
    return _Condition(text, fresh).render()


def formula(f: object) -> str:
    """A rule body (rsep.epsparql.etalis's Atom / Op / Where) in ETALIS's syntax."""
    if isinstance(f, Atom):
        return "rdf(" + ",".join(term(x) for x in f.pattern) + ")"
    if isinstance(f, Op):
        return f"({formula(f.left)} '{f.op}' {formula(f.right)})"
    assert isinstance(f, Where)
    fresh = [0]  # the comparisons' Prolog variables, E1, E2, ..., fresh in each where
    return f"({formula(f.arg)} 'where' ({', '.join(condition(c.text, fresh) for c in f.conds)}))"


def rules(p: Program) -> str:
    """The ETALIS rule: ``select_event([V...]) <- Body``, labelled ``q`` with its window
    when it has one (event_rule_window, in seconds: ``getDURATION() < c`` is ``=< c - 1``
    on integer times)."""
    head = "select_event([" + ",".join("V_" + v for v in p.head) + "])"
    rule = f"{head} <- {formula(p.body)}."
    h, strict = p.window(TimeKind.ABSTRACT)
    if h != float("inf"):
        w = int(h) - 1 if strict else int(h)
        rule = f"q([property(event_rule_window,{w})]) 'rule:' {rule}"
    return rule + "\n"


def fact(i: int, item: Item) -> str:
    s, e, trs = item
    ts = ", ".join("rdf(" + ",".join(term(x) for x in tr) + ")" for tr in trs)
    return f"input({i}, {s}, {e}, [{ts}]).\n"


def facts(stream: Iterable[Item]) -> str:
    """input(N, Start, End, Triples) facts, N counting the items from 0."""
    return "".join(fact(i, it) for i, it in enumerate(stream))


__all__ = ["NUMBERS", "condition", "fact", "facts", "formula", "rules", "term"]
