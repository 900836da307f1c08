"""``rsep run --trace ?VAR=VALUE`` as a user runs it (issue 53, point 5): the runs of one
key of a SPASEQ query, started, extended, discarded with their rule, completed, on stderr."""

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


def test_trace_shows_why_the_warming_match_is_missing():
    # the docs' example, run as the docs show it: stdout is the block under the command,
    # stderr the block after "and on stderr:"
    shown = _doc_block("### Why is a match missing (`rsep run --trace`)")
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
    assert got.stderr.splitlines() == _doc_block("and on stderr:")
    assert got.stderr.splitlines()[1] == (
        "2  run 1 discarded for ?sensor=:s1 (?before=20): skip-till-next (';') takes the run's "
        "next event that joins any of its mappings, and B@2 joined only other values of ?sensor")


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
    got = rsep("run", "docs/examples/epsparql.rq", "--stream", "http://example.org/srbench=x",
               "--trace", "?sensor=:s1")
    assert (got.returncode, got.stdout) == (1, "")
    assert got.stderr == ("rsep: docs/examples/epsparql.rq: --trace follows the runs of a "
                          "SPASEQ query's automaton; EP-SPARQL has none to follow (its "
                          "explanation: rsep explain)\n")
    got = rsep("run", "docs/examples/spaseq.rq", "--stream", "http://example.org/srbench=x",
               "--trace", "sensor")
    assert got.returncode == 2
    assert got.stderr.splitlines()[-1] == (
        "rsep run: error: argument --trace: --trace must be ?VAR=VALUE (e.g. "
        "?sensor=<http://example.org/s1>), got 'sensor'")
    got = rsep("run", "docs/examples/spaseq.rq", "--stream", "http://example.org/srbench=x",
               "--trace", "?sensor=:s1", "--engine", "spark")
    assert (got.returncode, got.stderr) == (
        1, "rsep: --trace follows the runs of the in-process engine; run without --engine "
        "spark to trace a key\n")
