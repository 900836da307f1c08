"""The shared grammar: SPARQL 1.1 (sparqlib's Lark grammar) extended with RSP syntax.

LALR with Lark's contextual lexer: ~ms per query once warm. Syntax errors come
out as QueryError with line, column and the expected tokens in words.
"""

from __future__ import annotations

import functools
import importlib.util
from importlib.resources import files
from pathlib import Path
from typing import Any

from lark import Lark, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

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


def sparql_grammar() -> str:
    """sparqlib's SPARQL 1.1 grammar text.

    find_spec locates the package without running its __init__, which builds
    sparqlib's own Earley parser (seconds) that rsep never uses.
    """
    spec = importlib.util.find_spec("sparqlib")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover
        return files("sparqlib").joinpath("grammar.lark").read_text(encoding="utf-8")
    return (Path(next(iter(spec.submodule_search_locations))) / "grammar.lark").read_text(encoding="utf-8")


def sparql_lalr(extension: str, start: str) -> Lark:
    """An LALR parser for SPARQL 1.1 extended by a dialect's grammar text."""
    return Lark(sparql_grammar() + "\n" + extension, start=start, parser="lalr",
                propagate_positions=True, maybe_placeholders=False, cache=True)


@functools.cache
def parser() -> Lark:
    base = sparql_grammar()
    ext = files("rsep.lang").joinpath("rsep_ext.lark").read_text(encoding="utf-8")
    return Lark(
        base + "\n" + ext,
        start="rsp_unit",
        parser="lalr",
        propagate_positions=True,
        maybe_placeholders=False,
        cache=True,
    )


def _expected(e: UnexpectedInput, p: Lark, extra: dict[str, str] | None = None) -> str:
    names: set[str] = set(getattr(e, "expected", None) or getattr(e, "allowed", None) or [])
    words: list[str] = []
    for n in sorted(names):
        term = p.get_terminal(n) if n in {t.name for t in p.terminals} else None
        w = _readable(n, extra)
        if not w and term is not None:
            pat = term.pattern.value
            w = pat.strip("/").removesuffix("/i") if len(pat) < 24 else ""
            w = w.upper() if w.isalpha() else (f"'{w}'" if w else "")
        if w and w not in words:
            words.append(w)
    if not words:
        return ""
    if len(words) > 12:
        return "expected one of " + ", ".join(words[:12]) + f", ... ({len(words)} in all)"
    return "expected " + (words[0] if len(words) == 1 else "one of " + ", ".join(words))


def parse_with(p: Lark, text: str, source: str | None = None,
               words: dict[str, str] | None = None) -> Tree[Any]:
    """Parse with any of rsep's grammars; errors become located QueryErrors in words.

    ``words`` names a dialect's own terminals for the "expected ..." part.
    """
    try:
        return p.parse(text)
    except UnexpectedToken as e:
        tok = e.token
        what = "end of query" if tok.type == "$END" else repr(str(tok))
        exp = _expected(e, p, words)
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


def parse_tree(text: str, source: str | None = None) -> Tree[Any]:
    """Parse RSP-QL / C-SPARQL / CQELS text with the shared grammar."""
    return parse_with(parser(), text, source)
