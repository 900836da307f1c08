"""Numbers longer than Python's int() takes (4300 digits) in a stream's timestamps and a
query's durations: a located refusal, never a ValueError traceback (found by
``RSEP_FUZZ_SECONDS=15 RSEP_FUZZ_SEED=7 pytest tests/test_fuzz.py``: trig case 2423, cqels
case 3336)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HUGE = "1" * 5000
PREFIXES = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rsep.cli.main", "run", *args],
                          capture_output=True, text=True, timeout=120)


def _query(tmp_path: Path, range_: str) -> Path:
    q = tmp_path / "q.rq"
    q.write_text("PREFIX : <http://example.org/>\nREGISTER RSTREAM <http://e/o> AS SELECT ?c\n"
                 f"FROM NAMED WINDOW <http://e/w> ON <http://e/s> [RANGE {range_} STEP 5]\n"
                 "WHERE { WINDOW <http://e/w> { ?a :offers ?c } }\n", encoding="utf-8")
    return q


def test_a_timestamp_of_5000_digits_is_a_located_rejection_and_the_stream_goes_on(tmp_path):
    s = tmp_path / "s.trig"
    s.write_text(PREFIXES + ":g1 prov:generatedAtTime 10 .\n:g1 { :a :offers :c1 . }\n"
                 f":g2 prov:generatedAtTime {HUGE} .\n:g2 {{ :a :offers :c2 . }}\n"
                 ":g3 prov:generatedAtTime 20 .\n:g3 { :a :offers :c3 . }\n", encoding="utf-8")
    p = _run(str(_query(tmp_path, "5")), "--stream", f"http://e/s={s}")
    assert p.returncode == 3, p.stderr
    assert p.stdout.splitlines() == [
        '{"time": 10, "bindings": {"c": "<http://example.org/c1>"}}',
        '{"time": 20, "bindings": {"c": "<http://example.org/c3>"}}']
    assert (f"rejected: {s}:5: bad timestamp for <http://example.org/g2>: a timestamp of 5000 "
            "characters: at most 1000 are read") in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr) < 2000  # the number is not echoed


def test_a_window_range_of_5000_digits_is_a_located_query_error(tmp_path):
    s = tmp_path / "s.trig"
    s.write_text(PREFIXES + ":g1 prov:generatedAtTime 10 .\n:g1 { :a :offers :c1 . }\n",
                 encoding="utf-8")
    q = _query(tmp_path, HUGE)
    p = _run(str(q), "--stream", f"http://e/s={s}")
    assert p.returncode == 1
    assert p.stderr.strip() == f"rsep: {q}:3:55: a duration of 5000 characters: at most 1000 are read"
