"""The compiled matcher's old reader of a group's text (what rsep.sparql.pattern held
before the pattern tree replaced it): ``{ triples . FILTER ... }`` tokenised and read into
triple patterns, with the number of its FILTERs. Kept here as the oracle of the tree's
readers (tests/windows/test_plan.py, test_tree_readers.py, tests/events/test_events_tree.py,
tests/spaseq/test_spaseq_tree.py): where it reads a group, the tree must give the same."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import pyoxigraph as ox

from rsep.algebra.expression import Constraint
from rsep.sparql.filters import DECIMAL, DOUBLE, INTEGER, RDF_TYPE, XSD, NotCompiled, prefixes_of
from rsep.sparql.matcher import Canon, CompiledGPM, compile_pattern
from rsep.sparql.pattern import Triple

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


class GroupReader:
    """The tokens of a group pattern's text, read into triple patterns; ``canon`` gives a
    typed literal as the store returns it."""

    def __init__(self, text: str, prefixes: dict[str, str],
                 canon: Callable[[object], object]) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.prefixes = prefixes
        self.canon = canon
        self.blanks = 0
        self.filters = 0  # the FILTERs skipped

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

    def term(self) -> object:
        kind, text = self.take()
        if kind == "var":
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

    # ---------------------------------------------------------------- the group

    def group(self) -> list[Triple]:
        """``{ triples . FILTER ... }``: the triple patterns (the FILTERs are counted)."""
        self.take("{")
        triples: list[Triple] = []
        while not self.at("}"):
            tok = self.peek()
            if tok is None:
                raise NotCompiled("unclosed group")
            if tok[0] == "word" and tok[1].upper() == "FILTER":
                self.take()
                self.skip_constraint()
                self.filters += 1
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
        return triples

    def skip_constraint(self) -> None:
        """A FILTER's constraint: ``( ... )``, or a call ``name( ... )``."""
        tok = self.peek()
        if tok is not None and tok[0] in ("word", "pname", "iri") and tok[1] != "(":
            self.take()
        self.take("(")
        depth = 1
        while depth:
            kind, text = self.take()
            if kind == "op" and text == "(":
                depth += 1
            elif kind == "op" and text == ")":
                depth -= 1

    def properties(self, s: object, triples: list[Triple]) -> None:
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

    def anonymous(self, triples: list[Triple]) -> tuple[str, str]:
        """``[ p o ; ... ]``: a blank node, matched as a variable that no mapping shows
        (its name, with a colon, is no SPARQL variable's)."""
        self.take("[")
        self.blanks += 1
        b = ("var", f"_:b{self.blanks}")
        if not self.at("]"):
            self.properties(b, triples)
        self.take("]")
        return b


def compiled_from_text(prologue: str, pattern: str, canon: Canon,
                       filters: Sequence[Constraint] = (),
                       stateful: Sequence[Constraint] = ()) -> CompiledGPM | None:
    """What the compiled matcher made of a group's text before the tree: its triple
    patterns read by :class:`GroupReader`, None where that reader does not read the text
    or counts other FILTERs than the trees given."""
    try:
        reader = GroupReader(pattern, prefixes_of(prologue), canon.term)
        triples = reader.group()
    except (NotCompiled, IndexError):
        return None
    if reader.filters != len(filters):
        return None
    return compile_pattern(prologue, triples, canon, filters, stateful)


def unlabelled(triples: list | None) -> list | None:
    """Triples with each blank node's name replaced by its number of first occurrence (this
    reader names ``[]`` ``_:b<n>``, the tree ``_:rsep<n>``)."""
    if triples is None:
        return None
    seen: dict[str, str] = {}

    def one(x: object) -> object:
        if isinstance(x, tuple) and x[1].startswith("_:"):
            return ("var", seen.setdefault(x[1], f"_:{len(seen)}"))
        return x
    return [tuple(one(x) for x in tp) for tp in triples]


def assert_compiled_alike(got: CompiledGPM | None, was: CompiledGPM, what: str) -> None:
    """The tree's compiled group is the text reader's: the same triple patterns, variables
    (blank nodes up to their names) and FILTERs."""
    assert got is not None, what
    assert unlabelled(got.triples) == unlabelled(was.triples), what
    assert unlabelled([tuple(("var", n) for n in got.names)]) == \
        unlabelled([tuple(("var", n) for n in was.names)]), what
    assert len(got.local_filters) == len(was.local_filters), what
    assert len(got.stateful) == len(was.stateful), what
