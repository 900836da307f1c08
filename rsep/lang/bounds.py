"""Bounds on a query's size and shape, checked before any evaluator sees it (issue 52).

pyoxigraph parses and evaluates a query by recursion on the native stack: ~6,300 UNION
branches, ~2,500 BINDs, ~2,100 nested groups or ~4,300 nested parentheses overflow an
8 MiB stack and the process dies (SIGSEGV); rsep's own analyses recurse in Python over the
same shapes. So every query text, in every dialect (rsep.lang.parser.parse_with), is
checked twice: its size before it is parsed, then its parse tree (walked without recursion)
for the bracket nesting depth and the number of patterns and operands, each refusal a
QueryError located at the place that goes over. The defaults (:data:`DEFAULT`) admit any
hand-written query by a wide margin and keep pyoxigraph at most 1/2 of the way to its
overflow on an 8 MiB stack; ``rsep run --max-query-bytes / --max-query-depth /
--max-query-patterns`` change them (:func:`configure`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lark import Token, Tree

from rsep.lang.errors import QueryError, position


@dataclass(frozen=True)
class QueryBounds:
    # Lark's parse time grows faster than the text (a 170 KB VALUES block: ~3 s, a 90 KB
    # UNION of 4,000 branches: ~6 s), so the size bound keeps the parse to seconds
    max_bytes: int = 256 << 10
    # "{", "(" and "[" open a level (a group, an expression, a collection, a blank node);
    # the parse tree is ~11 levels deeper for each parenthesis, which Python walks recurse on
    max_depth: int = 64
    # triple patterns, UNION branches, BIND / FILTER / OPTIONAL / MINUS and the operands
    # of a chain of operators: each one level of pyoxigraph's algebra (a left-deep join,
    # extension or conjunction), whose evaluation recurses on them
    max_patterns: int = 1000
    # what one group joins: its triple patterns, OPTIONALs and inner groups (GRAPH, WINDOW,
    # MINUS, sub-SELECT; not a UNION's or SEQ's later branches): pyoxigraph's planning of a
    # group's joins grows ~n^4 in them, on an empty store too (triple patterns 64: 0.9 s,
    # 128: 10 s; OPTIONALs 64: 0.2 s, 128: 3 s, 150: 5.5 s, 900: over 3 minutes)
    max_triples: int = 100


DEFAULT = QueryBounds()
_bounds = DEFAULT


def configure(bounds: QueryBounds) -> None:
    """The bounds for every query parsed from now on in this process (rsep run's flags)."""
    global _bounds
    _bounds = bounds


def current() -> QueryBounds:
    return _bounds


# Lark keeps only the named terminals in a tree (IRIs, strings, names, keywords): the
# punctuation ("{", "(", ".", "&&"...) is dropped, and stands in the gaps between the kept
# tokens, with nothing else but white space and comments (strings and IRIs, which may hold
# any character, are tokens). So the gaps give the brackets and operators exactly.
_COMMENT = re.compile(r"#[^\n\r]*")
_GAP = re.compile(r"[{(\[]|[})\]]|&&|\|\||!=|<=|>=|[.;,+\-*/|^!]")
_OPEN = frozenset("{([")
_CLOSE = frozenset("})]")
_NOT_COUNTED = frozenset(("!=", "<=", ">="))  # comparisons do not chain
# The keywords each of which adds one pattern or operand, as punctuation in the gaps does:
# "." ";" "," between triple patterns, the operators that chain (a chain of n operands
# has n - 1 of them; a unary one is a level of the expression too).
_KEYWORDS = frozenset({
    "UNION", "BIND", "FILTER", "OPTIONAL", "MINUS", "GRAPH", "SERVICE", "VALUES", "EXISTS",
    "AND", "OR", "SEQ", "OPTIONALSEQ", "EQUALS", "EQUALSOPTIONAL", "FOLLOWEDBY", "WINDOW",
    "STREAM", "EVENT"})


# the keywords after which a group is an operator's operand, not a member of the group
# around it that pyoxigraph joins (a UNION of any number of branches is planned at once)
_BRANCHES = frozenset({"UNION", "SEQ", "OPTIONALSEQ", "EQUALS", "EQUALSOPTIONAL", "AND", "OR",
                       "FOLLOWEDBY"})


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_size(text: str, source: str | None) -> None:
    """Refuse a text over the size bound, or one that is not Unicode (a lone surrogate,
    which pyoxigraph cannot take: it failed with an AttributeError), before anything reads it."""
    if (m := _SURROGATE.search(text)) is not None:
        line, col = position(text, m.start())
        raise QueryError(f"the query holds U+{ord(m.group()):04X}, a lone surrogate, not a "
                         "character", line, col, source)
    limit = _bounds.max_bytes
    if len(text) > limit or len(text.encode("utf-8", "surrogatepass")) > limit:
        raise QueryError(f"the query is {len(text.encode('utf-8', 'surrogatepass')):,} bytes, "
                         f"over the limit of {limit:,} (--max-query-bytes)", 1, 1, source)


# The text's strings, IRIs and comments (skipped) and its punctuation and words: a linear
# pre-scan, so that a text far over the pattern bound is refused before Lark's parse, whose
# time grows faster than the text. It counts the keywords and the separators "." ";" ","
# "&&" "||" only, each of which the tree check counts too (it may miss one, after a "<"
# read as an IRI's start, never add one), so what it refuses the tree check would refuse.
_SCAN = re.compile(r"""("{3}(?:[^"\\]|\\.|"(?!""))*"{3}|'{3}(?:[^'\\]|\\.|'(?!''))*'{3}"""
                   r"""|"(?:[^"\\\n\r]|\\.)*"|'(?:[^'\\\n\r]|\\.)*'"""
                   r"""|<[^<>"{}|^`\\\x00-\x20]*>|#[^\n\r]*"""
                   r"|[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"
                   r"|([?$:]?[A-Za-z_][\w\-]*(?:\.[\w\-]+)*:?(?:[\w\-]+(?:\.[\w\-]+)*)?)"
                   r"|(&&|\|\||[.;,])")


def prescan(text: str, source: str | None) -> None:
    """Refuse a text whose patterns and operands, counted lexically, pass the bound."""
    limit = _bounds.max_patterns
    n = 0
    for m in _SCAN.finditer(text):
        word = m.group(2)
        if word is not None:
            if word.upper() not in _KEYWORDS:
                continue
        elif m.group(3) is None:
            continue
        n += 1
        if n > limit:
            line, col = position(text, m.start())
            raise QueryError(f"the query has more than {limit:,} patterns and operands "
                             "(triple patterns, UNION branches, BIND, FILTER, operators); "
                             "this is the next (--max-query-patterns)", line, col, source)


def check_tree(tree: Tree[Any], text: str, source: str | None) -> None:
    """Refuse a parse tree over the depth or pattern bounds, located where it goes over.
    Its tokens are visited in text order by an explicit stack (no recursion on its depth),
    and the dropped punctuation read from the text between them."""
    b = _bounds
    depth = patterns = 0
    stack: list[Any] = [tree]
    at = 0  # where the last kept token ended
    # the open brackets, innermost last, and the members of each open group (its triple
    # patterns, counted by their separators, and the groups opened in it)
    opened: list[str] = []
    triples: list[int] = []
    closed = False  # the last thing read was a "}" (a "." after a group separates no triples)
    branch = False  # the last thing read was an operator whose operands are groups (UNION...)

    def member(offset: int) -> None:
        triples[-1] += 1
        if triples[-1] > b.max_triples:
            line, col = position(text, offset)
            raise QueryError(f"this group joins more than {b.max_triples} triple patterns, "
                             "OPTIONALs and groups (--max-query-triples): pyoxigraph's "
                             "planning of a group's joins grows steeply with their number",
                             line, col, source)

    def gap(end: int) -> None:
        nonlocal depth, patterns, closed, branch
        if end <= at:
            return
        between = text[at:end]
        if "#" in between:  # (a comment's text blanked, offsets kept)
            between = _COMMENT.sub(lambda m: " " * len(m.group()), between)
        for m in _GAP.finditer(between):
            v = m.group()
            if v in _OPEN:
                if v == "{" and opened and opened[-1] == "{" and not branch:
                    member(at + m.start())
                depth += 1
                opened.append(v)
                triples.append(1 if v == "{" else 0)
                if depth > b.max_depth:
                    line, col = position(text, at + m.start())
                    raise QueryError(f"the query nests deeper than {b.max_depth} levels of "
                                     "'{', '(' or '[' here (--max-query-depth)", line, col,
                                     source)
            elif v in _CLOSE:
                depth -= 1
                if opened:
                    opened.pop()
                    triples.pop()
            elif v not in _NOT_COUNTED:
                count(at + m.start())
                if v in ".;," and opened and opened[-1] == "{" and not closed:
                    member(at + m.start())
            closed = v == "}"
            branch = False

    def count(offset: int) -> None:
        nonlocal patterns
        patterns += 1
        if patterns > b.max_patterns:
            line, col = position(text, offset)
            raise QueryError(f"the query has more than {b.max_patterns:,} patterns and operands "
                             "(triple patterns, UNION branches, BIND, FILTER, operators); "
                             "this is the next (--max-query-patterns)", line, col, source)

    while stack:
        node = stack.pop()
        if isinstance(node, Tree):
            stack.extend(reversed(node.children))
            continue
        if not isinstance(node, Token) or node.start_pos is None or node.end_pos is None:
            continue
        gap(node.start_pos)
        at = max(at, node.end_pos)
        word = str(node).upper()
        closed = False
        branch = word in _BRANCHES
        if word in _KEYWORDS:
            count(node.start_pos)
    gap(len(text))
