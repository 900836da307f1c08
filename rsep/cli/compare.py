"""The ``rsep explain`` and ``rsep compare`` subcommands (added to rsep.cli.main)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rsep.algebra.query import ContinuousQuery
from rsep.cli.explain import explain
from rsep.cli.run import pair_arg
from rsep.lang import DIALECTS, dialect_of, parse_query
from rsep.lars import aggregates
from rsep.lars import compare as cmp
from rsep.lars.core import LarsError
from rsep.spark.plan import partitioning
from rsep.stream.time import parse_time_unit

# rsep's one table of exit codes (README, "Exit status"): a query or input error is 1 from
# every command (the same syntax error gives the same code from run, explain and compare),
# an operation the query cannot take is 2 (as bad usage), a disagreement 4
EXIT_AGREE, EXIT_ERROR, EXIT_REFUSED, EXIT_DISAGREE = 0, 1, 2, 4


def add_parser(sub: argparse._SubParsersAction) -> None:
    pair = pair_arg
    e = sub.add_parser("explain", help="show what the engine runs: an RSP query's algebra, dataset "
                       "and windows and (--lars) its LARS program (001); a SPASEQ query's "
                       "automaton; an EP-SPARQL query's operators")
    e.add_argument("query", metavar="QUERY_FILE")
    e.add_argument("--lars", action="store_true",
                   help="also print the LARS program: tau_1(cs(Q)) for C-SPARQL, tau_2 otherwise")
    e.add_argument("--format", choices=("text", "dot"), default="text")
    e.add_argument("--dialect", choices=sorted(DIALECTS))
    e.add_argument("--time-unit", help="length of one abstract time unit (e.g. 1m)")
    c = sub.add_parser("compare", help="run a query as C-SPARQL (pull) and CQELS (push), by the "
                       "engine and by LARS, and report push-pull agreement per interval (001)")
    c.add_argument("query", metavar="QUERY_FILE")
    c.add_argument("--stream", action="append", type=pair, default=[], metavar="IRI=PATH")
    c.add_argument("--graph", action="append", type=pair, default=[], metavar="IRI=PATH")
    c.add_argument("--period", type=int, required=True, metavar="U",
                   help="C-SPARQL's pulling period, in time units")
    c.add_argument("--until", type=int, help="last time point (default: the last event's time "
                   "rounded up to a multiple of U)")
    c.add_argument("--format", choices=("table", "jsonl"), default="table")
    c.add_argument("--dialect", choices=sorted(DIALECTS))
    c.add_argument("--time-unit", help="length of one abstract time unit (e.g. 1m)")


def run(args: argparse.Namespace) -> int:
    unit = parse_time_unit(args.time_unit) if args.time_unit else None
    text = Path(args.query).read_text(encoding="utf-8")
    q = parse_query(text, args.dialect, source=args.query)
    if args.command == "explain":
        sys.stdout.write(explain(q, lars=args.lars, fmt=args.format, time_unit_ms=unit))
        if args.format == "text":
            print("on Spark: " + partitioning(q).describe())
        return 0
    why = dialect_of(q).refusal("compare")
    if why:
        raise LarsError(why)
    # an aggregate query is compared by 001 Sec. 6's notion (COUNT/MAX/MIN); AVG, MEDIAN
    # and the others have none: NoAgreementNotion, reported with exit status 2
    assert isinstance(q, ContinuousQuery)  # (the RSP family's algebra: the dialects taking it)
    found = aggregates.find_aggregate(q)
    if not args.stream:
        raise ValueError("no input: give at least one --stream IRI=PATH")
    events = cmp.load_events(args.stream)
    graphs = cmp.load_graphs(args.graph)
    if found is not None:
        agg = aggregates.compare_aggregate(q, events, graphs, args.period, args.until, unit, found)
        aggregates.write_aggregate_comparison(agg, sys.stdout,
                                              "jsonl" if args.format == "jsonl" else "table")
        return EXIT_AGREE if agg.agree else EXIT_DISAGREE
    result = cmp.compare(q, events, graphs, args.period, args.until, unit)
    cmp.write_comparison(result, sys.stdout, "jsonl" if args.format == "jsonl" else "table")
    return EXIT_AGREE if result.agree else EXIT_DISAGREE


def main(args: argparse.Namespace) -> int:
    """``rsep explain`` and ``rsep compare``. Exit 0 (explained / agree everywhere), 1 (the
    query or an input cannot be used), 2 (the query is outside what the command takes:
    --lars or compare for a dialect or fragment without them, an aggregate with no
    agreement notion), 4 (compare: some interval disagrees)."""
    try:
        return run(args)
    except LarsError as e:
        print(f"rsep {args.command}: {e}", file=sys.stderr)
        return EXIT_REFUSED
    except Exception as e:  # noqa: BLE001 - every failure is reported, on one line
        print(f"rsep {args.command}: {e}", file=sys.stderr)
        return EXIT_ERROR
