"""Steps every dialect takes after reading its own constructs."""

from __future__ import annotations

import re
from collections.abc import Callable

import pyoxigraph as ox
from lark import Token, Tree

from rsep.algebra.dataset import StreamingDataset
from rsep.algebra.query import CSPARQL_TIMESTAMP
from rsep.lang.errors import QueryError, position
from rsep.lang.scope import locate
from rsep.lang.syntax import Syntax, end_of, start_of


def plain_dataset(syn: Syntax, ds: StreamingDataset, skip: set[int]) -> None:
    """FROM / FROM NAMED background graphs; every dataset clause leaves the query text."""
    for clause in syn.dataset_clauses():
        syn.replace(clause, " ")
        if id(clause) in skip or clause.data != "dataset_clause":
            continue
        inner = clause.children[1]
        if inner.data == "default_graph_clause":
            ds.default_graphs.append(syn.iri(inner.children[0]))
        else:
            ds.named_graphs.append(syn.iri(inner.children[1]))


def remove_register(syn: Syntax) -> Tree | None:
    regs = [c for c in syn.tree.children[0].children if c.data.startswith("register_")]
    if len(regs) > 1:
        raise syn.error("only one REGISTER clause per query", regs[1])
    for r in regs:
        syn.replace(r, " ")
    return regs[0] if regs else None


def rewrite_timestamp_calls(syn: Syntax) -> bool:
    calls = syn.nodes("timestamp_call")
    for c in calls:
        syn.replace(c.children[0], f"<{CSPARQL_TIMESTAMP}>")
    return bool(calls) or CSPARQL_TIMESTAMP in syn.text or _uses_prefixed_timestamp(syn)


def _uses_prefixed_timestamp(syn: Syntax) -> bool:
    ns = CSPARQL_TIMESTAMP.rsplit("#", 1)[0] + "#"
    return any(v == ns for v in syn.prefixes.values()) and bool(re.search(r":timestamp\s*\(", syn.text))


def register_name(syn: Syntax, reg: Tree | None) -> str:
    if reg is None:
        return ""
    name = next(c for c in reg.children if isinstance(c, Tree) and c.data == "register_name")
    tok = name.children[0]
    if isinstance(tok, Token) and tok.type == "IRIREF" and syn.base is None:
        return str(tok)[1:-1]  # names the output, not data: <out> stays "out" with no BASE
    return syn.iri(name)


_OX_POS = re.compile(r"error at (\d+):(\d+): ?(.*)", re.S)


class NoAggregate:
    """A stand-in for an extension aggregate while the query is only checked: pyoxigraph
    reads ``iri(DISTINCT ...)`` as an aggregate only when one is registered. No query
    that calls one runs: registration refuses it (see :func:`extension_calls`)."""

    def accumulate(self, term: object) -> None:
        return None

    def finish(self) -> None:
        return None


def _stand_in(*args: object) -> None:
    return None


_IMPLEMENTED: dict[str, bool] = {}


def pyoxigraph_implements(iri: str) -> bool:
    """Whether pyoxigraph evaluates a call to the function ``iri`` itself (the XSD
    constructor functions, GeoSPARQL's, ...), asked of pyoxigraph once per IRI: with no
    custom function for it, a call to an IRI it does not implement fails as the query is
    prepared ("The custom function <iri> is not supported"); one it implements is prepared
    (an argument of the wrong type or count gives an error value or another message)."""
    known = _IMPLEMENTED.get(iri)
    if known is None:
        try:
            ox.Store().query(f"SELECT (<{iri}>(?x) AS ?y) {{}}")
            known = True
        except RuntimeError as e:
            known = "is not supported" not in str(e)
        except SyntaxError:
            known = False
        _IMPLEMENTED[iri] = known
    return known


def refuse_unknown_calls(tree: Tree, iri: Callable[[Tree], str],
                         error: Callable[[str, Tree], Exception]) -> None:
    """For the dialects whose runtimes pass pyoxigraph no custom function (SPASEQ,
    EP-SPARQL): the first call to a function or aggregate no one implements, refused where
    it stands."""
    for node in tree.iter_subtrees_topdown():
        if node.data not in ("iri_or_function", "function_call") or len(node.children) < 2:
            continue
        name = iri(node.children[0])
        args = node.children[1]
        if any(isinstance(c, Token) and c.type == "DISTINCT" for c in args.children):
            raise error(f"unknown aggregate <{name}>: neither pyoxigraph nor rsep implements it", node)
        if not pyoxigraph_implements(name):
            raise error(f"unknown function <{name}>: neither pyoxigraph nor rsep implements it", node)


def extension_calls(syn: Syntax) -> list[tuple[str, str, Tree]]:
    """Calls ``iri(...)`` to functions pyoxigraph does not implement, as (kind, IRI,
    node), kind "function" or "aggregate" (called with DISTINCT: oxigraph reads only
    registered aggregates, and implements none by IRI), in text order. C-SPARQL's
    timestamp() is not among them: rsep implements it."""
    calls = []
    for node in syn.tree.iter_subtrees_topdown():
        if node.data not in ("iri_or_function", "function_call") or len(node.children) < 2:
            continue
        iri = syn.iri(node.children[0])
        args = node.children[1]
        if any(isinstance(c, Token) and c.type == "DISTINCT" for c in args.children):
            calls.append(("aggregate", iri, node))
        elif iri != CSPARQL_TIMESTAMP and not pyoxigraph_implements(iri):
            calls.append(("function", iri, node))
    return sorted(calls, key=lambda c: start_of(c[2]))


def _extensions(syn: Syntax) -> tuple[dict, dict]:
    """Stand-ins for the extension functions and aggregates the query calls, so that
    validation checks the query and not whether anyone implements them (registration
    refuses those). Functions pyoxigraph implements get none: a custom function
    overrides pyoxigraph's own of the same IRI."""
    functions: dict = {ox.NamedNode(CSPARQL_TIMESTAMP): _stand_in}
    aggregates: dict = {}
    for kind, iri, _ in extension_calls(syn):
        if kind == "aggregate":
            aggregates[ox.NamedNode(iri)] = NoAggregate
        else:
            functions[ox.NamedNode(iri)] = _stand_in
    return functions, aggregates


def _services_as_graphs(syn: Syntax) -> list[tuple[int, int, str]]:
    """``SERVICE [SILENT] x { P }`` read as ``GRAPH x { P }``: the same syntax and
    scoping, checked without reaching the network."""
    edits = []
    for node in syn.services:
        target = next(c for c in node.children if isinstance(c, Tree) and c.data == "var_or_iri")
        edits.append((start_of(node), start_of(target), "GRAPH "))
    return edits


def _distinct_of_extension_aggregates(syn: Syntax) -> list[tuple[int, int, str]]:
    """pyoxigraph 0.5.13 reads ``iri(DISTINCT ...)`` as a syntax error even with an
    aggregate registered for iri: checked without the DISTINCT (as the aggregate it is)."""
    return [(start_of(c), end_of(c), " " * len(c)) for kind, _, node in extension_calls(syn)
            if kind == "aggregate" for c in node.children[1].children
            if isinstance(c, Token) and c.type == "DISTINCT"]


def _ox_message(what: str) -> str:
    """pyoxigraph's parse errors list what it expected; the semantic checks it makes
    while parsing appear in that list as sentences: keep those."""
    items = what.removeprefix("expected one of ").removeprefix("expected ").split(", ")
    sentences = [i.strip() for i in items
                 if i.count(" ") >= 2 and i[:1] not in "[\"'(" and " ..= " not in i]
    if sentences:
        return "; ".join(sentences)
    return what


def validate_sparql(syn: Syntax, sparql: str) -> None:
    """Let pyoxigraph check what the grammar does not (scoping, aggregates, ...).

    The rewritten text is executed once against an empty store: cheap, and the
    exact checks the evaluator will apply. SERVICE patterns are checked as GRAPH
    patterns, never executed.
    """
    extra = _services_as_graphs(syn) + _distinct_of_extension_aggregates(syn)
    checked = syn.rewritten(extra) if extra else sparql
    functions, aggregates = _extensions(syn)
    line: int | None
    col: int | None
    try:
        res = ox.Store().query(checked, custom_functions=functions,
                               custom_aggregate_functions=aggregates)
        if not isinstance(res, ox.QueryBoolean):
            for _ in res:
                break
    except SyntaxError as e:
        msg = str(e)
        m = _OX_POS.match(msg)
        if m:
            line, col, what = int(m.group(1)), int(m.group(2)), m.group(3)
            off = _offset(checked, line, col)
            line, col = position(syn.text, _map_back(syn, off, extra))
            what = _ox_message(what)
            # A scoping or grouping rule is reported where its pattern ends: point at the culprit.
            found = sorted(locate(syn.tree), key=lambda f: start_of(f[0]))
            if found:
                node, what = found[0]
                line, col = position(syn.text, start_of(node))
            raise QueryError(f"invalid query: {what}", line, col, syn.source) from None
        raise QueryError(f"invalid query: {msg}", source=syn.source) from None
    except RuntimeError as e:
        # e.g. "The custom function <xsd:double> requires between 1 and 1 arguments": at its call
        m = re.match(r"The custom function <([^>]*)>", str(e))
        calls = [n for n in syn.tree.iter_subtrees_topdown()
                 if m and n.data in ("iri_or_function", "function_call") and len(n.children) > 1
                 and syn.iri(n.children[0]) == m.group(1)]
        line, col = position(syn.text, start_of(calls[0])) if calls else (None, None)
        raise QueryError(f"invalid query: {e}", line, col, syn.source) from None
    except (OSError, ValueError, TypeError):
        # Evaluation errors on an empty store say nothing about the query's validity.
        pass


def _offset(text: str, line: int, col: int) -> int:
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[: line - 1]) + col - 1


def _map_back(syn: Syntax, off: int, extra: list[tuple[int, int, str]] | None = None) -> int:
    """An offset in the rewritten text back to the original text."""
    shift = 0
    for start, end, text in sorted(syn.all_edits(extra)):
        new_start = start + shift
        if off < new_start:
            break
        if off < new_start + len(text):
            return start
        shift += len(text) - (end - start)
    return max(0, min(len(syn.text), off - shift))


def service_position(syn: Syntax) -> tuple[int, int] | None:
    if not syn.services:
        return None
    return position(syn.text, start_of(syn.services[0]))


__all__ = ["plain_dataset", "remove_register", "rewrite_timestamp_calls", "register_name",
           "validate_sparql", "service_position", "end_of", "Token"]
