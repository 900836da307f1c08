"""rsep.lang.parser's start-up measures change nothing a parser reads: the name
characters as negated classes match exactly SPARQL's sets, and the lexer that compiles each
terminal once, when first tried, with every state's scanner built before the parser is
cached, gives the same trees (and the same errors) as Lark's own, built or loaded."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lark import Lark

from rsep.lang.parser import (
    LALR_OPTIONS,
    PN_CHARS,
    PN_CHARS_BASE,
    PN_CHARS_U,
    VARNAME_CHARS,
    _Regex,
    engine_code,
    negated_class,
    parser,
    prepared,
    sparql_grammar,
    sparql_lalr,
)

ROOT = Path(__file__).resolve().parents[2]


def _engine_compile(pattern: str) -> re.Pattern[str]:
    code = engine_code(pattern, 0)
    assert code is not None
    regex = _Regex(pattern, 0, code)
    rx = regex.compiled()
    assert regex.code is not None  # made of the code, not by re.compile
    return rx


@pytest.mark.parametrize("compile", [re.compile, _engine_compile], ids=["re", "engine code"])
@pytest.mark.parametrize("ranges", [PN_CHARS_BASE, PN_CHARS_U, VARNAME_CHARS, PN_CHARS])
def test_a_negated_class_matches_exactly_its_ranges_on_every_code_point(ranges, compile):
    rx = compile(negated_class(ranges))
    want = bytearray(0x110000)
    for lo, hi in ranges:
        want[lo:hi + 1] = b"\1" * (hi - lo + 1)
    got = [i for i in range(0x110000) if bool(rx.fullmatch(chr(i))) != bool(want[i])]
    assert got == []


def test_a_pattern_whose_engine_code_does_not_load_is_compiled_by_re():
    rx = _Regex("[a-z]+", 0, ("[a-z]+", 32, [1, 2, 3], 0, {}, ()))
    assert rx.compiled().match("abc1").group(0) == "abc" and rx.code is None


def test_the_ranges_are_sparql_s():
    # SPARQL 1.1 grammar [164] PN_CHARS_BASE, as sparqlib writes it
    g = sparql_grammar()
    base = g[g.index("PN_CHARS_BASE:"):g.index("PN_CHARS:")]
    written = [(int(a, 16), int(b, 16)) for a, b in
               re.findall(r"\[\\[uU]([0-9A-Fa-f]+)-\\[uU]([0-9A-Fa-f]+)\]", base)]
    assert [(0x41, 0x5A), (0x61, 0x7A)] + written == list(PN_CHARS_BASE)


def _texts() -> list[str]:
    files = sorted(ROOT.glob("tests/**/*.rq")) + sorted(ROOT.glob("docs/examples/*.rq")) + \
        sorted(ROOT.glob("examples/**/*.rq"))
    return [f.read_text(encoding="utf-8") for f in files]


RSP_EXT = (ROOT / "rsep/lang/rsep_ext.lark").read_text(encoding="utf-8")


@pytest.mark.parametrize("how", ["built", "loaded"])
def test_lexing_terminal_by_terminal_gives_lark_s_own_trees(how, tmp_path, monkeypatch):
    plain = Lark(parser().source_grammar, start="rsp_unit", parser="lalr",
                 propagate_positions=True, maybe_placeholders=False)
    if how == "built":
        ours = prepared(Lark(parser().source_grammar, start="rsp_unit", **LALR_OPTIONS))
    else:
        monkeypatch.setenv("RSEP_CACHE_DIR", str(tmp_path))
        sparql_lalr(RSP_EXT, "rsp_unit")
        ours = sparql_lalr(RSP_EXT, "rsp_unit")
        assert not hasattr(ours, "grammar")  # it was loaded (the cache leaves the grammar out)
    mutated = ["SELECT ?x WHERE { ?x <a> ?y }", "PREFIX é: <http://x/> SELECT ?é_1 WHERE { é:a·b ?p _:b1 }",
               "SELECT * WHERE { ?x ?p 'a' . FILTER(?x > -1.5e3) }"]
    texts = [t for t in _texts() if "DEFINE GPM" not in t.upper()] + mutated
    compared = 0
    for text in texts:
        try:
            want = plain.parse(text)
        except Exception as e:  # noqa: BLE001 - the same failure is expected of both
            with pytest.raises(type(e)):
                ours.parse(text)
            continue
        assert ours.parse(text) == want
        compared += 1
    assert compared >= 10
