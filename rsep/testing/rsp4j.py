"""RSP4J's published queries in rsep: ``python -m rsep.testing rsp4j [--manifest FILE]``.

RSP4J (github streamreasoning/rsp4j) is a public repository, not a package of any registry,
so its texts are neither shipped with rsep nor looked for beside it: the check reads them
from a checkout of it at the commit tests/data/rsp-peers/manifest.toml names, given in
``$RSEP_RSP4J``. The manifest says where each query stands (a ``.rspql`` file, a Java string
starting on a line, or a fenced block of ``example-queries.md``) and what rsep must do with
it: run it (parsed in the dialect it names, on two items per stream) or refuse it with the
message it gives. One line is printed per query: ``runs``, ``refused as the manifest
says``, or ``WRONG: ...``; the exit code is 0 when none is wrong, 1 otherwise, and 2 when
RSP4J's files are not there.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox

from rsep.algebra.query import ContinuousQuery
from rsep.lang import parse_query
from rsep.lang.errors import QueryError
from rsep.runtime.engine import Engine
from rsep.stream.event import Event
from rsep.stream.time import TimeKind
from rsep.testing.snippets import ROOT

MANIFEST = ROOT / "tests" / "data" / "rsp-peers" / "manifest.toml"
COMMIT = "c46e0f674fb740b85543e73d8013196b18763abd"
NEEDS_RSP4J = ("needs RSP4J's files: set RSEP_RSP4J to a checkout of RSP4J's public repository "
               f"(github streamreasoning/rsp4j) at commit {COMMIT}")


def java_string_at(source: str, line: int) -> str:
    """The Java string expression ("..." + "..." ...) that starts on ``line`` (1-based),
    as the program builds it; lines that are // comments in between are skipped."""
    lines = [("" if ln.strip().startswith("//") else ln) for ln in source.split("\n")]
    text = "\n".join(lines)
    start = sum(len(ln) + 1 for ln in lines[: line - 1])
    lit = r'"(?:[^"\\\n]|\\.)*"'
    m = re.compile(rf"{lit}(?:\s*\+\s*{lit})*").search(text, start)
    if not m:
        raise ValueError(f"no Java string at line {line}")
    esc = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "r": "\r"}
    return "".join(re.sub(r"\\(.)", lambda e: esc[e[1]], p[1:-1]) for p in re.findall(lit, m[0]))


def markdown_block_at(source: str, line: int) -> str:
    """The text of the fenced code block whose first line is ``line`` (1-based)."""
    rest = source.split("\n")[line - 1:]
    if "```" not in rest:
        raise ValueError(f"no closing ``` after line {line}")
    return "\n".join(rest[: rest.index("```")]) + "\n"


def query_text(root: Path, entry: dict) -> str:
    """The query of a manifest entry, read from RSP4J's files under ``root``."""
    source = (root / entry["path"]).read_text(encoding="utf-8")
    if entry["path"].endswith(".java"):
        return java_string_at(source, entry["line"])
    if entry["path"].endswith(".md"):
        return markdown_block_at(source, entry["line"])
    return source


def run_anywhere(q: ContinuousQuery) -> list[dict]:
    """Register a query and run it on two items on each of its streams, every graph it
    names supplied empty; times in ms."""
    eng = Engine(time_unit_ms=1)
    for g in q.dataset.default_graphs + q.dataset.named_graphs:
        eng.add_graph(g, [])
    eng.register(q)
    events = [Event(stream=s, graph=f"{s}/g{t}", start=t, end=t,
                    triples=(ox.Triple(ox.NamedNode("urn:rsep:s"), ox.NamedNode("urn:rsep:p"),
                                       ox.NamedNode("urn:rsep:o")),),
                    kind=TimeKind.ABSTRACT, origin="rsp4j:0")
              for t in (1000, 3000) for s in q.dataset.streams]
    return [o.to_json() for o in eng.run(events, until=20_000)]


def verdict(root: Path, entry: dict) -> str:
    """``runs``, ``refused as the manifest says``, or ``WRONG: why``."""
    try:
        text = query_text(root, entry)
    except (OSError, ValueError) as e:
        return f"WRONG: cannot read the query ({e})"
    want = entry["expect"]
    try:
        q = parse_query(text)
        if not isinstance(q, ContinuousQuery):  # RSP4J publishes RSP queries only
            return f"WRONG: read as an event query ({type(q).__name__})"
        if want == "runs" and q.dialect != entry.get("dialect", "rspql"):
            return f"WRONG: read as {q.dialect}, the manifest says {entry.get('dialect', 'rspql')}"
        run_anywhere(q)
    except QueryError as e:
        if want == "refused" and re.search(entry["error"], str(e)):
            return "refused as the manifest says"
        if want == "refused":
            return f"WRONG: refused, but not as the manifest says ({e})"
        return f"WRONG: refused ({e})"
    except Exception as e:  # a crash is a wrong answer too, and the other queries still run
        return f"WRONG: {type(e).__name__}: {e}"
    if want == "refused":
        return f"WRONG: runs, the manifest says refused ({entry['error']})"
    return "runs"


def check(root: Path, manifest: Path = MANIFEST,
          out: Callable[[str], None] = print) -> int:
    entries = tomllib.loads(manifest.read_text(encoding="utf-8")).get("rsp4j", [])
    wrong = 0
    for entry in entries:
        v = verdict(root, entry)
        wrong += v.startswith("WRONG")
        out(f"{entry['path']}:{entry['line']}: {v}")
    out(f"{len(entries)} queries: {len(entries) - wrong} as the manifest says, {wrong} wrong")
    return 1 if wrong else 0


def main(args: list[str]) -> int:
    manifest = MANIFEST
    if args[:1] == ["--manifest"] and len(args) == 2:
        manifest = Path(args[1])
    elif args:
        print("usage: python -m rsep.testing rsp4j [--manifest FILE]", file=sys.stderr)
        return 2
    env = os.environ.get("RSEP_RSP4J")
    if not env:
        print(f"rsep.testing rsp4j: RSEP_RSP4J is not set: {NEEDS_RSP4J}", file=sys.stderr)
        return 2
    if not Path(env).is_dir():
        print(f"rsep.testing rsp4j: RSEP_RSP4J={env} is not a directory: {NEEDS_RSP4J}",
              file=sys.stderr)
        return 2
    return check(Path(env), manifest)
