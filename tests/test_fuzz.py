"""Fuzz targets (issue 52): every dialect's grammar and every stream reader, fed mutations
of real inputs, either answer (a query, events) or refuse with a located error (a
QueryError; a Rejected record with its line); never another exception, a crash or a hang.

The budget is seconds per target, seeded: ``RSEP_FUZZ_SECONDS`` (default 2) and
``RSEP_FUZZ_SEED`` (default 52). A longer search: ``RSEP_FUZZ_SECONDS=600 pytest
tests/test_fuzz.py``; a failure names the seed and the case number that reproduce it.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rsep.lang import QueryError, parse_query
from rsep.stream.event import Event, Rejected
from rsep.stream.readers import open_stream
from rsep.testing.snippets import ROOT

SECONDS = float(os.environ.get("RSEP_FUZZ_SECONDS", "2"))
SEED = int(os.environ.get("RSEP_FUZZ_SEED", "52"))
CASE_SECONDS = 10  # one case over this is a hang

PREFIX = "PREFIX : <http://example.org/>\n"
QUERIES = {
    "rspql": [(ROOT / "tests/data/rsp-peers/rsp-js/rspql_advanced.rq").read_text(),
              (ROOT / "tests/data/rsp-peers/rsp-js/multiple_diff_window.rq").read_text()],
    "csparql": [(ROOT / "examples/coupon/q1-csparql.rq").read_text()],
    "cqels": [(ROOT / "examples/coupon/q2-cqels.rq").read_text()],
    "spaseq": [(ROOT / "tests/data/spaseq/query1.rq").read_text(),
               (ROOT / "tests/data/spaseq/query6.rq").read_text()],
    "epsparql": [PREFIX + "SELECT * WHERE { {?k :a ?a} SEQ {?k :b ?b} SEQ {?k :c ?c} "
                 "FILTER (?c > ?a) }",
                 PREFIX + "SELECT ?a ?b WHERE { {?k :p ?a} OPTIONALSEQ {?k :p ?b} }"],
}
# What a mutation puts in: the grammars' punctuation and keywords, and what breaks readers
PIECES = ["{", "}", "(", ")", "[", "]", ".", ";", ",", "?x", "<", ">", '"', "'", "#", "\\",
          "\n", " UNION ", " FILTER(", " BIND(1 AS ?z)", " SEQ ", " && ", "\"\"\"", "@prefix",
          "9" * 30, "-", "\x00", "\ud800", "\u00e9", " STEP ", " RANGE ", "PT", "^^", "_:b"]
BYTES = [b"\xff", b"\xc3", b"\xe2\x82", b"\x00", b"\r", b"\r\n", b"{", b"}", b'"', b".", b"<",
         b">", b"#", b"9" * 25, b"@message\n", b"_:b", b"[", b"(", b" ", b"\n"]


def _alarm(_sig: int, _frame: object) -> None:
    raise TimeoutError


def cases(rng: random.Random, seeds: list[str], pieces: list[str]) -> Iterator[str]:
    """Mutations of the seeds for SECONDS: inserted pieces, deleted and repeated spans,
    truncations, and deep wrappings."""
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        t = rng.choice(seeds)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(t) + 1)
            j = min(len(t), i + rng.randint(0, 40))
            op = rng.randrange(6)
            if op == 0:
                t = t[:i] + rng.choice(pieces) + t[i:]
            elif op == 1:
                t = t[:i] + t[j:]
            elif op == 2:
                t = t[:j] + t[i:j] * rng.randint(2, 50) + t[j:]
            elif op == 3:
                t = t[:i]
            elif op == 4:
                n = rng.choice((10, 100, 3000))
                t = t[:i] + rng.choice("({[") * n + t[i:]
            else:
                t = t[:i] + rng.choice(pieces) * rng.randint(2, 2000) + t[i:]
        yield t


def run_cases(name: str, gen: Iterator[str], check: Callable[[str], None]) -> int:
    old = signal.signal(signal.SIGALRM, _alarm)
    n = 0
    try:
        for n, text in enumerate(gen, 1):  # noqa: B007 (n: the count reported)
            signal.alarm(CASE_SECONDS)
            try:
                check(text)
            except TimeoutError:
                pytest.fail(f"{name}: case {n} (seed {SEED}) ran over {CASE_SECONDS} s")
            except Exception as e:
                pytest.fail(f"{name}: case {n} (seed {SEED}) raised {type(e).__name__}: {e}"
                            f"\n{text[:500]!r}")
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, old)
    assert n > 0
    # the count a longer budget's report needs (shown with pytest -s)
    print(f"fuzz {name}: {n} cases, seed {SEED}, {SECONDS:g} s")
    return n


@pytest.mark.parametrize("dialect", sorted(QUERIES))
def test_every_grammar_answers_or_refuses_located(dialect):
    rng = random.Random(f"{SEED}-{dialect}")

    def check(text: str) -> None:
        try:
            parse_query(text, dialect)
        except QueryError as e:
            assert str(e)  # a message (located where the grammar can say where)
    run_cases(dialect, cases(rng, QUERIES[dialect], PIECES), check)


READERS = {
    "trig": ("s.trig", (ROOT / "examples/coupon/coupons.trig").read_bytes()),
    "nquads": ("s.nq", b'<http://e/g1> <http://www.w3.org/ns/prov#generatedAtTime> "1"^^'
               b'<http://www.w3.org/2001/XMLSchema#integer> .\n<http://e/a> <http://e/p> '
               b'"x" <http://e/g1> .\n<http://e/g2> <http://www.w3.org/ns/prov#generatedAtTime> '
               b'"2"^^<http://www.w3.org/2001/XMLSchema#integer> .\n'),
    "jsonl": ("s.jsonl", b'{"time": 1, "graph": "http://e/g1", "triples": [["http://e/a", '
              b'"http://e/p", "1"]]}\n{"time": 2, "graph": "http://e/g2", "triples": []}\n'),
    "rdfm": ("s.trig", b"@prefix : <http://e/> .\n# @message\n:a :p 1 .\n# @message\n"
             b":g { :a :p 2 . }\n"),
}


@pytest.mark.parametrize("kind", sorted(READERS))
def test_every_stream_reader_yields_events_or_located_rejections(kind, tmp_path):
    name, seed = READERS[kind]
    rng = random.Random(f"{SEED}-{kind}")
    path = tmp_path / name
    fmt = "rdfm" if kind == "rdfm" else "auto"

    # bytes as latin-1 text: each mutation piece one character a byte, written back as is
    gen = cases(rng, [seed.decode("latin-1")], [b.decode("latin-1") for b in BYTES])

    def check(text: str) -> None:
        data = text.encode("latin-1")
        path.write_bytes(data)
        for item in open_stream("http://s", str(path), fmt=fmt):
            assert isinstance(item, Event | Rejected)
            if isinstance(item, Rejected):
                assert item.line >= 0 and item.reason
            elif _not_utf8(data):
                # nothing replaced silently: a byte that is not UTF-8 is rejected, not read
                assert "\ufffd" not in repr(item.triples)
    run_cases(kind, gen, check)


def _not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def test_the_budget_is_documented():
    text = Path(__file__).read_text()
    assert "RSEP_FUZZ_SECONDS" in text and "RSEP_FUZZ_SEED" in text
