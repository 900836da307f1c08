"""The ``rsep bench`` subcommand (added to rsep.cli.main)."""

from __future__ import annotations

import argparse
import sys

from rsep.bench.epsparql_etalis import SIZES
from rsep.bench.epsparql_etalis import main as etalis
from rsep.bench.runner import NAMES
from rsep.bench.runner import main as run


def add_parser(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bench", help="measure rsep side by side with other engines (CORE, Flink "
                       "MATCH_RECOGNIZE, RSP-JS, a naive baseline, rsep's reference evaluators) "
                       "on generated workloads; writes a CSV and PNG plots")
    b.add_argument("workload", choices=(*NAMES, "epsparql-etalis"), metavar="WORKLOAD",
                   help="a comparison, a sweep, or all: " + ", ".join(NAMES) + "; or "
                   "epsparql-etalis (EP-SPARQL against ETALIS on SWI-Prolog, sizes "
                   f"{', '.join(map(str, SIZES))} unless --size)")
    b.add_argument("--size", type=int, help="events per workload (default: per comparison, "
                   "10^5 for the peer comparisons and sweep-spark(-window), 2*10^4 for the other "
                   "sweeps)")
    b.add_argument("--engine", choices=("local", "spark"), default="local",
                   help="rsep's engine (spark: the Spark pipeline on local[2], replaying the "
                   "stream as a batch job, as `rsep run --engine spark --batch`)")
    b.add_argument("--peers", help="comma-separated subset of rsep,reference,core,flink,rspjs,"
                   "naive,esper,rsprs (rsep.bench.peers; epsparql-etalis: of rsep (the "
                   "ETALIS modes), rsep-formal (RSEP-QL's chronological and recent), "
                   "etalis, etalis-gc)")
    b.add_argument("--runs", type=int, default=3, help="runs per engine; the median is reported")
    b.add_argument("--out", default="benchmarks/results/peers", help="output folder")
    b.add_argument("--no-plots", action="store_true")
    b.add_argument("--cases", help="epsparql-etalis: patterns and policies, e.g. a,b-recent "
                   "(default: every pattern a-d under every policy)")
    b.add_argument("--sizes", help="epsparql-etalis: comma-separated stream lengths, e.g. "
                   "10000,100000,1000000 (instead of --size)")
    b.add_argument("--timeout", type=float, default=600,
                   help="epsparql-etalis: CPU seconds a run may take (user + system of its "
                   "processes; an engine over it is not run on larger sizes)")


def main(args: argparse.Namespace) -> int:
    if args.runs < 1:
        print("rsep bench: --runs must be at least 1", file=sys.stderr)
        return 2
    try:
        if args.workload == "epsparql-etalis":
            sizes = (tuple(int(x) for x in args.sizes.split(",")) if args.sizes else
                     (args.size,) if args.size else None)
            return etalis(sizes, args.runs, args.out, args.cases,
                          args.timeout, plots=not args.no_plots,
                          only=tuple(args.peers.split(",")) if args.peers else None,
                          log=lambda s: print(s, file=sys.stderr, flush=True))
        return run(args.workload, args.size, args.engine, args.peers, args.runs, args.out,
                   plots=not args.no_plots, log=lambda s: print(s, file=sys.stderr, flush=True))
    except ValueError as e:
        print(f"rsep bench: {e}", file=sys.stderr)
        return 2
