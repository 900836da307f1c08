"""rsep._core, the native reader: the quads it reads into ids are pyoxigraph's, term for term.

Both parse with oxigraph's own parser (oxttl), so on every document they must agree: the
same quads in the same order, every term's N-Triples form the same, and a syntax error at
the same line and column. Documents are drawn at random (Hypothesis) in the four syntaxes
rsep's streams come in; ids are checked to be a dictionary (one id per distinct term).
"""

from __future__ import annotations

import array
import os

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsep import _core

XSD = "http://www.w3.org/2001/XMLSchema#"
EXAMPLES = int(os.environ.get("RSEP_EXAMPLES", "60"))
FORMATS = {"trig": ox.RdfFormat.TRIG, "turtle": ox.RdfFormat.TURTLE,
           "nquads": ox.RdfFormat.N_QUADS, "ntriples": ox.RdfFormat.N_TRIPLES}


def escape(s: str) -> str:
    return (s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            .replace("\r", "\\r").replace("\t", "\\t"))


iris = st.builds(lambda p: f"<http://e/{p}>",
                 st.text("abcxyzé0123_-/", min_size=1, max_size=6))
bnodes = st.builds(lambda n: f"_:b{n}", st.integers(0, 5))
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
literals = st.one_of(
    st.builds(lambda s: f'"{escape(s)}"', texts),
    st.builds(lambda s, tag: f'"{escape(s)}"@{tag}', texts, st.sampled_from(["en", "en-GB", "fr"])),
    st.builds(lambda n: f'"{n}"^^<{XSD}integer>', st.integers(-10**20, 10**20)),
    st.builds(lambda x: f'"{x}"^^<{XSD}double>', st.floats(allow_nan=False, allow_infinity=False)),
    st.builds(lambda x: f'"{x}"^^<{XSD}decimal>',
              st.decimals(allow_nan=False, allow_infinity=False, places=3)),
    st.builds(lambda b: f'"{b}"^^<{XSD}boolean>', st.sampled_from(["true", "false", "1"])),
    st.builds(lambda s: f'"{escape(s)}"^^<http://e/dt>', texts),
)
subjects = st.one_of(iris, bnodes)
objects = st.one_of(iris, bnodes, literals)
graphs = st.one_of(st.none(), iris, bnodes)
quads = st.lists(st.tuples(subjects, iris, objects, graphs), max_size=25)


def document(fmt: str, qs: list[tuple]) -> str:
    """``qs`` written in ``fmt``; the triple syntaxes take the quads' triples only."""
    if fmt in ("nquads", "ntriples"):
        return "".join(f"{s} {p} {o}{'' if g is None or fmt == 'ntriples' else ' ' + g} .\n"
                       for s, p, o, g in qs)
    if fmt == "turtle":
        return "".join(f"{s} {p} {o} .\n" for s, p, o, _ in qs)
    out = []
    for s, p, o, g in qs:  # TriG: a graph block a quad, or a default-graph triple
        out.append(f"{s} {p} {o} .\n" if g is None else f"{g} {{ {s} {p} {o} }}\n")
    return "".join(out)


def native(data: bytes, fmt: str) -> tuple[list[tuple], list[tuple], _core.Terms, list[int]]:
    terms = _core.Terms()
    raw, errors = _core.parse(data, fmt, terms)
    ids = array.array("I")
    ids.frombytes(raw)
    shown = terms.terms(raw)
    rows = [tuple(shown[i:i + 4]) for i in range(0, len(shown), 4)]
    return rows, errors, terms, list(ids)


def oxigraph(data: bytes, fmt: str) -> list[tuple]:
    return [(str(q.subject), str(q.predicate), str(q.object),
             None if isinstance(q.graph_name, ox.DefaultGraph) else str(q.graph_name))
            for q in ox.parse(data, FORMATS[fmt])]


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.sampled_from(sorted(FORMATS)), quads)
def test_native_reader_reads_what_pyoxigraph_reads(fmt: str, qs: list[tuple]) -> None:
    data = document(fmt, qs).encode()
    rows, errors, terms, ids = native(data, fmt)
    assert errors == []
    assert rows == oxigraph(data, fmt)
    # a dictionary: equal terms share an id, distinct terms do not
    by_term: dict[str, int] = {}
    for i, t in zip(ids, terms.terms(array.array("I", ids).tobytes()), strict=True):
        if t is not None:
            assert by_term.setdefault(t, i) == i
    assert len(set(by_term.values())) == len(by_term) == len(terms)
    for t, i in by_term.items():
        assert terms.id(t) == i


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.sampled_from(["nquads", "ntriples"]), quads, quads,
       st.sampled_from(["<http://e/a> <http://e/p> .", "<http://e/a> <http://e/p> \"x .",
                        "_:b <http://e/p> <nope> <http://e/g> <http://e/h> ."]))
def test_a_bad_line_is_located_as_pyoxigraph_locates_it_and_the_rest_is_read(
        fmt: str, before: list[tuple], after: list[tuple], bad: str) -> None:
    head, tail = document(fmt, before), document(fmt, after)
    data = (head + bad + "\n" + tail).encode()
    rows, errors, _, _ = native(data, fmt)
    with pytest.raises(SyntaxError) as e:
        oxigraph(data, fmt)
    assert (errors[0][0], errors[0][1]) == (e.value.lineno, e.value.offset)
    assert errors[0][0] == len(before) + 1
    assert rows == oxigraph(head.encode(), fmt) + oxigraph(tail.encode(), fmt)


def test_numbers_are_decoded_once_and_other_terms_have_none() -> None:
    terms = _core.Terms()
    raw, _ = _core.parse(b'@prefix : <http://e/> . :s :p 3, 1.5, 2e1, "x", "07"^^<http://www.w3.org/'
                         b'2001/XMLSchema#unsignedByte>, "bad"^^<http://www.w3.org/2001/XMLSchema#int> .',
                         "turtle", terms)
    ids = array.array("I")
    ids.frombytes(raw)
    assert [terms.number(ids[i]) for i in range(2, len(ids), 4)] == [3.0, 1.5, 20.0, None, 7.0, None]
    assert terms.number(ids[0]) is None and terms.term(0) is None


def test_bad_arguments_are_refused_with_their_reason() -> None:
    terms = _core.Terms()
    with pytest.raises(ValueError, match='unknown RDF format "rdfxml"'):
        _core.parse(b"", "rdfxml", terms)
    with pytest.raises(ValueError, match="invalid base IRI"):
        _core.parse(b"", "trig", terms, base_iri="not an iri")
    with pytest.raises(ValueError, match="not an N-Triples term"):
        terms.id("<unclosed")
    with pytest.raises(ValueError, match="whole number of uint32"):
        terms.terms(b"abc")


# Stream files for rsep's own TriG reader (native/src/trig.rs): the common shape, written
# with prefixed names, full IRIs, `;` and `,`, comments and odd spacing, with now and then a
# piece outside that reader's subset or not valid TriG at all.
PROV = "http://www.w3.org/ns/prov#generatedAtTime"
PREFIXES = ("@prefix ex: <http://e.org/> .\n@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
            "PREFIX prov: <http://www.w3.org/ns/prov#>\n")
# (one_of draws each strategy alike: the odd pieces are one draw in ten or so)
plain = st.one_of(st.builds(lambda s: f"ex:{s}", st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,8}",
                                                               fullmatch=True)), iris)
names = st.one_of(*[plain] * 9, st.sampled_from(
    ["ex:", "ex:a\\-b", "ex:é", "nope:x", "<rel>", "<http://e.org/a b>", "_:b", "[]", "a"]))
stream_objects = st.one_of(*[names] * 4, *[literals] * 4, st.sampled_from(
    ['"x"@en-', '"""long"""', "1.", ".5", "1e", "true", "'q'", '"\\u00e9"', '"x"^^xsd:int',
     "( 1 )", '"bad\\q"']))
spaces = st.sampled_from([" ", " ", "\n", "\t", "  # c\n", ""])


@st.composite
def stream_files(draw) -> str:
    out = [PREFIXES]
    t = 0
    for k in range(draw(st.integers(0, 6))):
        t += draw(st.integers(0, 2))
        g = draw(st.sampled_from([f"ex:g{k}", f"<http://e.org/g{k}>", f"ex:h{k % 2}"]))
        pred = draw(st.sampled_from(["prov:generatedAtTime", f"<{PROV}>"] * 6 + ["ex:at"]))
        out.append(f"{g} {pred} {t} .\n{g}{draw(spaces)}{{")
        for j in range(draw(st.integers(1, 3))):
            if j:
                out.append(draw(st.sampled_from([" .", " .", " .", " .", " ;", ""])))
            out.append(f" {draw(names)}{draw(spaces)}{draw(names)} {draw(stream_objects)}")
            if draw(st.booleans()):
                out.append(f" ;{draw(spaces)}{draw(names)} {draw(stream_objects)}, "
                           f"{draw(stream_objects)}")
        out.append(draw(st.sampled_from([" }\n", "}\n", " . }\n", "\n}\n"])))
    return "".join(out)


READ_ALIKE = [0, 0]  # files both readings took, files both refused


@settings(max_examples=EXAMPLES * 4, deadline=None)
@given(stream_files())
def test_rsep_trig_reader_reads_what_oxttl_reads(tmp_path_factory, text: str) -> None:
    """rsep._core.read_stream with rsep's own TriG reader first and with oxttl alone: the
    same events, ids and dictionary, or the same refusal."""
    path = tmp_path_factory.mktemp("s") / "s.trig"
    path.write_text(text, encoding="utf-8")
    fast, why_fast = _core.read_stream(str(path), [PROV], 64 << 20)
    slow, why_slow = _core.read_stream(str(path), [PROV], 64 << 20, fast=False)
    if slow is None:
        assert (fast, why_fast) == (None, why_slow)
        READ_ALIKE[1] += 1
    else:
        assert fast is not None and fast.dump() == slow.dump()
        READ_ALIKE[0] += 1


def test_the_stream_files_drawn_were_taken_and_refused() -> None:
    """(After the test above, in file order: a generator whose files all failed, or all
    passed, would prove little.)"""
    taken, refused = READ_ALIKE
    # (about a sixth of the files are taken; a fresh draw's share varies)
    assert taken >= EXAMPLES // 12 and refused >= EXAMPLES // 12, READ_ALIKE
