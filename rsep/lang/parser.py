"""The shared grammar: SPARQL 1.1 (sparqlib's Lark grammar) extended with RSP syntax.

LALR with Lark's contextual lexer: ~ms per query once warm. Syntax errors come
out as QueryError with line, column and the expected tokens in words.
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]  # CPython's regex engine (engine_code)
import functools
import gc
import hashlib
import importlib
import importlib.util
import io
import pickle
import re
import sys
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import lark
from lark import Lark, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import BasicLexer, ContextualLexer, PatternStr, Token
from lark.parsers import lalr_analysis

from rsep.cache import cache_dir, write_atomically
from rsep.lang.bounds import check_size, check_tree, prescan
from rsep.lang.errors import QueryError

READABLE = {
    "IRIREF": "an IRI", "PNAME_LN": "a prefixed name", "PNAME_NS": "a prefix",
    "VAR1": "a variable", "VAR2": "a variable", "INTEGER": "an integer",
    "LEFT_CURLY_BRACE": "'{'", "RIGHT_CURLY_BRACE": "'}'", "LBRACE": "'{'", "RBRACE": "'}'",
    "LEFT_PARENTHESIS": "'('", "RIGHT_PARENTHESIS": "')'", "LPAR": "'('", "RPAR": "')'",
    "LSQB": "'['", "RSQB": "']'", "DOT": "'.'", "COMMA": "','", "SEMICOLON": "';'",
    "STRING_LITERAL1": "a string", "STRING_LITERAL2": "a string", "STRING_LITERAL_LONG1": "a string",
    "STRING_LITERAL_LONG2": "a string", "DURATION_UNIT": "a duration (e.g. 5s)",
    "DURATION_ISO": "a duration (e.g. PT5S)", "R2S_OP": "RSTREAM, ISTREAM or DSTREAM",
    "QUERY_NAME": "a query name", "BLANK_NODE_LABEL": "a blank node", "ANON": "'[]'", "NIL": "'()'",
    "A": "'a'", "DOUBLE": "a number", "DECIMAL": "a number", "TRUE": "true", "FALSE": "false",
    "$END": "end of query",
    **{f"{k}{s}": "a number" for k in ("INTEGER", "DECIMAL", "DOUBLE") for s in ("_POSITIVE", "_NEGATIVE")},
}


def _readable(name: str, words: dict[str, str] | None = None) -> str:
    if words and name in words:
        return words[name]
    if name in READABLE:
        return READABLE[name]
    if name.startswith("KW_"):
        return name[3:]
    if name.startswith("__ANON") or name.startswith("__"):
        return ""
    return name.lower().replace("_", " ")


# SPARQL 1.1's name characters (grammar rules 164-166, 166's VARNAME) as code-point ranges.
# sparqlib writes each as an alternation of classes, which Python's regex compiler expands
# character by character (~50,000 per use, ~16 uses in every lexer state's pattern): that was
# most of a run's start-up. The same sets written as one negated class (their complement is
# 5x smaller) compile in a fraction of the time; tests/lang/test_parser_startup.py proves them
# equal on every code point.
PN_CHARS_BASE = ((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x2FF),
                 (0x370, 0x37D), (0x37F, 0x1FFF), (0x200C, 0x200D), (0x2070, 0x218F),
                 (0x2C00, 0x2FEF), (0x3001, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFFD),
                 (0x10000, 0xEFFFF))
PN_CHARS_U = PN_CHARS_BASE + ((0x5F, 0x5F),)
# VARNAME's later characters: PN_CHARS without '-'
VARNAME_CHARS = PN_CHARS_U + ((0x30, 0x39), (0xB7, 0xB7), (0x300, 0x36F), (0x203F, 0x2040))
PN_CHARS = VARNAME_CHARS + ((0x2D, 0x2D),)


def negated_class(ranges: tuple[tuple[int, int], ...]) -> str:
    """A regex class matching exactly the code points in ``ranges``, written as the
    negation of their complement (every code point escaped)."""
    def esc(c: int) -> str:
        return f"\\u{c:04X}" if c <= 0xFFFF else f"\\U{c:08X}"

    gaps, nxt = [], 0
    for lo, hi in sorted(ranges):
        if lo > nxt:
            gaps.append((nxt, lo - 1))
        nxt = max(nxt, hi + 1)
    if nxt <= 0x10FFFF:
        gaps.append((nxt, 0x10FFFF))
    return "[^" + "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in gaps) + "]"


NAME_CHARS = f"""
%override PN_CHARS_BASE: /{negated_class(PN_CHARS_BASE)}/
%override PN_CHARS_U: /{negated_class(PN_CHARS_U)}/
%override PN_CHARS: /{negated_class(PN_CHARS)}/
%override VARNAME: /{negated_class(PN_CHARS_U + ((0x30, 0x39),))}{negated_class(VARNAME_CHARS)}*/
"""


# SPARQL 1.1's short strings (grammar rules 156-157). sparqlib writes their character class
# as [^\u0027\u005C\u000A\u000D], which Lark turns into [^'\<LF><CR>]: the backslash then
# escapes the newline, so the class admits "\\" and a run of backslashes reads as single
# characters or as escapes in every way: ~3x the time for each two more (30 in a failing
# string: 1.3 s, 60 hung a fuzzed query past 3 minutes). Here a backslash always takes the
# character after it (one reading, linear); pyoxigraph's check names an escape that is not
# one (ECHAR, UCHAR) where it stands, as it did.
STRINGS = r"""
%override STRING_LITERAL1: /'(?:[^'\\\n\r]|\\[^\n\r])*'/
%override STRING_LITERAL2: /"(?:[^"\\\n\r]|\\[^\n\r])*"/
"""


def sparql_grammar() -> str:
    """sparqlib's SPARQL 1.1 grammar text, its name characters written as single classes
    (``NAME_CHARS``), and its short strings lexed in one way (``STRINGS``).

    find_spec locates the package without running its __init__, which builds
    sparqlib's own Earley parser (seconds) that rsep never uses.
    """
    spec = importlib.util.find_spec("sparqlib")
    assert spec is not None and spec.submodule_search_locations  # (a dependency)
    text = (Path(next(iter(spec.submodule_search_locations))) / "grammar.lark").read_text(
        encoding="utf-8")
    return text + "\n" + NAME_CHARS + STRINGS


class _Hit:
    """What Lark's scanner reads of a match: the text and the terminal's name."""

    __slots__ = ("text", "lastgroup")

    def __init__(self, text: str, name: str) -> None:
        self.text, self.lastgroup = text, name

    def group(self, _: int = 0) -> str:
        return self.text


def engine_code(pattern: str, flags: int) -> tuple[Any, ...] | None:
    """What ``re.compile(pattern, flags)`` hands the regex engine (``_sre.compile``'s
    arguments, re._compiler.compile's in CPython 3.11-3.13): parsing the pattern and
    compiling it to the engine's code is nearly all of re.compile's time, and SPARQL's name
    terminals take ~2 ms each. None if this Python's ``re`` works otherwise, or the pattern
    made of them is not re.compile's."""
    try:
        from re import _compiler, _parser  # type: ignore[attr-defined]

        tree = _parser.parse(pattern, flags)
        groupindex = dict(tree.state.groupdict)
        indexgroup: list[str | None] = [None] * tree.state.groups
        for name, i in groupindex.items():
            indexgroup[i] = name
        args = (pattern, int(flags | tree.state.flags),
                [int(c) for c in _compiler._code(tree, flags)], tree.state.groups - 1,
                groupindex, tuple(indexgroup))
        rx, want = _sre.compile(*args), re.compile(pattern, flags)
    except Exception:  # another implementation of re
        return None
    if (rx.pattern, rx.flags, rx.groups, rx.groupindex) != (
            want.pattern, want.flags, want.groups, want.groupindex):
        return None
    return args


class _Regex:
    """A terminal's pattern, compiled when first tried: a parser loaded from the cache
    compiles only the terminals its queries reach, each from the engine's code computed
    when the parser was built (:func:`engine_code`) where there is one."""

    __slots__ = ("pattern", "flags", "code", "rx")

    def __init__(self, pattern: str, flags: int, code: tuple[Any, ...] | None = None) -> None:
        self.pattern, self.flags, self.code = pattern, flags, code
        self.rx: re.Pattern[str] | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        return _Regex, (self.pattern, self.flags, self.code)

    def compiled(self) -> re.Pattern[str]:
        if self.rx is None:
            if self.code is not None:
                try:
                    self.rx = _sre.compile(*self.code)
                except Exception:  # a cache file from another build of this Python
                    self.code = None
            if self.rx is None:
                self.rx = re.compile(self.pattern, self.flags)
        return self.rx


class _InOrder:
    """A lexer state's alternation ``(?P<T1>r1)|(?P<T2>r2)|...`` as its terminals' own
    patterns tried in the same order: the first that matches wins, as in the alternation
    (nothing follows it, so no later alternative is ever tried once one has matched)."""

    def __init__(self, parts: Iterable[tuple[str, _Regex]]) -> None:
        self.parts = tuple(parts)

    def match(self, text: str, pos: int = 0, end: int = 2**63 - 1) -> _Hit | None:
        for name, rx in self.parts:
            m = rx.compiled().match(text, pos, end)
            if m:
                return _Hit(m.group(0), name)
        return None

    def fullmatch(self, text: str) -> _Hit | None:
        for name, rx in self.parts:
            if rx.compiled().fullmatch(text):
                return _Hit(text, name)
        return None


class OneByOne:
    """The ``re`` module as Lark's per-state lexers see it, compiling each terminal once.

    Lark's contextual lexer compiles, for every parser state it reaches, one alternation
    of the terminals that state accepts: the name terminals (prefixed names, variables)
    are in nearly all of them, so a short query compiled them ~24 times, most of a run's
    start-up. Here each terminal's pattern is compiled once, when first tried
    (:class:`_Regex`), and a state's alternation is the ordered list of them
    (:class:`_InOrder`); anything else goes to ``re`` itself.
    tests/lang/test_parser_startup.py parses every query the tests hold both ways and
    compares the trees."""

    error = re.error

    def __init__(self, regexps: dict[str, str]) -> None:
        self.regexps = regexps
        self.matches: dict[tuple[str, str, int], re.Match[str] | None] = {}
        # one per (pattern, flags), shared by every state: compiled once, pickled once
        self.terms: dict[tuple[str, int], _Regex] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return OneByOne, (self.regexps,)  # the memos hold matches, which do not pickle

    def match(self, pattern: str, string: str, flags: int = 0) -> re.Match[str] | None:
        # Lark asks every state's lexer which keywords each of its regexps also matches:
        # the same ~500 questions in every state
        key = (pattern, string, flags)
        if key not in self.matches:
            self.matches[key] = re.match(pattern, string, flags)
        return self.matches[key]

    def compile(self, pattern: str, flags: int = 0) -> re.Pattern[str] | _InOrder:
        parts = self.split(pattern)
        if parts is None:
            return re.compile(pattern, flags)
        return _InOrder((name, self.terms.setdefault((rx, flags), _Regex(rx, flags)))
                        for name, rx in parts)

    def split(self, pattern: str) -> list[tuple[str, str]] | None:
        """The (terminal, pattern) alternatives of a lexer's alternation; None for any
        other pattern."""
        out, pos = [], 0
        while True:
            if not pattern.startswith("(?P<", pos):
                return None
            close = pattern.find(">", pos)
            name = pattern[pos + 4:close]
            rx = self.regexps.get(name)
            if close < 0 or rx is None or not pattern.startswith(rx + ")", close + 1):
                return None
            out.append((name, rx))
            pos = close + 1 + len(rx) + 1
            if pos == len(pattern):
                return out
            if pattern[pos] != "|":
                return None
            pos += 1


def lex_one_by_one(p: Lark) -> Lark:
    """``p`` with its contextual lexer compiling each terminal once (:class:`OneByOne`)."""
    lexer = p.parser.lexer
    if isinstance(lexer, ContextualLexer):
        one = OneByOne({t.name: t.pattern.to_regexp() for t in p.terminals})
        for basic in (*lexer.lexers.values(), lexer.root_lexer):
            if isinstance(basic, BasicLexer):
                basic.re = one  # type: ignore[assignment]
    return p


def prepared(p: Lark) -> Lark:
    """``p`` as the cache keeps it: lexing terminal by terminal (:func:`lex_one_by_one`),
    with every lexer state's scanner built (Lark builds a state's on the first parse that
    reaches it, asking of every regexp terminal which keywords it also matches: most of a
    first parse) and the engine's code of every terminal's pattern (:func:`engine_code`),
    and the parse table's ~38,000 actions sharing their ~1,300 distinct (action, argument)
    pairs (a third less to unpickle)."""
    lexer = lex_one_by_one(p).parser.lexer
    if isinstance(lexer, ContextualLexer):
        for basic in {id(b): b for b in (*lexer.lexers.values(), lexer.root_lexer)}.values():
            if isinstance(basic, BasicLexer):
                basic.scanner  # noqa: B018 - builds and keeps it
        one = getattr(lexer.root_lexer, "re", None)  # every state's (lex_one_by_one)
        for rx in one.terms.values() if isinstance(one, OneByOne) else ():
            rx.code = engine_code(rx.pattern, rx.flags)
    table = p.parser.parser.parser.parse_table
    pairs: dict[tuple[Any, Any], tuple[Any, Any]] = {}
    for row in table.states.values():
        for term, (action, arg) in row.items():
            # a Reduce's argument is a Rule, equal to another only if it is that rule
            row[term] = pairs.setdefault((action, arg if type(arg) is int else id(arg)),
                                         (action, arg))
    return p


LALR_OPTIONS: dict[str, Any] = {"parser": "lalr", "propagate_positions": True,
                                "maybe_placeholders": False}
CACHE_FORMAT = 2  # of the files below: a new one never reads an old one's


def cache_file(grammar: str, start: str) -> Path:
    """The file of a built parser, named by everything it is built from."""
    # the regex engine's code (_Regex) is this very build of Python's
    key = repr((CACHE_FORMAT, grammar, start, sorted(LALR_OPTIONS.items()), lark.__version__,
                sys.version, sys.implementation.cache_tag, _sre.MAGIC))
    return cache_dir() / f"lalr-{hashlib.sha256(key.encode()).hexdigest()[:32]}.pickle"


def _bare_lark() -> Lark:
    return Lark.__new__(Lark)


class _Pickler(pickle.Pickler):
    """Pickles a Lark parser whole but for its grammar's analysis (``Lark.grammar``, read only
    while building it): the modules it holds (its ``re``) and the parse table's two actions,
    which the parser compares by identity, by reference."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.ModuleType):
            return importlib.import_module, (obj.__name__,)
        if obj is lalr_analysis.Shift or obj is lalr_analysis.Reduce:
            return getattr, (lalr_analysis, "Shift" if obj is lalr_analysis.Shift else "Reduce")
        if type(obj) is Lark:
            return _bare_lark, (), {k: v for k, v in vars(obj).items() if k != "grammar"}
        return NotImplemented


def sparql_lalr(extension: str, start: str) -> Lark:
    """An LALR parser for SPARQL 1.1 extended by a dialect's grammar text.

    The parser built is :func:`prepared` and pickled whole in :func:`cache_dir` (Lark's own
    cache stores its grammar analysis, which takes twice as long to turn back into a parser:
    most of a tiny run's start-up); any file that does not load is rebuilt, and a cache
    directory that cannot be written is done without."""
    grammar = sparql_grammar() + "\n" + extension
    path = cache_file(grammar, start)
    collecting = gc.isenabled()
    gc.disable()  # ~20,000 containers, none garbage: no collection while they pile up
    try:
        with path.open("rb") as f:
            p = pickle.load(f)
        if isinstance(p, lark.Lark):
            return p
    except Exception:  # none yet, or a damaged or foreign file: (re)built below
        pass
    finally:
        if collecting:
            gc.enable()
    p = prepared(Lark(grammar, start=start, **LALR_OPTIONS))
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(p)
    write_atomically(path, buf.getvalue())
    return p


def grammar_beside(module_file: str, name: str) -> str:
    """A dialect's grammar text, from the file ``name`` beside its module (not through
    importlib.resources, which imports zipfile: ~10 ms of a start)."""
    return (Path(module_file).parent / name).read_text(encoding="utf-8")


@functools.cache
def parser() -> Lark:
    return sparql_lalr(grammar_beside(__file__, "rsep_ext.lark"), "rsp_unit")


def _acceptable(e: UnexpectedInput) -> set[str]:
    """The terminals the parser takes where the error is: the interactive parser's
    ``accepts`` (each tried through the reductions it leads to; the state's own table
    also lists lookaheads whose reductions fail further up), else what the error lists."""
    ip = getattr(e, "interactive_parser", None)
    if ip is not None:
        try:
            return set(ip.accepts())
        except Exception:  # noqa: BLE001 - a parser state it cannot copy: the plain list
            pass
    return set(getattr(e, "expected", None) or getattr(e, "allowed", None) or [])


def _word(name: str, p: Lark, words: dict[str, str] | None) -> str:
    w = _readable(name, words)
    term = p.get_terminal(name) if name in _terminal_names(p) else None
    if term is not None and isinstance(term.pattern, PatternStr) and (
            not w or name not in READABLE and not (words and name in words)):
        # a literal terminal is shown as the text to type (ASTERIX is '*', __ANON_7 BY)
        v = term.pattern.value
        return v.upper() if v.isalpha() else f"'{v}'"
    if not w and term is not None:
        pat = term.pattern.value
        w = pat.strip("/").removesuffix("/i") if len(pat) < 24 else ""
        w = w.upper() if w.isalpha() else (f"'{w}'" if w else "")
    return w


@functools.cache
def _terminal_names(p: Lark) -> frozenset[str]:
    return frozenset(t.name for t in p.terminals)


def _expected(e: UnexpectedInput, p: Lark, extra: dict[str, str] | None = None) -> str:
    words: list[str] = []
    for n in sorted(_acceptable(e)):
        w = _word(n, p, extra)
        if w and w not in words:
            words.append(w)
    if not words:
        return ""
    if len(words) > 12:
        return "expected one of " + ", ".join(words[:12]) + f", ... ({len(words)} in all)"
    return "expected " + (words[0] if len(words) == 1 else "one of " + ", ".join(words))


_CLOSING = {"{": "}", "(": ")", "[": "]"}


def _open_bracket(e: UnexpectedInput) -> Any:
    """The innermost bracket still open where the parse failed: a '{', '(' or '[' token
    shifted and not yet reduced into the group it opens (the parser's value stack holds
    it), or None."""
    ip = getattr(e, "interactive_parser", None)
    stack = getattr(getattr(ip, "parser_state", None), "value_stack", None) or []
    return next((v for v in reversed(stack) if isinstance(v, Token) and str(v) in _CLOSING),
                None)


def parse_with(p: Lark, text: str, source: str | None = None,
               words: dict[str, str] | None = None) -> Tree[Any]:
    """Parse with any of rsep's grammars; errors become located QueryErrors in words.

    ``words`` names a dialect's own terminals for the "expected ..." part. A query that ends
    with a bracket open is reported at that bracket's opening.
    """
    check_size(text, source)
    prescan(text, source)
    try:
        tree = p.parse(text)
    except UnexpectedToken as e:
        tok = e.token
        opened = _open_bracket(e)
        if tok.type == "$END" and opened is not None:
            raise QueryError(f"syntax error: unclosed '{opened}': the query ends (line "
                             f"{text.count(chr(10), 0, len(text.rstrip())) + 1}) before its "
                             f"'{_CLOSING[str(opened)]}'", opened.line, opened.column,
                             source) from None
        what = "end of query" if tok.type == "$END" else repr(str(tok))
        exp = _expected(e, p, words)
        if opened is not None and str(tok) in _CLOSING.values() \
                and str(tok) != _CLOSING[str(opened)]:
            exp += (f" (the '{opened}' at {opened.line}:{opened.column} is still open)"
                    if exp else "")
        raise QueryError(f"syntax error: unexpected {what}" + (f"; {exp}" if exp else ""),
                         e.line if e.line != -1 else None, e.column if e.column != -1 else None,
                         source) from None
    except UnexpectedCharacters as e:
        ch = text[e.pos_in_stream] if e.pos_in_stream is not None and e.pos_in_stream < len(text) else "?"
        exp = _expected(e, p, words)
        raise QueryError(f"syntax error: unexpected character {ch!r}" + (f"; {exp}" if exp else ""),
                         e.line, e.column, source) from None
    except UnexpectedEOF as e:
        raise QueryError("syntax error: the query ends too early; " + _expected(e, p, words),
                         None, None, source) from None
    check_tree(tree, text, source)
    return tree


def parse_tree(text: str, source: str | None = None) -> Tree[Any]:
    """Parse RSP-QL / C-SPARQL / CQELS text with the shared grammar."""
    return parse_with(parser(), text, source)
