"""SPARQL expressions, text to tree: the parse trees of sparqlib's expression rules (every
dialect's grammar holds them) read into rsep.algebra.expression's nodes.

The tree follows SPARQL 1.1's grammar (Sec. 19.8): ``!``, unary ``+`` and ``-`` apply to a
primary expression, one comparison or IN per relational expression, and an additive operand
written as a signed number (``?a -3 * 2``) is read as its sign applied to the unsigned
number and what multiplies it (``?a - (3 * 2)``). A signed number elsewhere (``-3``) is
read as pyoxigraph reads it, the unary operator applied to the unsigned number (so
``-9223372036854775808`` is an overflow, as there). A dialect's own
built-ins (EP-SPARQL's time functions, C-SPARQL's timestamp()) are read by the functions it
passes in ``extensions``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from lark import Token, Tree

from rsep.algebra.expression import (
    XSD,
    Aggregate,
    And,
    Arithmetic,
    Bound,
    Compare,
    Constraint,
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
)
from rsep.lang.errors import QueryError
from rsep.lang.parser import parse_tree
from rsep.lang.syntax import end_of, start_of

_NUMBER_TYPES = {"INTEGER": XSD + "integer", "DECIMAL": XSD + "decimal", "DOUBLE": XSD + "double"}
_BOOLEAN = Iri(XSD + "boolean")
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_ECHAR = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
# the grammar's names of the operator tokens
_COMPARISON_TOKENS = {"EQUALS", "NOT_EQUALS", "LT", "GT", "LT_OR_EQUAL_TO", "GT_OR_EQUAL_TO"}

# A dialect's own built-in (a rule of its grammar's extension) read into a node
Extension = Callable[["ExpressionReader", Tree], Expression]


def unescape(s: str) -> str:
    """A string's or an IRI's ``\\`` escapes (ECHAR and UCHAR) read."""
    if "\\" not in s:
        return s
    return _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)) if m.group(3) is None
                       else _ECHAR.get(m.group(3), m.group(0)), s)


def _trees(node: Tree) -> list[Tree]:
    return [c for c in node.children if isinstance(c, Tree)]


class ExpressionReader:
    """Reads the expression parse trees of a query's ``text``."""

    def __init__(self, text: str, extensions: Mapping[str, Extension] | None = None) -> None:
        self.text = text
        self.extensions = dict(extensions or {})

    def constraint(self, node: Tree, prologue: str = "") -> Constraint:
        """A ``filter`` (or its ``constraint``) node: the tree, the text as written."""
        if node.data == "filter":
            node = next(c for c in _trees(node) if c.data == "constraint")
        return Constraint(self.expression(node), self.text[start_of(node):end_of(node)], prologue)

    def expression(self, node: Tree) -> Expression:
        """Any node of the expression rules."""
        d = node.data
        read = _RULES.get(d)
        if read is not None:
            return read(self, node)
        ext = self.extensions.get(d)
        if ext is not None:
            return ext(self, node)
        kids = _trees(node)
        if len(kids) == 1 and d in _PASS_THROUGH:
            return self.expression(kids[0])
        raise QueryError(f"unexpected {d} in an expression")

    # ------------------------------------------------------------ operators

    def _conditional_or_expression(self, node: Tree) -> Expression:
        parts = [self.expression(c) for c in _trees(node)]
        out = parts[0]
        for p in parts[1:]:
            out = Or(out, p)
        return out

    def _conditional_and_expression(self, node: Tree) -> Expression:
        parts = [self.expression(c) for c in _trees(node)]
        out = parts[0]
        for p in parts[1:]:
            out = And(out, p)
        return out

    def _relational_expression(self, node: Tree) -> Expression:
        kids = node.children
        left = self.expression(kids[0])
        if len(kids) == 1:
            return left
        op = kids[1]
        assert isinstance(op, Token)
        if op.type in _COMPARISON_TOKENS:
            right = kids[2]
            assert isinstance(right, Tree)
            return Compare(str(op), left, self.expression(right))
        negated = str(op).upper() == "NOT"
        items = kids[-1]
        assert isinstance(items, Tree)
        return In(left, tuple(self.expression(c) for c in _trees(items)), negated)

    def _additive_expression(self, node: Tree) -> Expression:
        kids = node.children
        out = self.expression(kids[0])
        i = 1
        while i < len(kids):
            k = kids[i]
            if isinstance(k, Token):  # + or - and a multiplicative expression
                right = kids[i + 1]
                assert isinstance(right, Tree)
                out = Arithmetic(str(k), out, self.expression(right))
                i += 2
                continue
            # a signed number: its sign is the operator, then what multiplies it (rule 116)
            tok = k.children[0]
            assert isinstance(tok, Token)
            sign, digits = str(tok)[0], str(tok)[1:]
            term: Expression = Literal(digits, Iri(_NUMBER_TYPES[tok.type.split("_")[0]]))
            i += 1
            while i < len(kids) and isinstance(kids[i], Token) and str(kids[i]) in ("*", "/"):
                right = kids[i + 1]
                assert isinstance(right, Tree)
                term = Arithmetic(str(kids[i]), term, self.expression(right))
                i += 2
            out = Arithmetic(sign, out, term)
        return out

    def _multiplicative_expression(self, node: Tree) -> Expression:
        kids = node.children
        out = self.expression(kids[0])
        for op, right in zip(kids[1::2], kids[2::2], strict=True):
            assert isinstance(right, Tree)
            out = Arithmetic(str(op), out, self.expression(right))
        return out

    def _unary_expression(self, node: Tree) -> Expression:
        kids = node.children
        inner = kids[-1]
        assert isinstance(inner, Tree)
        arg = self.expression(inner)
        if len(kids) == 1:
            return arg
        op = str(kids[0])
        return Not(arg) if op == "!" else UnaryMinus(arg) if op == "-" else UnaryPlus(arg)

    # ------------------------------------------------------------ calls

    def _built_in_call(self, node: Tree) -> Expression:
        head = node.children[0]
        if isinstance(head, Tree):
            return self.expression(head)
        name = str(head).upper()
        args = tuple(self.expression(c) for c in _trees(node) if c.data != "expression_list") + \
            tuple(self.expression(e) for c in _trees(node) if c.data == "expression_list"
                  for e in _trees(c))
        if name == "BOUND" and len(args) == 1 and isinstance(args[0], Variable):
            return Bound(args[0])
        return FunctionCall(name, args)

    def _function_call(self, node: Tree) -> Expression:
        return self._call(node)

    def _iri_or_function(self, node: Tree) -> Expression:
        if len(node.children) == 1:
            return self.expression(node.children[0])
        return self._call(node)

    def _call(self, node: Tree) -> Expression:
        iri_node, args = node.children[0], node.children[1]
        assert isinstance(iri_node, Tree) and isinstance(args, Tree)
        fn = self.expression(iri_node)
        assert isinstance(fn, (Iri, PrefixedName))
        distinct = any(isinstance(t, Token) and str(t).upper() == "DISTINCT" for t in args.children)
        return FunctionCall(fn, tuple(self.expression(c) for c in _trees(args)), distinct)

    def _substring_expression(self, node: Tree) -> Expression:
        return FunctionCall("SUBSTR", tuple(self.expression(c) for c in _trees(node)))

    def _str_replace_expression(self, node: Tree) -> Expression:
        return FunctionCall("REPLACE", tuple(self.expression(c) for c in _trees(node)))

    def _regex_expression(self, node: Tree) -> Expression:
        return FunctionCall("REGEX", tuple(self.expression(c) for c in _trees(node)))

    def _exists_func(self, node: Tree) -> Expression:
        return self._exists(node, False)

    def _not_exists_func(self, node: Tree) -> Expression:
        return self._exists(node, True)

    def _exists(self, node: Tree, negated: bool) -> Expression:
        group = _trees(node)[-1]
        names = frozenset(str(t)[1:] for t in group.scan_values(
            lambda v: isinstance(v, Token) and v.type in ("VAR1", "VAR2")))
        return Exists(self.text[start_of(group):end_of(group)], negated, names)

    def _aggregate(self, node: Tree) -> Expression:
        toks = [c for c in node.children if isinstance(c, Token)]
        name = str(toks[0]).upper()
        distinct = any(str(t).upper() == "DISTINCT" for t in toks)
        exprs = [c for c in _trees(node) if c.data == "expression"]
        sep = next((c for c in _trees(node) if c.data == "string"), None)
        return Aggregate(name, self.expression(exprs[0]) if exprs else None, distinct,
                         None if sep is None else self._lexical(sep))

    # ------------------------------------------------------------ terms

    def _var(self, node: Tree) -> Expression:
        return Variable(str(node.children[0])[1:])

    def _iri(self, node: Tree) -> Expression:
        c = node.children[0]
        if isinstance(c, Tree):  # prefixed_name
            c = c.children[0]
        assert isinstance(c, Token)
        if c.type == "IRIREF":
            return Iri(unescape(str(c)[1:-1]))
        prefix, _, local = str(c).partition(":")
        return PrefixedName(prefix, local)

    def _rdf_literal(self, node: Tree) -> Expression:
        string, *rest = _trees(node)
        lexical = self._lexical(string)
        if not rest:
            return Literal(lexical)
        tag = rest[0]
        if tag.data == "langtag":
            return Literal(lexical, language=str(tag.children[0])[1:])
        dt = self.expression(_trees(tag)[0])
        assert isinstance(dt, (Iri, PrefixedName))
        return Literal(lexical, dt)

    @staticmethod
    def _lexical(node: Tree) -> str:
        tok = str(node.children[0])
        q = 3 if tok[:3] in ('"""', "'''") else 1
        return unescape(tok[q:-q])

    def _numeric_literal(self, node: Tree) -> Expression:
        tok = _trees(node)[0].children[0]
        assert isinstance(tok, Token)
        text = str(tok)
        if text[0] not in "+-":
            return Literal(text, Iri(_NUMBER_TYPES[tok.type]))
        # a signed number is its sign applied to the unsigned one, as Oxigraph reads it
        # (-9223372036854775808 overflows there), not one literal
        number = Literal(text[1:], Iri(_NUMBER_TYPES[tok.type.split("_")[0]]))
        return UnaryMinus(number) if text[0] == "-" else UnaryPlus(number)

    def _boolean_literal(self, node: Tree) -> Expression:
        word = _trees(node)[0].data  # true | false
        return Literal(str(word), _BOOLEAN)


# the rules read, by name
_RULES: dict[str, Callable[[ExpressionReader, Tree], Expression]] = {
    name: getattr(ExpressionReader, "_" + name) for name in (
        "conditional_or_expression", "conditional_and_expression", "relational_expression",
        "additive_expression", "multiplicative_expression", "unary_expression", "built_in_call",
        "function_call", "iri_or_function", "substring_expression", "str_replace_expression",
        "regex_expression", "exists_func", "not_exists_func", "aggregate", "var", "iri",
        "rdf_literal", "numeric_literal", "boolean_literal")}
# rules whose one child is the expression
_PASS_THROUGH = frozenset({"expression", "value_logical", "numeric_expression",
                           "bracketted_expression", "primary_expression", "constraint"})


def variable_extension(name: str) -> Extension:
    """A built-in read as a variable (EP-SPARQL's time functions: Sec. 4.2's sigma)."""
    return lambda reader, node: Variable(name)


def call_extension(name: str) -> Extension:
    """A built-in read as a call of ``name`` with its arguments (C-SPARQL's timestamp())."""
    return lambda reader, node: FunctionCall(
        name, tuple(reader.expression(c) for c in _trees(node)))


# The shared grammar's own extension (rsep_ext.lark)
RSP_EXTENSIONS: dict[str, Extension] = {"timestamp_call": call_extension("TIMESTAMP")}


def group_filters(pattern: str, prologue: str = "") -> tuple[Constraint, ...]:
    """The FILTERs at the top level of a group graph pattern given as text, in order."""
    query = f"{prologue}\nSELECT * WHERE {pattern}"
    where = next(parse_tree(query).find_data("where_clause"))
    sub = where.children[-1].children[0]
    reader = ExpressionReader(query, RSP_EXTENSIONS)
    out = []
    for other in _trees(sub):
        if other.data == "group_graph_pattern_sub_other":
            f = other.children[0].children[0]  # graph_pattern_not_triples's
            if isinstance(f, Tree) and f.data == "filter":
                out.append(reader.constraint(f, prologue))
    return tuple(out)


def parse_expression(text: str, prologue: str = "") -> Expression:
    """An expression given as text alone (with the prologue its names need): read as the
    FILTER of a query of the shared grammar."""
    query = f"{prologue}\nSELECT * WHERE {{ FILTER ({text}\n) }}"
    tree = parse_tree(query)
    f = next(tree.find_data("filter"))
    c = ExpressionReader(query, RSP_EXTENSIONS).constraint(f)
    return c.expr
