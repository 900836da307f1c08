"""``rsep convert``: a stream written again as an RDF Message Log, one message per event.

Any stream rsep reads (TriG / N-Quads stream files, RDF Message Logs, Jelly, JSON lines)
becomes ``rdfm-trig``, ``rdfm-nquads`` or ``jelly`` (rsep.stream.writer says what a
message holds); reading the result with ``rsep run`` gives the same events.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import pyoxigraph as ox

from rsep.stream.event import Rejected
from rsep.stream.readers import STREAM_FORMATS, open_stream
from rsep.stream.source import DeadLetter, merge_streams
from rsep.stream.time import TimeConfig
from rsep.stream.writer import DRAFT_FORMATS, FORMATS, MessageWriter

_IRI = "urn:rsep:convert"


def add_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("convert", help="write a stream as an RDF Message Log (TriG, N-Quads, Jelly)")
    c.add_argument("input", metavar="STREAM_FILE", help="the stream ('-': standard input)")
    c.add_argument("--to", choices=FORMATS + DRAFT_FORMATS, required=True,
                   help="the log's format (rdfm-*: the current RDF Messages syntax; rdfm-draft-*: the "
                   "December 2025 draft's, with # @message comments)")
    c.add_argument("--output", "-o", required=True, help="the log to write ('-': standard output)")
    c.add_argument("--split", choices=("events", "resources"), default="events",
                   help="one message per event (its named graph and time: read back as the same "
                   "event), or per root resource of an event's graph with what it reaches (e.g. an "
                   "observation with its result), in the default graph, its time a statement "
                   "about the root (default: events)")
    c.add_argument("--stream-format", choices=STREAM_FORMATS, default="auto")
    c.add_argument("--time-predicate", action="append", default=[], metavar="IRI")
    c.add_argument("--dead-letter", metavar="PATH", help="write rejected records here (JSON lines)")
    c.add_argument("--quiet", "-q", action="store_true")


def main(args: argparse.Namespace) -> int:
    preds = args.time_predicate
    tc = TimeConfig() if not preds or preds == ["arrival"] else TimeConfig(point=tuple(preds))
    reader = open_stream(_IRI, args.input, fmt=args.stream_format, time=tc, time_predicates=preds)
    dead = DeadLetter(args.dead_letter, echo=None if args.quiet else sys.stderr)
    binary = args.to == "jelly"
    if args.output == "-":
        out = sys.stdout.buffer if binary else sys.stdout
    else:
        out = open(args.output, "wb" if binary else "w", encoding=None if binary else "utf-8")  # noqa: SIM115
    writer = MessageWriter(out, args.to)
    try:
        # merge_streams applies the ordering policy as rsep run does: what it rejects, run would too.
        for e in merge_streams([reader], dead):
            if args.split == "events":
                writer.write(e.graph, e.start, e.end, e.kind, [str(t) for t in e.triples],
                             graphs=_kept(e.graphs))
                continue
            if e.graphs:
                # a resource's message is its default graph: the other graphs have no place
                path, _, line = e.origin.rpartition(":")
                dead(Rejected(e.stream, path or e.origin, int(line) if line.isdigit() else 0, 0,
                              f"<{e.graph}> comes with {len(e.graphs)} other named graph(s), "
                              "which --split resources cannot write: use --split events", e.graph))
                continue
            for root, part in descriptions(e.triples):
                writer.write(root, e.start, e.end, e.kind, [str(t) for t in part], inline=True)
    finally:
        writer.close()
        dead.close()
        if args.output != "-":
            out.close()
    if not args.quiet:
        print(f"rsep: {writer.count} message(s) written to {args.output}", file=sys.stderr)
    if dead.count:  # (with --quiet too, as rsep run: exit status 3 alone says too little)
        print(f"rsep: {dead.count} input record(s) rejected"
              + (f" (written to {args.dead_letter})" if args.dead_letter else ""), file=sys.stderr)
    return 3 if dead.count else 0


def _kept(graphs: Sequence[tuple[str, Sequence[ox.Triple]]]) -> list[tuple[str, list[str]]]:
    return [(g, [str(t) for t in ts]) for g, ts in graphs]


def descriptions(triples: Sequence[ox.Triple]) -> list[tuple[str, list[ox.Triple]]]:
    """A graph cut into descriptions of its root resources: each subject that no other
    subject points to, with the triples of every subject reachable from it (a node two
    roots reach, such as a shared sampling instant, is in both). Triples no root reaches
    (a cycle) form one more part. Roots as N-Triples terms, in the graph's order."""
    about: dict[str, list[ox.Triple]] = {}
    for t in triples:
        about.setdefault(str(t.subject), []).append(t)
    pointed = {str(t.object) for t in triples if str(t.object) != str(t.subject)}
    out = []
    reached: set[str] = set()
    for root in about:
        if root in pointed:
            continue
        seen = {root}
        todo = [root]
        part: list[ox.Triple] = []
        while todo:
            for t in about[todo.pop()]:
                part.append(t)
                o = str(t.object)
                if o in about and o not in seen:
                    seen.add(o)
                    todo.append(o)
        reached |= seen
        out.append((root, part))
    rest = [t for t in triples if str(t.subject) not in reached]
    if rest:
        out.append((str(rest[0].subject), rest))
    return out
