"""SPARQL expressions as plain data (SPARQL 1.1 Sec. 17 and 18.2.2): the one expression tree
every dialect's algebra holds for its FILTERs, whatever the dialect's own operators.

The nodes are named after SPARQL's operators: variables, RDF-term constants, logical-or,
logical-and and ``!``, the comparisons, the arithmetic operators and the unary ones,
``BOUND``, ``IN`` / ``NOT IN``, calls of built-ins (by keyword) and of functions (by IRI),
``EXISTS`` / ``NOT EXISTS`` (holding their group pattern as text, read by pyoxigraph) and
aggregates. Every expression the dialects' grammar accepts has a tree (rsep.lang.expression
reads it); which of them rsep evaluates itself is rsep.sparql.filters' business, and what it
refuses goes to pyoxigraph as the text a :class:`Constraint` keeps.

Constants are kept as written where the prologue decides them: a prefixed name is not
resolved here (the reader resolves it against the :class:`Constraint`'s prologue), an IRI
may be relative. No evaluation here: a walk of the variables and :meth:`Expression.to_sparql`
(SPARQL text that pyoxigraph reads as the same expression; tests/algebra/test_expression.py).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

XSD = "http://www.w3.org/2001/XMLSchema#"
COMPARISONS = ("=", "!=", "<", ">", "<=", ">=")
ARITHMETIC = ("+", "-", "*", "/")

# How an unsigned number of each type is written bare (SPARQL 1.1 grammar, rules 146-148;
# a signed one would be read back as a unary operator applied to a number)
_BARE = {XSD + "integer": re.compile(r"[0-9]+\Z"),
         XSD + "decimal": re.compile(r"[0-9]*\.[0-9]+\Z"),
         XSD + "double": re.compile(r"([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)[eE][+-]?[0-9]+\Z")}
_ECHAR = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"}
# what an IRIREF cannot hold as such (rule 139): written as \u escapes
_NOT_IN_IRI = re.compile(r'[<>"{}|^`\\\x00-\x20]')


class Expression(ABC):
    """A node of the tree."""

    __slots__ = ()

    def children(self) -> tuple[Expression, ...]:
        return ()

    def variables(self) -> frozenset[str]:
        """The variables the expression reads (those of its EXISTS patterns included)."""
        out: set[str] = set()
        for n in walk(self):
            if isinstance(n, Variable):
                out.add(n.name)
            elif isinstance(n, Exists):
                out |= n.names
        return frozenset(out)

    @abstractmethod
    def to_sparql(self) -> str:
        """The expression as SPARQL text, every operation in parentheses."""


def walk(e: Expression) -> Iterator[Expression]:
    """The nodes of ``e``, parents before their children, left to right."""
    yield e
    for c in e.children():
        yield from walk(c)


# ---------------------------------------------------------------- variables and constants


@dataclass(frozen=True, slots=True)
class Variable(Expression):
    name: str  # without its ? or $

    def to_sparql(self) -> str:
        return "?" + self.name


@dataclass(frozen=True, slots=True)
class Iri(Expression):
    """``<value>``: the IRI as written, its \\u escapes read (relative if written so)."""

    value: str

    def to_sparql(self) -> str:
        return "<" + _NOT_IN_IRI.sub(lambda m: f"\\u{ord(m.group()):04X}", self.value) + ">"


@dataclass(frozen=True, slots=True)
class PrefixedName(Expression):
    """``prefix:local`` as written (``local`` keeps its ``\\`` escapes and ``%`` codes)."""

    prefix: str
    local: str

    def to_sparql(self) -> str:
        return f"{self.prefix}:{self.local}"


@dataclass(frozen=True, slots=True)
class Literal(Expression):
    """An RDF literal: its lexical form (escapes read), its datatype or its language tag.
    A number or a boolean written bare has its type's IRI (``3``: xsd:integer) and its
    lexical form as written (``1.5e0``); a signed one is a unary operator applied to it."""

    lexical: str
    datatype: Iri | PrefixedName | None = None
    language: str | None = None

    def to_sparql(self) -> str:
        dt = self.datatype
        if isinstance(dt, Iri):
            bare = _BARE.get(dt.value)
            if bare is not None and bare.match(self.lexical) \
                    or dt.value == XSD + "boolean" and self.lexical in ("true", "false"):
                return self.lexical
        text = '"' + "".join(_ECHAR.get(c, c) for c in self.lexical) + '"'
        if self.language is not None:
            return f"{text}@{self.language}"
        if dt is not None:
            return f"{text}^^{dt.to_sparql()}"
        return text


Constant = Iri | PrefixedName | Literal


# ---------------------------------------------------------------- operators


@dataclass(frozen=True, slots=True)
class Or(Expression):
    """``left || right`` (logical-or)."""

    left: Expression
    right: Expression

    def children(self) -> tuple[Expression, ...]:
        return (self.left, self.right)

    def to_sparql(self) -> str:
        return f"({self.left.to_sparql()} || {self.right.to_sparql()})"


@dataclass(frozen=True, slots=True)
class And(Expression):
    """``left && right`` (logical-and)."""

    left: Expression
    right: Expression

    def children(self) -> tuple[Expression, ...]:
        return (self.left, self.right)

    def to_sparql(self) -> str:
        return f"({self.left.to_sparql()} && {self.right.to_sparql()})"


@dataclass(frozen=True, slots=True)
class Not(Expression):
    """``!arg`` (fn:not of arg's effective boolean value)."""

    arg: Expression

    def children(self) -> tuple[Expression, ...]:
        return (self.arg,)

    def to_sparql(self) -> str:
        return f"!({self.arg.to_sparql()})"


@dataclass(frozen=True, slots=True)
class Compare(Expression):
    """``left op right``, op one of :data:`COMPARISONS`."""

    op: str
    left: Expression
    right: Expression

    def children(self) -> tuple[Expression, ...]:
        return (self.left, self.right)

    def to_sparql(self) -> str:
        return f"({self.left.to_sparql()} {self.op} {self.right.to_sparql()})"


@dataclass(frozen=True, slots=True)
class Arithmetic(Expression):
    """``left op right``, op one of :data:`ARITHMETIC`."""

    op: str
    left: Expression
    right: Expression

    def children(self) -> tuple[Expression, ...]:
        return (self.left, self.right)

    def to_sparql(self) -> str:
        return f"({self.left.to_sparql()} {self.op} {self.right.to_sparql()})"


@dataclass(frozen=True, slots=True)
class UnaryMinus(Expression):
    """``-arg`` (op:numeric-unary-minus)."""

    arg: Expression

    def children(self) -> tuple[Expression, ...]:
        return (self.arg,)

    def to_sparql(self) -> str:
        return f"-({self.arg.to_sparql()})"


@dataclass(frozen=True, slots=True)
class UnaryPlus(Expression):
    """``+arg`` (op:numeric-unary-plus)."""

    arg: Expression

    def children(self) -> tuple[Expression, ...]:
        return (self.arg,)

    def to_sparql(self) -> str:
        return f"+({self.arg.to_sparql()})"


@dataclass(frozen=True, slots=True)
class Bound(Expression):
    """``BOUND(?var)``."""

    var: Variable

    def children(self) -> tuple[Expression, ...]:
        return (self.var,)

    def to_sparql(self) -> str:
        return f"BOUND({self.var.to_sparql()})"


@dataclass(frozen=True, slots=True)
class In(Expression):
    """``arg IN (items)``, or ``arg NOT IN (items)`` when ``negated``."""

    arg: Expression
    items: tuple[Expression, ...]
    negated: bool = False

    def children(self) -> tuple[Expression, ...]:
        return (self.arg, *self.items)

    def to_sparql(self) -> str:
        items = ", ".join(i.to_sparql() for i in self.items)
        return f"({self.arg.to_sparql()} {'NOT IN' if self.negated else 'IN'} ({items}))"


@dataclass(frozen=True, slots=True)
class FunctionCall(Expression):
    """A built-in call (``function`` its keyword in capitals: ``REGEX``, ``IF``, ``STR`` ...)
    or a function call (``function`` its IRI); ``distinct``: ``f(DISTINCT ...)``."""

    function: str | Iri | PrefixedName
    args: tuple[Expression, ...] = ()
    distinct: bool = False

    def children(self) -> tuple[Expression, ...]:
        return self.args

    def to_sparql(self) -> str:
        name = self.function if isinstance(self.function, str) else self.function.to_sparql()
        head = "DISTINCT " if self.distinct else ""
        return f"{name}({head}{', '.join(a.to_sparql() for a in self.args)})"


@dataclass(frozen=True, slots=True)
class Exists(Expression):
    """``EXISTS pattern`` (``NOT EXISTS`` when ``negated``): the group graph pattern as
    written (pyoxigraph evaluates it), with the variables it mentions."""

    pattern: str
    negated: bool = False
    names: frozenset[str] = frozenset()

    def to_sparql(self) -> str:
        return f"{'NOT EXISTS' if self.negated else 'EXISTS'} {self.pattern}"


@dataclass(frozen=True, slots=True)
class Aggregate(Expression):
    """``COUNT``, ``SUM``, ``MIN``, ``MAX``, ``AVG``, ``SAMPLE`` or ``GROUP_CONCAT`` (``name``
    in capitals); ``arg`` None: ``COUNT(*)``."""

    name: str
    arg: Expression | None
    distinct: bool = False
    separator: str | None = None  # GROUP_CONCAT's

    def children(self) -> tuple[Expression, ...]:
        return () if self.arg is None else (self.arg,)

    def to_sparql(self) -> str:
        inner = "*" if self.arg is None else self.arg.to_sparql()
        if self.separator is not None:
            inner += f" ; SEPARATOR = {Literal(self.separator).to_sparql()}"
        return f"{self.name}({'DISTINCT ' if self.distinct else ''}{inner})"


# ---------------------------------------------------------------- a FILTER


@dataclass(frozen=True, slots=True)
class Constraint:
    """A FILTER's condition: its tree, its text as written (what pyoxigraph is given when
    rsep does not evaluate the tree itself) and the prologue its names are read in."""

    expr: Expression
    text: str
    prologue: str = ""

    def variables(self) -> frozenset[str]:
        return self.expr.variables()


def signed_literal(e: Expression) -> Literal | None:
    """A literal, or a number written with its sign (``-3``: ``-`` applied to ``3``) as one
    literal of that lexical form; None for anything else."""
    if isinstance(e, Literal):
        return e
    if isinstance(e, (UnaryPlus, UnaryMinus)) and isinstance(e.arg, Literal) \
            and isinstance(e.arg.datatype, Iri) and (bare := _BARE.get(e.arg.datatype.value)) \
            and bare.match(e.arg.lexical):
        sign = "-" if isinstance(e, UnaryMinus) else "+"
        return Literal(sign + e.arg.lexical, e.arg.datatype)
    return None


def conjuncts(e: Expression) -> list[Expression]:
    """The operands of the top-level ``&&`` chain of ``e``, left to right (``[e]`` if none)."""
    if isinstance(e, And):
        return conjuncts(e.left) + conjuncts(e.right)
    return [e]


def conjunction(parts: list[Expression]) -> Expression:
    """``parts[0] && parts[1] && ...``, left-associative (as the grammar reads it)."""
    out = parts[0]
    for p in parts[1:]:
        out = And(out, p)
    return out
