"""The W3C SPARQL 1.1 syntax tests (syntax-query, syntax-fed), read as RSP-QL.

A plain SPARQL 1.1 query is a valid RSP-QL query, so every positive test must
parse; one that uses SERVICE must then be refused by the engine. Every negative
test must be rejected with a located QueryError.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyoxigraph as ox
import pytest

from rsep import Engine
from rsep.lang import QueryError, parse_query

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "w3c-sparql11"
FOLDERS = ("syntax-query", "syntax-fed")

if not DATA.is_dir():
    pytest.skip(f"W3C SPARQL 1.1 test suite not found at {DATA}", allow_module_level=True)

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
POSITIVE = "PositiveSyntaxTest11"
NEGATIVE = "NegativeSyntaxTest11"

# (folder, positive, negative) as listed in the manifests' mf:entries.
EXPECTED_COUNTS = {"syntax-query": (63, 31), "syntax-fed": (3, 0)}

_ENTRIES = f"""
PREFIX mf: <{MF}>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
SELECT ?test ?type ?action WHERE {{
  ?manifest mf:entries/rdf:rest*/rdf:first ?test .
  ?test rdf:type ?type ; mf:action ?action .
  VALUES ?type {{ mf:{POSITIVE} mf:{NEGATIVE} }}
}}
"""


def _path(iri: str) -> Path:
    u = urlparse(iri)
    assert u.scheme == "file", iri
    return Path(unquote(u.path))


def _entries() -> list[tuple[str, str, Path]]:
    """(folder, kind, query file) of every query syntax test, in file name order."""
    out = []
    for folder in FOLDERS:
        manifest = DATA / folder / "manifest.ttl"
        store = ox.Store()
        store.load(path=str(manifest), format=ox.RdfFormat.TURTLE, base_iri=manifest.as_uri())
        for row in store.query(_ENTRIES):
            kind = row["type"].value.removeprefix(MF)
            out.append((folder, kind, _path(row["action"].value)))
    return sorted(out, key=lambda e: (e[0], e[2].name))


ENTRIES = _entries()


def _params(kind: str) -> list:
    return [pytest.param(path, id=f"{folder}/{path.name}") for folder, k, path in ENTRIES if k == kind]


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


_SERVICE = re.compile(r"\bSERVICE\b", re.I)


@pytest.mark.parametrize("path", _params(POSITIVE))
def test_positive(path: Path) -> None:
    text = _read(path)
    try:
        parse_query(text, dialect="rspql")
    except QueryError as e:
        pytest.fail(f"valid SPARQL 1.1 query rejected: {e}\n{text}")
    if _SERVICE.search(text):
        with pytest.raises(QueryError) as info:
            Engine().register(text, dialect="rspql")
        assert "SERVICE" in info.value.message


@pytest.mark.parametrize("path", _params(NEGATIVE))
def test_negative(path: Path) -> None:
    text = _read(path)
    try:
        q = parse_query(text, dialect="rspql")
    except QueryError as e:
        assert e.line is not None, f"error without a position: {e}"
        assert 1 <= e.line <= text.count("\n") + 1, f"error outside the query: {e}"
    else:
        pytest.fail(f"invalid SPARQL 1.1 query accepted; rewritten as:\n{q.sparql}")


def test_manifest_counts() -> None:
    """Every manifest entry is found: the parametrized tests cannot be vacuous."""
    counts = {
        folder: (
            sum(1 for f, k, _ in ENTRIES if f == folder and k == POSITIVE),
            sum(1 for f, k, _ in ENTRIES if f == folder and k == NEGATIVE),
        )
        for folder in FOLDERS
    }
    assert counts == EXPECTED_COUNTS
    assert all(path.is_file() for _, _, path in ENTRIES)
    assert len({path for _, _, path in ENTRIES}) == len(ENTRIES)
