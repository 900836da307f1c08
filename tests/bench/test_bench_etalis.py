"""`rsep bench epsparql-etalis` end to end at a tiny size: rsep and ETALIS (SWI-Prolog,
Debian's swi-prolog-nox, which `make test`'s system-deps installs) on the same stream,
and the agreement check's exact outcome."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from rsep.bench import epsparql_etalis as ee
from rsep.cli.main import main as cli


def test_stream_and_rules_are_what_etalis_reads(tmp_path: Path) -> None:
    s = ee.generate(tmp_path, 3)
    facts = Path(s.facts).read_text().splitlines()
    assert facts == [
        "input(0, 0, 0, [rdf('<http://example.org/c3>','<http://example.org/a>',98)]).",
        "input(1, 1, 1, [rdf('<http://example.org/c2>','<http://example.org/c>',102)]).",
        "input(2, 2, 2, [rdf('<http://example.org/c0>','<http://example.org/b>',95)]).",
    ]
    # rsep reads the same events as TriG
    assert Path(s.trig).read_text().splitlines()[:2] == [
        "<http://example.org/bench/epstream/0> <http://www.w3.org/ns/prov#generatedAtTime> 0 .",
        "<http://example.org/bench/epstream/0> { <http://example.org/c3> <http://example.org/a> 98 . }"]
    assert ee.etalis_rules("b") == (
        "q([property(event_rule_window,10)]) 'rule:' select_event([V_k,V_a,V_b]) <- "
        "(rdf(V_k,'<http://example.org/a>',V_a) 'seq' rdf(V_k,'<http://example.org/b>',V_b)).\n")


def test_agreement_names_the_differences(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    ev = [{"values": ["<http://example.org/c1>", 90, 101], "from": 3, "to": 7},
          {"values": ["<http://example.org/c2>", 95, 96], "from": 4, "to": 9}]
    a.write_text("".join(json.dumps(e) + "\n" for e in ev))
    b.write_text(json.dumps(ev[0]) + "\n")
    assert ee.agreement(a, a) == "identical (2 complex events)"
    assert ee.agreement(a, b) == (
        "DIFFERENT: 1 common, 1 only in rsep, 0 only in ETALIS "
        "(rsep (('<http://example.org/c2>', 95, 96), 4, 9))")


def test_bench_epsparql_etalis_end_to_end(tmp_path: Path) -> None:
    assert shutil.which("swipl"), "SWI-Prolog is needed: `make system-deps` installs swi-prolog-nox"
    assert (ee.etalis_src() / "etalis.P").is_file(), f"ETALIS's sources are not at {ee.etalis_src()}"
    rc = cli(["bench", "epsparql-etalis", "--size", "300", "--runs", "1", "--cases",
              "a-unrestricted,b,c-recent", "--out", str(tmp_path), "--no-plots", "--timeout", "120"])
    assert rc == 0
    with open(tmp_path / "epsparql-etalis.csv", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    rows = [(r["pattern"], r["policy"], r["engine"], r["status"], r["outputs"], r["agreement"])
            for r in table]
    assert rows == EXPECTED
    # each engine's whole is its reading plus its engine (medians of one run: exact but for
    # rounding); rsep's reading is timed, ETALIS's at /proc's 10 ms ticks
    for r in table:
        whole, read, engine = (float(r[k]) for k in ("cpu_us_per_event", "read_cpu_us_per_event",
                                                     "engine_cpu_us_per_event"))
        assert read >= 0 and engine >= 0 and abs(whole - read - engine) <= 0.2, r
        assert r["engine"] != "rsep" or read > 0, r


# 300 events: ETALIS's complex events are rsep's, under each policy (ETALIS's
# chronological / recent against rsep's etalis-chronological / etalis-recent); the
# collector (etalis-gc) changes nothing but the cost; (a) has no window to collect by
EXPECTED = [
    ("a", "unrestricted", "rsep", "ok", "109", ""),
    ("a", "unrestricted", "etalis", "ok", "109", "identical (109 complex events)"),
    ("b", "unrestricted", "rsep", "ok", "77", ""),
    ("b", "unrestricted", "etalis", "ok", "77", "identical (77 complex events)"),
    ("b", "unrestricted", "etalis-gc", "ok", "77", "identical (77 complex events)"),
    ("b", "chronological", "rsep", "ok", "44", ""),
    ("b", "chronological", "etalis", "ok", "44", "identical (44 complex events)"),
    ("b", "chronological", "etalis-gc", "ok", "44", "identical (44 complex events)"),
    ("b", "recent", "rsep", "ok", "42", ""),
    ("b", "recent", "etalis", "ok", "42", "identical (42 complex events)"),
    ("b", "recent", "etalis-gc", "ok", "42", "identical (42 complex events)"),
    ("c", "recent", "rsep", "ok", "9", ""),
    ("c", "recent", "etalis", "ok", "9", "identical (9 complex events)"),
    ("c", "recent", "etalis-gc", "ok", "9", "identical (9 complex events)"),
]


def test_a_workers_peak_memory_is_its_own() -> None:
    """A worker forked from a large bench process reports its own peak RSS, not the parent's
    (Linux carries ru_maxrss across exec from the forked copy)."""
    import subprocess
    import sys

    held = bytearray(300 * 2**20)
    for i in range(0, len(held), 4096):
        held[i] = 1
    code = ("import sys; sys.path.insert(0, 'rsep/bench/workers'); from common import peak_rss_kb; "
            "print(peak_rss_kb())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert 0 < int(out.stdout) < 150 * 1024
    del held
