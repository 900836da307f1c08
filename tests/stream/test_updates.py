"""Update streams of background graphs (rsep.stream.updates): SPARQL Update records after
'# @time' lines, or versions as timestamped named graphs; bad records rejected with their
file, line and column, the others read on."""

from __future__ import annotations

import pytest

from rsep.stream.event import Rejected
from rsep.stream.time import TimeKind
from rsep.stream.updates import GraphUpdate, check_update, read_updates, sparql_records

G = "http://example.org/rooms"
P = "PREFIX : <http://example.org/>\n"


def read(text: str) -> list[tuple]:
    out: list[tuple] = []
    for it in sparql_records(G, "u.ru", text):
        if isinstance(it, Rejected):
            out.append(("rejected", it.line, it.column, it.reason))
        else:
            out.append((it.time, it.kind, it.origin, it.update))
    return out


def test_records_carry_their_time_origin_and_the_prologue():
    text = P + "# a comment\n# @time 7\nINSERT DATA { :s1 :in :office }\n" \
               "#@time 2024-01-01T00:00:01Z\nCLEAR DEFAULT\n"
    assert read(text) == [
        (7, TimeKind.ABSTRACT, "u.ru:3", P + "# a comment\n\nINSERT DATA { :s1 :in :office }\n"),
        ("rejected", 5, 0, "a datetime time, after abstract ones")]
    got = read(P + "#@time 2024-01-01T00:00:01Z\nCLEAR DEFAULT\n")
    assert got == [(1704067201000, TimeKind.DATETIME, "u.ru:2", P + "\nCLEAR DEFAULT\n")]


@pytest.mark.parametrize("text, line, column, reason", [
    ("# @time 3\nINSERT DATA { :a :b }\n", 2, 21, "the update does not parse: expected"),
    ("# @time soon\nCLEAR DEFAULT\n", 1, 9, "'# @time soon': timestamp 'soon' is neither"),
    ("# @time 3\n\n", 1, 1, "'# @time 3' is followed by no update"),
    ("# @time 3\nLOAD <http://example.org/kb>\n", 2, 1,
     "LOAD is refused: an update of a background graph cannot reach the network"),
    ("# @time 3\nINSERT { :a :b ?o } WHERE {\n  SERVICE <http://x/sparql> { ?s ?p ?o } }\n", 3, 3,
     "SERVICE is refused"),
])
def test_a_bad_record_is_rejected_with_its_place_and_the_next_is_read(text, line, column, reason):
    got = read(P + text + "# @time 9\nCLEAR DEFAULT\n")
    assert got[0][:3] == ("rejected", line + 1, column)  # (+1: the PREFIX line)
    assert got[0][3].startswith(reason)
    assert [g[0] for g in got[1:]] == [9]


def test_keywords_inside_iris_strings_and_comments_are_not_refused():
    assert check_update(P + 'INSERT { :a :load "LOAD it" } WHERE { ?s <http://x/SERVICE> ?o } '
                            "# SERVICE") is None


def test_an_update_before_any_time_and_a_time_going_back_are_rejected():
    got = read(P + "INSERT DATA { :a :b :c }\n# @time 5\nCLEAR DEFAULT\n# @time 4\nCLEAR DEFAULT\n")
    assert got == [("rejected", 2, 1, "only PREFIX and BASE declarations may stand before the "
                                      "first '# @time' line (an update needs a time)"),
                   (5, TimeKind.ABSTRACT, "u.ru:3", "\nCLEAR DEFAULT\n"),
                   ("rejected", 5, 0, "time 4 goes backwards (after 5): a graph's updates are "
                                      "applied in time order")]


def test_versions_are_read_as_a_stream_file_of_timestamped_graphs(tmp_path):
    f = tmp_path / "v.trig"
    f.write_text("@prefix : <http://example.org/> .\n"
                 "@prefix prov: <http://www.w3.org/ns/prov#> .\n"
                 ":v1 prov:generatedAtTime 7 .\n:v1 { :s1 :in :office . }\n"
                 ":v2 prov:generatedAtTime 3 .\n:v2 { :s1 :in :hall . }\n"
                 ":v3 prov:generatedAtTime 9 .\n:v3 { :s1 :in :attic }\n")
    got = list(read_updates(G, f))
    assert isinstance(got[0], GraphUpdate) and (got[0].time, got[0].origin) == (7, f"{f}:4")
    assert [str(t) for t in got[0].version or ()] == [
        "<http://example.org/s1> <http://example.org/in> <http://example.org/office>"]
    assert isinstance(got[1], Rejected) and (got[1].line, got[1].reason) == (
        6, "time 3 goes backwards (after 7): a graph's updates are applied in time order")
    assert isinstance(got[2], GraphUpdate) and got[2].time == 9


def test_a_missing_file_is_named():
    with pytest.raises(FileNotFoundError, match="graph update file not found: nowhere.ru"):
        list(read_updates(G, "nowhere.ru"))
