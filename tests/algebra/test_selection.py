"""000's selection and consumption policies, one implementation (rsep.algebra.selection)."""

from __future__ import annotations

import pytest

from rsep import parse_query
from rsep.algebra import selection
from rsep.algebra.selection import TABLE1, Selection
from rsep.stream.time import precedes

# Candidates: (name, interval, group); rivals are compatible when their groups agree.
A = ("a", (2, 2), 1)
B = ("b", (4, 4), 1)
C = ("c", (3, 4), 1)  # ends with B, starts earlier: precedes B
D = ("d", (1, 1), 2)


def span(c):
    return c[1]


def same_group(x, y):
    return x[2] == y[2]


def names(cs):
    return [c[0] for c in cs]


def test_first_and_last_order_by_end_then_start_and_keep_ties():
    assert names(selection.first([B, C, A], span)) == ["a"]
    assert names(selection.last([B, C, A], span)) == ["b"]
    assert names(selection.last([B, C, ("b2", (4, 4), 1)], span)) == ["b", "b2"]
    assert selection.first([], span) == selection.last([], span) == []


def test_pick_is_first_under_chronological_and_last_under_recent():
    assert names(selection.pick(Selection.CHRONOLOGICAL, [B, C, A], span)) == ["a"]
    assert names(selection.pick(Selection.RECENT, [B, C, A], span)) == ["b"]


def test_select_compares_only_compatible_rivals():
    cands = [B, C, A, D]
    assert names(selection.select(Selection.CHRONOLOGICAL, cands, span, same_group)) == ["a", "d"]
    assert names(selection.select(Selection.RECENT, cands, span, same_group)) == ["b", "d"]
    everyone = [B, C, A, D]
    assert names(selection.select(Selection.CHRONOLOGICAL, everyone, span, lambda x, y: True)) \
        == ["d"]
    # equal intervals do not beat each other
    twins = [A, ("a2", (2, 2), 1)]
    assert names(selection.select(Selection.RECENT, twins, span, same_group)) == ["a", "a2"]


def test_justification_is_the_union_of_the_outputs_items():
    assert selection.justification([frozenset({1, 3}), frozenset({3, 5})]) == {1, 3, 5}
    assert selection.justification([]) == set()


RSEPQL = """PREFIX : <http://example.org/>
REGISTER ISTREAM :out AS
SELECT ?x
FROM NAMED :S WIN [LND 0] AS :w
EVENT ON :w { ?x :p ?y . } AS E_1
EVENT ON :w { ?y :q ?z . } AS E_2
WHERE { MATCH %s { E_1 SEQ E_2 } }"""


@pytest.mark.parametrize("row", [r for r in TABLE1 if r.selection is not None], ids=lambda r: r.rsepql)
def test_table1_rows_are_the_policies_rsepql_parses(row):
    """Each event-pattern row of Table 1: RSEP-QL's MATCH with that policy has the row's
    selection, which consumes exactly when the row names a P^ function."""
    q = parse_query(RSEPQL % row.selection.name)
    assert [m.selection for m in q.matches] == [row.selection]
    assert row.selection.consumes == ("P^" in row.rsepql)
    assert row.window == ("landmark" if row.language == "EP-SPARQL" else "time")


def test_table1_as_printed():
    assert [(r.rsepql, r.language, r.setting) for r in TABLE1] == [
        ("W^λ + SEQ", "EP-SPARQL", "unrestricted"),
        ("W^λ + SEQ^c + P^c", "EP-SPARQL", "chronological"),
        ("W^λ + SEQ^r + P^r", "EP-SPARQL", "recent"),
        ("W^τ + SEQ^n", "C-SPARQL", "SEQ (timestamp)"),
        ("W^τ", "C-SPARQL", "time-window"),
    ]


def test_select_orders_by_precedes():
    """Of two compatible candidates, chronological keeps the one 000's order puts first,
    recent the other (equal intervals: both), on every pair of small intervals."""
    spans = [(a, b) for b in range(4) for a in range(b + 1)]
    for x in spans:
        for y in spans:
            cands = [("x", x, 1), ("y", y, 1)]
            chrono = names(selection.select(Selection.CHRONOLOGICAL, cands, span, same_group))
            recent = names(selection.select(Selection.RECENT, cands, span, same_group))
            assert chrono == (["x"] if precedes(x, y) else ["y"] if precedes(y, x) else ["x", "y"])
            assert recent == (["y"] if precedes(x, y) else ["x"] if precedes(y, x) else ["x", "y"])
