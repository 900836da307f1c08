"""``rsep run --trace ?VAR=VALUE`` as a user runs it (issue 53, point 5): the runs of one
key of a SPASEQ query, started, extended, discarded with their rule, completed; the events
of an EP-SPARQL query's key, its complex events, consumption and the window; on stderr."""

from __future__ import annotations

import re
import subprocess
import sys

from rsep.testing.snippets import ROOT

WARMING = ROOT / "docs" / "examples" / "warming"
SPASEQ_DATA = ROOT / "tests" / "data" / "spaseq"


def rsep(*args: str) -> subprocess.CompletedProcess:
    # (-W: a compiled build older than a source another change touched warns on stderr,
    # which is not what these tests read)
    return subprocess.run([sys.executable, "-W", "ignore::UserWarning", "-m", "rsep.cli.main",
                           *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def _doc_block(after: str) -> list[str]:
    """The lines of the first fenced block of docs/semantics.md after the line ``after``."""
    lines = (ROOT / "docs" / "semantics.md").read_text(encoding="utf-8").splitlines()
    i = lines.index(after)
    start = next(j for j in range(i, len(lines)) if lines[j].startswith("```")) + 1
    end = next(j for j in range(start, len(lines)) if lines[j].startswith("```"))
    return lines[start:end]


def _run_doc_example(heading: str) -> subprocess.CompletedProcess:
    """The docs' example under ``heading``, run as the docs show it: stdout is the block
    under the command, stderr the block after "and on stderr:" that follows."""
    shown = _doc_block(heading)
    cmd = []
    while True:
        line = shown.pop(0)
        cmd.append(line.removeprefix("$ ").strip().removesuffix("\\").strip())
        if not line.endswith("\\"):
            break
    argv = re.findall(r"'[^']*'|\S+", " ".join(cmd))
    assert argv[:2] == ["rsep", "run"]
    got = rsep(*[a.strip("'") for a in argv[1:]])
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == shown
    lines = (ROOT / "docs" / "semantics.md").read_text(encoding="utf-8").splitlines()
    below = lines[lines.index(heading):]
    assert got.stderr.splitlines() == _block_at(below, below.index("and on stderr:"))
    return got


def _block_at(lines: list[str], i: int) -> list[str]:
    start = next(j for j in range(i, len(lines)) if lines[j].startswith("```")) + 1
    end = next(j for j in range(start, len(lines)) if lines[j].startswith("```"))
    return lines[start:end]


def test_trace_shows_why_the_warming_match_is_missing():
    got = _run_doc_example("### Why is a match missing (`rsep run --trace`)")
    assert got.stderr.splitlines()[1] == (
        "2  run 1 discarded for ?sensor=:s1 (?before=20): skip-till-next (';') takes the run's "
        "next event that joins any of its mappings, and B@2 joined only other values of ?sensor")


def test_trace_shows_the_consumed_event_of_an_epsparql_query():
    got = _run_doc_example("### Why is a complex event missing (`rsep run --trace`)")
    assert got.stderr.splitlines()[1] == (
        "2  the event(s) at 1 consumed by a complex event [1, 2] of ?sensor=:s2 (chronological: "
        "an event takes part in one complex event of the query, and no later one sees it)")


def test_trace_of_an_unrestricted_epsparql_query_says_when_an_event_leaves_the_window():
    got = rsep("run", str(WARMING / "warming-ep.rq"), "--stream",
               f"http://example.org/station={WARMING / 'readings.trig'}",
               "--trace", "?sensor=<http://example.org/s1>", "-o", "/dev/null")
    assert got.returncode == 0, got.stderr
    assert got.stderr.splitlines() == [
        "1  event :g1 at 1 mentions :s1",
        "3  event :g3 at 3 mentions :s1",
        "4  event :g4 at 4 mentions :s1",
        "4  complex event [1, 4] detected from the events at 1, 4 (?before=20 ?after=24)",
        "4  complex event [3, 4] detected from the events at 3, 4 (?before=21 ?after=24)",
        "5  event :g5 at 5 mentions :s1",
        "5  complex event [1, 5] detected from the events at 1, 5 (?before=20 ?after=22)",
        "12  event :g6 at 12 mentions :s1",
        "12  complex event [3, 12] detected from the events at 3, 12 (?before=21 ?after=30)",
        "12  complex event [4, 12] detected from the events at 4, 12 (?before=24 ?after=30)",
        "12  complex event [5, 12] detected from the events at 5, 12 (?before=22 ?after=30)",
        "12  the event at 1 left the window [1, 11] (getDURATION() <= 10): no complex event "
        "can start there any more",
    ]


def test_trace_is_silent_for_a_key_no_run_holds_and_answers_are_unchanged():
    base = ["run", str(WARMING / "warming.rq"), "--stream",
            f"http://example.org/station={WARMING / 'readings.trig'}"]
    plain = rsep(*base)
    traced = rsep(*base, "--trace", "?sensor=<http://example.org/nobody>")
    assert (plain.returncode, traced.returncode) == (0, 0)
    assert traced.stdout == plain.stdout and len(plain.stdout.splitlines()) == 2
    assert traced.stderr == ""


def test_trace_follows_kleene_iterations_and_strict_contiguity():
    d = SPASEQ_DATA
    got = rsep("run", str(d / "query1.rq"),
               "--stream", f"http://smartgrid.org/mainSource={d / 'power.trig'}",
               "--stream", f"http://smartgrid.org/weather={d / 'weather.trig'}",
               "--stream", f"http://smartgrid.org/storageSource={d / 'storage.trig'}",
               "--graph", f"http://smartgrid.org/db={d / 'homes.ttl'}", "--time-unit", "1m",
               "--trace", "?house=:H1", "-o", "/dev/null")
    assert got.returncode == 0, got.stderr
    strict = ("discarded: strict contiguity (',') needs its next event at the streamset's "
              "next instant, and no event of this instant joined it")
    assert got.stderr.splitlines()[:8] == [
        '1  run 1 started by A@1, waits in x1: ?fr1=25 ?house2=:H2 ?city=:Lyon ?oname="Alice"',
        "3  run 1 extended by B@3: another iteration in x1",
        "3  run 2 copied from run 1 and extended by B@3, waits in x2 (Kleene+ B+: run 1 stays "
        "for another iteration)",
        "5  run 1 extended by B@5: another iteration in x1",
        "5  run 3 copied from run 1 and extended by B@5, waits in x2 (Kleene+ B+: run 1 stays "
        "for another iteration)",
        f"5  run 2 {strict}",
        '6  run 3 completed a match: A@1 B@3 B@5 C@6 (?fr1=25 ?fr2=20 ?house2=:H2 ?city=:Lyon '
        '?oname="Alice")',
        f"6  run 1 {strict}",
    ]


def test_trace_under_skip_till_any_keeps_the_run(tmp_path):
    q = tmp_path / "any.rq"
    q.write_text((WARMING / "warming.rq").read_text().replace("SEQ (A; B)", "SEQ (A: B)"))
    got = rsep("run", str(q), "--stream",
               f"http://example.org/station={WARMING / 'readings.trig'}",
               "--trace", "sensor=http://example.org/s1", "-o", "/dev/null")
    assert got.returncode == 0, got.stderr
    lines = got.stderr.splitlines()
    assert lines[2] == ("3  run 1 did not take B@3: FILTER (?after >= ?before + 2) is false for "
                        "?before=20 and ?after=21 (it waits on)")
    assert lines[3] == ("4  run 1 completed a match: A@1 B@4 (?before=20 ?after=24) "
                        "(skip-till-any: it waits on)")


def test_trace_refusals():
    why = ("--trace follows the runs of a SPASEQ query and the events of an EP-SPARQL one "
           "(unrestricted, chronological or recent); ")
    got = rsep("run", "docs/examples/cqels.rq", "--stream", "http://example.org/srbench=x",
               "--trace", "?sensor=:s1")
    assert (got.returncode, got.stdout) == (2, "")
    assert got.stderr == (f"rsep: docs/examples/cqels.rq: {why}CQELS has neither (rsep explain "
                          "shows how it runs)\n")
    got = rsep("run", "docs/examples/epsparql.rq", "--stream", "http://example.org/srbench=x",
               "--policy", "etalis-chronological", "--trace", "?sensor=:s1")
    assert (got.returncode, got.stderr) == (
        2, f"rsep: docs/examples/epsparql.rq: {why}ETALIS's step-wise policies run apart from "
        "them\n")
    got = rsep("run", "docs/examples/spaseq.rq", "--stream", "http://example.org/srbench=x",
               "--trace", "sensor")
    assert got.returncode == 2
    assert got.stderr.splitlines()[-1] == (
        "rsep run: error: argument --trace: --trace must be ?VAR=VALUE (e.g. "
        "?sensor=<http://example.org/s1>), got 'sensor'")
    got = rsep("run", "docs/examples/spaseq.rq", "--stream", "http://example.org/srbench=x",
               "--trace", "?sensor=:s1", "--engine", "spark")
    assert (got.returncode, got.stderr) == (
        2, "rsep: --trace follows the runs of the in-process engine; run without --engine "
        "spark to trace a key\n")
