"""Standard input on the native paths (``rsep run ... --stream IRI=-``): read through the
chunked reader from fd 0 (native/src/source.rs), what is read of a pipe kept in a spool
file, so that a refusal found late (after rows were written, or when rsep's own reader
gives the input up) runs today's path over all of it: what was read first, then the rest of
standard input. Each run is a process fed through a pipe (or a file redirected), and its
output, exit status and messages must be those of ``RSEP_NATIVE=0`` on the same input.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rsep.spaseq import native

pytestmark = pytest.mark.skipif(native.available() is not None,
                                reason=str(native.available()))

ROOT = Path(__file__).resolve().parents[2]
PROV = "<http://www.w3.org/ns/prov#generatedAtTime>"
STREAM = "http://e/s"
CHUNK = 1 << 20  # rsep.stream.native.STREAM_CHUNK: standard input's chunks
# rsep run in a process, then which native path ran (or why not) on stderr's last line
RUN = ("import sys\nfrom rsep.cli.main import main\nfrom rsep.spaseq import native as s\n"
       "from rsep.windows import native as w\nfrom rsep.epsparql import native as e\n"
       "rc = main(sys.argv[1:])\n"
       "got = [m.LAST for m in (s, w, e) if m.LAST is not None]\n"
       "print('sent:', got[0].sent if got else 0, file=sys.stderr)\n"
       "print('native:', got[0].refused if got else None, file=sys.stderr)\nsys.exit(rc)\n")
CHAIN = (f"SELECT ?c ?p1 ?p2\nWITHIN 10\nFROM STREAM S1 <{STREAM}>\nWHERE {{\n  SEQ (A; B)\n"
         "  DEFINE GPM A ON S1 { ?c <http://e/price> ?p1 }\n"
         "  DEFINE GPM B ON S1 { ?c <http://e/price> ?p2 FILTER (?p2 > ?p1) }\n}\n")
WINDOW = (f"REGISTER RSTREAM <http://e/q> AS\nSELECT *\nFROM NAMED WINDOW <http://e/w> ON "
          f"<{STREAM}> [RANGE 5 STEP 2]\nWHERE {{ WINDOW <http://e/w> {{ ?s ?p ?o }} }}\n")
EPSPARQL = ("SELECT ?c ?a ?b WHERE { {?c <http://e/price> ?a} SEQ {?c <http://e/price> ?b} "
            "FILTER (getDURATION() <= 3 && ?b > ?a) }\n")


# the bytes each run's native path wrote through before it ended (rsep.stream.native's
# Outcome.sent: non-zero only after a refusal, the rest written by today's path)
SENT: list[int] = []


def stream_of(n: int, odd: dict[int, str] | None = None) -> bytes:
    """``n`` events of prices; ``odd``: an event's body replaced."""
    lines = []
    for i in range(n):
        body = f"<http://e/c{i % 3}> <http://e/price> {(i * 7919) % 50} ."
        body = (odd or {}).get(i, body)
        lines.append(f"<http://g/{i}> {PROV} {i} .\n<http://g/{i}> {{ {body} }}\n")
    return "".join(lines).encode()


def rsep_run(tmp: Path, query: str, data: bytes, extra: list[str], env: dict[str, str],
             redirect: bool = False) -> tuple[int, bytes, str, str]:
    """(exit status, output, stderr but its last line, the native path's refusal)."""
    (tmp / "q.rq").write_text(query, encoding="utf-8")
    out = tmp / "out"
    cmd = [sys.executable, "-c", RUN, "run", str(tmp / "q.rq"), "--stream", f"{STREAM}=-",
           "-o", str(out), *extra]
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    if redirect:
        (tmp / "in.trig").write_bytes(data)
        with open(tmp / "in.trig", "rb") as f:
            got = subprocess.run(cmd, stdin=f, capture_output=True, env=full, timeout=300)
    else:
        got = subprocess.run(cmd, input=data, capture_output=True, env=full, timeout=300)
    *messages, sent, last = got.stderr.decode().rstrip("\n").split("\n")
    assert last.startswith("native: ") and sent.startswith("sent: "), got.stderr.decode()
    SENT.append(int(sent[len("sent: "):]))
    return got.returncode, out.read_bytes(), "\n".join(messages), last[len("native: "):]


def agree(tmp: Path, query: str, data: bytes, extra: list[str] = (), redirect: bool = False
          ) -> tuple[str, bytes]:
    """The native run over standard input and RSEP_NATIVE=0's agree: the native path's
    refusal ("" when it ran) and the output."""
    rc, out, messages, why = rsep_run(tmp, query, data, list(extra), {}, redirect)
    orc, oout, omessages, _ = rsep_run(tmp, query, data, list(extra), {"RSEP_NATIVE": "0"},
                                       redirect)
    assert (rc, out, messages) == (orc, oout, omessages), why
    return why, out


@pytest.mark.parametrize("redirect", [False, True])
def test_a_chain_over_standard_input_is_native(tmp_path: Path, redirect: bool) -> None:
    why, out = agree(tmp_path, CHAIN, stream_of(3000), ["-q"], redirect)
    assert why == "" and out.count(b"\n") > 1000


def test_a_window_and_an_epsparql_seq_over_standard_input_are_native(tmp_path: Path) -> None:
    why, out = agree(tmp_path, WINDOW, stream_of(3000), ["-q"])
    assert why == "" and out.count(b"\n") > 3000
    why, out = agree(tmp_path, EPSPARQL, stream_of(3000), ["-q", "--dialect", "epsparql"])
    assert why == "" and out.count(b"\n") > 100


def test_a_late_refusal_runs_todays_path_over_all_of_standard_input(tmp_path: Path) -> None:
    # past 1 MiB (the first chunk, whose rows are written before the next is read): a
    # value the chain does not compare, a record to reject (its place in the messages and
    # the dead letter's, as today's path gives them)
    n = 20_000
    why, out = agree(tmp_path, CHAIN, stream_of(n, {n - 5: '<http://e/c1> <http://e/price> "x" .'}),
                     ["-q"])
    assert "does not decide exactly" in why and out.count(b"\n") > 1000
    # the rows of the events before the refusal went out through the pipe's reading, and
    # today's path wrote the rest (it ran after, SENT[-1] is its own: nothing)
    assert 0 < SENT[-2] < len(out), SENT
    data = stream_of(n, {n - 5: "<http://e/c1> <http://e/price> ."})
    got = []
    for env in ({}, {"RSEP_NATIVE": "0"}):
        dead = tmp_path / "dead.jsonl"
        got.append((*rsep_run(tmp_path, CHAIN, data, ["--dead-letter", str(dead)], env),
                    dead.read_text(encoding="utf-8")))
    (rc, out, messages, why, dead_letter), today = got
    assert (rc, out, messages, dead_letter) == (today[0], today[1], today[2], today[4])
    assert "a syntax error at line" in why and out.count(b"\n") > 1000 and rc == 3
    # (the record, and the timestamp of its graph, which the record did not give)
    assert dead_letter.count('"file": "/dev/stdin", "line": 39992') == 1, dead_letter


def test_rsep_own_reader_giving_up_reads_standard_input_again(tmp_path: Path) -> None:
    # the first chunk (1 MiB, then to the line's end) ending in a "# }" line inside a graph
    # block: rsep's own reader gives the input up, oxttl reads it again from its start
    # (the spool, then on), the engine run again (a comment line first, padded so that the
    # line across the chunk's end is a block's)
    data = stream_of(20_000)
    pad = 0
    while not data[:(at := data.index(b"\n", CHUNK - pad - 2))].endswith(b"}"):
        pad += 1
    data = b"#" + b" " * pad + b"\n" + data[:at - 2] + b" # }\n}" + data[at:]
    why, out = agree(tmp_path, CHAIN, data, ["-q"])
    assert why == "" and out.count(b"\n") > 1000


LIVE = [(CHAIN, [], b""), (WINDOW, [], b""), (EPSPARQL, ["--dialect", "epsparql"], b""),
        # a comment line "# }" inside a graph block, where the pipe pauses: rsep's own
        # reader reads the text up to it as whole blocks, fails, and gives the stream to
        # oxttl from its start (the spool, then on) after rows went out: the run again
        # writes them first, and they are not sent twice
        (CHAIN, [], b"# }\n")]


@pytest.mark.parametrize("query,extra,pause", LIVE)
def test_rows_go_out_as_a_live_pipe_gives_events(tmp_path: Path, query: str,
                                                  extra: list[str], pause: bytes) -> None:
    # an endless stream: the rows of the events given so far are written while the pipe is
    # still open (waiting on it), not when it ends; the whole output then is today's path's
    data = stream_of(400)
    half = data.index(b"<http://g/200> ")
    if pause:
        block = data.index(b"{", half) + 1
        data = data[:block] + b"\n" + data[block:data.index(b"}", block)] + b"\n" + pause \
            + b"}" + data[data.index(b"}", block) + 1:]
        half = data.index(pause) + len(pause)
    (tmp_path / "q.rq").write_text(query, encoding="utf-8")
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", "import sys\nfrom rsep.cli.main import main\n"
           "sys.exit(main(sys.argv[1:]))", "run", str(tmp_path / "q.rq"), *extra,
           "--stream", f"{STREAM}=-", "-o", str(out), "-q"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, env=env) as p:
        assert p.stdin is not None
        p.stdin.write(data[:half])
        p.stdin.flush()
        early = b""
        for _ in range(600):  # (up to a minute on a loaded machine)
            early = out.read_bytes() if out.exists() else b""
            if early.count(b"\n") >= 10:
                break
            time.sleep(0.1)
        p.stdin.write(data[half:])
        p.stdin.close()
        assert p.wait(timeout=300) == 0
    today = tmp_path / "today"
    subprocess.run([*cmd[:-3], "-o", str(today), "-q"], input=data, check=True, timeout=300,
                   env={**env, "RSEP_NATIVE": "0"})
    final = out.read_bytes()
    assert early.count(b"\n") >= 10 and final.startswith(early)
    assert final == today.read_bytes()
