"""``rsep bench epsparql-etalis``: rsep's EP-SPARQL against ETALIS, its own engine (issue 25).

The stream: point events, one a time unit, each one triple ``:c<k> :<kind> v`` (5 keys,
kinds a / b / c drawn uniformly, v a per-key integer random walk from 100 in steps of
-5..+5). The patterns: (a) an unbounded SEQ with a value FILTER, (b) a SEQ of two within
10 units, (c) a SEQ of three within 10, (d) a SEQ of two with a value FILTER within 20.

Engines, each a whole process: rsep (``rsep run --dialect epsparql --policy P``'s engine,
reading TriG) and ETALIS (SWI-Prolog, reading the same stream as ready-made facts), the
latter as released (its garbage collector runs on wall-clock alarms: a replayed stream is
never pruned) and with its pattern garbage collection run on stream time (``etalis-gc``,
for the patterns with a window). Under unrestricted, rsep's own policy runs; under
chronological / recent, its ETALIS-compatible mode (``etalis-chronological`` /
``etalis-recent``, docs/semantics.md "EP-SPARQL as ETALIS runs it"). Every ETALIS run's
complex events (values and interval) are compared with rsep's: they must be identical.
Under chronological / recent, ``rsep-formal`` runs RSEP-QL's own policies too (000 Table 1,
rsep's default reading): its complex events are compared with ETALIS's and, where they
differ, marked as differing by definition (the two readings select differently).

CPU per event is given three ways, start-up apart (imports and the query's or rules'
compilation): ``cpu_us_per_event`` the whole, each engine's reading of its input and its
engine; ``read_cpu_us_per_event`` the reading alone (rsep: parsing the TriG file into
events, timed in a pass of its own before the run; ETALIS: loading its ready-made facts);
``engine_cpu_us_per_event`` the rest.
"""

from __future__ import annotations

import csv
import json
import os
import random
import shutil
import statistics
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rsep.algebra.epsparql import EpSparqlQuery
from rsep.bench import peers
from rsep.bench.etalis import fact, rules
from rsep.bench.runner import machine
from rsep.bench.workloads import StreamOut, StreamWriter
from rsep.epsparql.etalis_rules import compile_query
from rsep.lang import parse_query

EX = "http://example.org/"
STREAM = EX + "epstream"
PREFIX = f"PREFIX : <{EX}>\n"
PATTERNS: dict[str, str] = {
    "a": "SELECT ?k ?a ?b WHERE { {?k :a ?a} SEQ {?k :b ?b} FILTER (?b > ?a + 10) }",
    "b": "SELECT ?k ?a ?b WHERE { {?k :a ?a} SEQ {?k :b ?b} FILTER (getDURATION() <= 10) }",
    "c": "SELECT ?k ?a ?b ?c WHERE { {?k :a ?a} SEQ {?k :b ?b} SEQ {?k :c ?c} "
         "FILTER (getDURATION() <= 10) }",
    "d": "SELECT ?k ?a ?b WHERE { {?k :a ?a} SEQ {?k :b ?b} "
         "FILTER (?b > ?a + 3 && getDURATION() <= 20) }",
}
POLICIES = ("unrestricted", "chronological", "recent")
RSEP_POLICY = {"unrestricted": "unrestricted", "chronological": "etalis-chronological",
               "recent": "etalis-recent"}
ENGINES = ("rsep", "rsep-formal", "etalis", "etalis-gc")
RSEP_ENGINES = ("rsep", "rsep-formal")
SIZES = (1_000, 10_000, 100_000)
GEN_VERSION = "1"  # bump when the generator's output changes: old files are not reused


# ETALIS is a public repository, not a package of any registry: rsep neither ships it nor
# looks for it beside itself, so a user points at their own clone.
NEEDS_ETALIS = ("needs ETALIS: set RSEP_ETALIS_SRC to the src/ folder of a clone of ETALIS's "
                "public repository (github sspider/etalis, its etalis/src), and install SWI-Prolog "
                "(Debian's swi-prolog-nox: bash benchmarks/peers/setup_etalis.sh)")


def etalis_src() -> Path | None:
    """ETALIS's src/ folder, from $RSEP_ETALIS_SRC (github sspider/etalis, LGPL-3.0; not
    part of rsep); None when it is not set."""
    env = os.environ.get("RSEP_ETALIS_SRC")
    return Path(env) if env else None


def check_etalis() -> Path:
    """ETALIS's src/ folder and SWI-Prolog, or a ValueError whose message is the one line a
    user needs (what is missing, and how to get it)."""
    src = etalis_src()
    if src is None:
        raise ValueError(f"RSEP_ETALIS_SRC is not set: {NEEDS_ETALIS}")
    if not (src / "etalis.P").is_file():
        raise ValueError(f"RSEP_ETALIS_SRC={src} holds no etalis.P: {NEEDS_ETALIS}")
    if shutil.which("swipl") is None:
        raise ValueError(f"swipl (SWI-Prolog) is not on PATH: {NEEDS_ETALIS}")
    return src


# ------------------------------------------------------------------ the stream


@dataclass(frozen=True)
class Stream:
    size: int
    trig: str  # for rsep
    facts: str  # input/4 facts, for ETALIS


def generate(directory: Path, size: int, seed: int = 25, keys: int = 5) -> Stream:
    """The stream of the module's docstring, as TriG and as ETALIS facts (reused when
    already written with the same parameters)."""
    d = directory / f"epstream-{size}-seed{seed}-keys{keys}"
    s = Stream(size, str(d / "stream.trig"), str(d / "stream.pl"))
    stamp = d / "done.json"
    params = {"size": size, "seed": seed, "keys": keys, "version": GEN_VERSION}
    if stamp.is_file() and json.loads(stamp.read_text()) == params:
        return s
    d.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    walk = [100] * keys
    w = StreamWriter(StreamOut(STREAM, s.trig, str(d / "stream.csv"), ["t", "key", "kind", "v"]),
                     f"{EX}bench/epstream/")
    with open(s.facts + ".part", "w", encoding="utf-8") as f:
        for t in range(size):
            k = rng.randrange(keys)
            kind = "abc"[rng.randrange(3)]
            walk[k] += rng.randint(-5, 5)
            key, pred = f"{EX}c{k}", f"{EX}{kind}"
            w.event(t, [(key, pred, walk[k])], [t, f"c{k}", kind, walk[k]])
            f.write(fact(t, (t, t, [[f"<{key}>", f"<{pred}>",
                                     f'"{walk[k]}"^^<http://www.w3.org/2001/XMLSchema#integer>']])))
    w.close()
    Path(s.facts + ".part").replace(s.facts)
    stamp.write_text(json.dumps(params))
    return s


# ------------------------------------------------------------------ the engines


class _Worker(peers.Peer):
    """A peer of this comparison only: its worker is named here, not in peers.PEERS."""

    def command(self, spec_path: Path) -> list[str]:
        worker = "epsparql_worker.py" if self.name == "rsep" else "etalis_worker.py"
        return [sys.executable, str(peers.WORKERS / worker), str(spec_path)]


RSEP = _Worker("rsep", "rsep (EP-SPARQL, --policy as below)", None)
ETALIS = _Worker("etalis", "ETALIS on SWI-Prolog", "setup_etalis.sh")


def query(pattern: str) -> str:
    return PREFIX + PATTERNS[pattern]


def etalis_rules(pattern: str) -> str:
    q = parse_query(query(pattern), "epsparql")
    assert isinstance(q, EpSparqlQuery)
    return rules(compile_query(q))


def has_window(pattern: str) -> bool:
    return "getDURATION" in PATTERNS[pattern]


def spec(engine: str, pattern: str, policy: str, s: Stream, workdir: Path) -> dict:
    if engine in RSEP_ENGINES:
        return {"query": query(pattern),
                "policy": policy if engine == "rsep-formal" else RSEP_POLICY[policy],
                "streams": [[STREAM, s.trig]], "matches": str(workdir / "matches.jsonl")}
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "rules.event").write_text(etalis_rules(pattern), encoding="utf-8")
    return {"etalis_src": str(check_etalis()), "policy": policy, "rules": str(workdir / "rules.event"),
            "stream": s.facts, "matches": str(workdir / "matches.jsonl"),
            "gc": "stream" if engine == "etalis-gc" else "off"}


# ------------------------------------------------------------------ agreement


def complex_events(path: Path) -> Counter:
    """The complex events of a run: (values, from, to), as a bag."""
    out: Counter = Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                out[(tuple(d["values"]), d["from"], d["to"])] += 1
    return out


def agreement(rsep: Path, peer: Path) -> str:
    a, b = complex_events(rsep), complex_events(peer)
    if a == b:
        return f"identical ({sum(a.values())} complex events)"
    only_a, only_b = a - b, b - a
    ex = [f"rsep {k}" for k in list(only_a)[:1]] + [f"etalis {k}" for k in list(only_b)[:1]]
    return (f"DIFFERENT: {sum((a & b).values())} common, {sum(only_a.values())} only in rsep, "
            f"{sum(only_b.values())} only in ETALIS ({'; '.join(ex)})")


def by_definition(base: Path, results: dict, failed: dict) -> str:
    """The formal policies' complex events against ETALIS's: not an agreement check (the
    readings differ by definition, docs/semantics.md "EP-SPARQL as ETALIS runs it"), a count
    of how far apart they are on this stream; empty when ETALIS was not run."""
    peer = next((e for e in ("etalis", "etalis-gc") if e in results and e not in failed), None)
    if peer is None:
        return ""
    got = agreement(base / "rsep-formal" / "matches.jsonl", base / peer / "matches.jsonl")
    if got.startswith("identical"):
        return f"{got}, as ETALIS"
    return "by definition " + got.removeprefix("DIFFERENT: ").replace("only in ETALIS", f"only in {peer}")


# ------------------------------------------------------------------ the runs


FIELDS = ["pattern", "policy", "engine", "rsep_policy", "size", "runs", "status", "startup_s",
          "startup_cpu_s", "cpu_s_median", "cpu_us_per_event", "read_cpu_us_per_event",
          "engine_cpu_us_per_event",
          "results_per_cpu_s", "run_s_median",
          "peak_rss_mb", "outputs",
          "agreement", "query"]


def cases(selection: str | None = None) -> list[tuple[str, str]]:
    """(pattern, policy) pairs: all, or those named as ``a,b-recent,...``."""
    every = [(p, pol) for p in PATTERNS for pol in POLICIES]
    if not selection:
        return every
    out = []
    for name in selection.split(","):
        pat, _, pol = name.strip().partition("-")
        if pat not in PATTERNS or (pol and pol not in POLICIES):
            raise ValueError(f"unknown case {name!r}: a pattern ({', '.join(PATTERNS)}) and "
                             f"optionally -{'/-'.join(POLICIES)}")
        out += [c for c in every if c[0] == pat and (not pol or c[1] == pol)]
    return out


def engines(pattern: str, policy: str, only: tuple[str, ...] | None = None) -> tuple[str, ...]:
    # the collector prunes by the rule's window: a pattern without one has nothing to prune;
    # under unrestricted the formal reading is rsep's one reading
    every = [e for e in ENGINES if (e != "etalis-gc" or has_window(pattern))
             and (e != "rsep-formal" or policy != "unrestricted")]
    return tuple(e for e in every if only is None or e in only)


def run_case(pattern: str, policy: str, sizes: tuple[int, ...], runs: int, out: Path,
             timeout: float, log: Callable[[str], None],
             only: tuple[str, ...] | None = None) -> list[dict]:
    """Every engine on each size, alternated run by run; an engine that timed out is not
    run on larger sizes."""
    rows: list[dict] = []
    over: dict[str, int] = {}  # engine -> the size it timed out at
    for size in sizes:
        s = generate(out / "data", size)
        results: dict[str, list[peers.RunResult]] = {e: [] for e in engines(pattern, policy, only)}
        failed: dict[str, str] = {}
        for e in results:
            if e in over:
                failed[e] = f"over {timeout:.0f} CPU s at {over[e]} events"
        for k in range(runs):
            for e in results:
                if e in failed:
                    continue
                wd = out / "runs" / "epsparql-etalis" / f"{pattern}-{policy}-{size}" / e
                log(f"  ({pattern}) {policy} {size} {e} run {k + 1}")
                r = peers.run(RSEP if e in RSEP_ENGINES else ETALIS, spec(e, pattern, policy, s, wd), wd,
                              timeout, cpu_timeout=True)
                if not r.ok:
                    log(f"    {r.error}")
                    if r.error.startswith("timed out"):
                        over[e] = size
                        failed[e] = f"over {timeout:.0f} CPU s"
                    else:
                        failed[e] = r.error
                    continue
                results[e].append(r)
        base = out / "runs" / "epsparql-etalis" / f"{pattern}-{policy}-{size}"
        for e, rs in results.items():
            row: dict[str, object] = {f: "" for f in FIELDS}
            row.update(pattern=pattern, policy=policy, engine=e, size=size, runs=len(rs),
                       rsep_policy=policy if e == "rsep-formal" else RSEP_POLICY[policy],
                       query=PATTERNS[pattern])
            if e in failed:
                row["status"] = failed[e]
                rows.append(row)
                continue
            # the process's own clock (the tree's, sampled every 20 ms, misses the last samples);
            # each engine's reading of its input counted beside its engine: rsep parses TriG
            # inside its run (timed apart in a pass of its own before "ready"), ETALIS loads
            # its ready-made facts before "ready"
            st = [r.stages or {} for r in rs]
            read = statistics.median(s.get("read_cpu_s", 0.0) for s in st)
            if e in RSEP_ENGINES:
                cpu = statistics.median(s.get("cpu_s", r.cpu_s) for s, r in zip(st, rs, strict=True))
                engine_cpu = statistics.median(s.get("cpu_s", r.cpu_s) - s.get("read_cpu_s", 0.0)
                                               for s, r in zip(st, rs, strict=True))
            else:
                cpu = statistics.median(s.get("cpu_s", r.cpu_s) + s.get("read_cpu_s", 0.0)
                                        for s, r in zip(st, rs, strict=True))
                engine_cpu = statistics.median(s.get("cpu_s", r.cpu_s) for s, r in zip(st, rs, strict=True))
            boot = statistics.median(s.get("startup_cpu_s", 0.0) for s in st)
            row.update(status="ok", startup_s=round(statistics.median(r.startup_s for r in rs), 3),
                       startup_cpu_s=round(boot, 3),
                       cpu_s_median=round(cpu, 3), cpu_us_per_event=round(cpu / size * 1e6, 1),
                       read_cpu_us_per_event=round(read / size * 1e6, 1),
                       engine_cpu_us_per_event=round(engine_cpu / size * 1e6, 1),
                       run_s_median=round(statistics.median(r.run_s for r in rs), 3),
                       peak_rss_mb=round(max(r.peak_rss_mb for r in rs), 1))
            n = sum(complex_events(base / e / "matches.jsonl").values())
            row.update(outputs=n, results_per_cpu_s=round(n / cpu) if cpu > 0 else "")
            if e == "rsep-formal":
                row["agreement"] = by_definition(base, results, failed)
                if row["agreement"]:
                    log(f"    ({pattern}) {policy} {size} {e} vs etalis: {row['agreement']}")
            elif e != "rsep":
                row["agreement"] = ("rsep not run" if "rsep" in failed or "rsep" not in results else
                                    agreement(base / "rsep" / "matches.jsonl", base / e / "matches.jsonl"))
                log(f"    ({pattern}) {policy} {size} {e} vs rsep: {row['agreement']}")
            rows.append(row)
    return rows


def main(sizes: tuple[int, ...] | None, runs: int, out: str, selection: str | None = None,
         timeout: float = 600, plots: bool = True, log: Callable[[str], None] = print,
         only: tuple[str, ...] | None = None) -> int:
    """``only``: a subset of ENGINES (the agreement is checked when rsep is among them)."""
    if only is not None and (bad := set(only) - set(ENGINES)):
        raise ValueError(f"unknown engines {', '.join(sorted(bad))}: {', '.join(ENGINES)}")
    # before anything is generated or run: a missing peer is one line, at once
    if only is None or set(only) & {"etalis", "etalis-gc"}:
        check_etalis()
    outdir = Path(out).resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    m = machine()
    log(f"rsep bench epsparql-etalis: {m['cpu']}, {m['cpus']} CPUs, load {m['load']}, "
        f"commit {m['commit']}")
    rows: list[dict] = []
    path = outdir / "epsparql-etalis.csv"
    for pattern, policy in cases(selection):
        rows += run_case(pattern, policy, sizes or SIZES, runs, outdir, timeout, log, only)
        with open(path, "w", encoding="utf-8", newline="") as f:  # after each case: a long
            w = csv.DictWriter(f, FIELDS)                          # run's rows so far
            w.writeheader()
            w.writerows(rows)
    log(f"wrote {path} (load after: {machine()['load']})")
    if plots:
        log(f"wrote {plot(rows, outdir / 'bench-epsparql-etalis.png')}")
    return 0 if all(not str(r["agreement"]).startswith("DIFFERENT") for r in rows) else 1


def plot(rows: list[dict], path: Path) -> Path:
    """CPU per event against stream length, one panel per pattern, a line per engine and
    policy."""
    import matplotlib  # heavy: loaded only when plots are drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): no display needed

    pats = sorted({r["pattern"] for r in rows})
    fig, axes = plt.subplots(1, len(pats), figsize=(4.2 * len(pats), 3.8), squeeze=False)
    colors = {"rsep": "#1b7837", "rsep-formal": "#7fbc41", "etalis": "#b2182b", "etalis-gc": "#2166ac"}
    styles = {"unrestricted": "-", "chronological": "--", "recent": ":"}
    for ax, pat in zip(axes[0], pats, strict=True):
        for e in ENGINES:
            for pol in POLICIES:
                pts = sorted((int(r["size"]), float(r["cpu_us_per_event"])) for r in rows
                             if r["pattern"] == pat and r["engine"] == e and r["policy"] == pol
                             and r["status"] == "ok")
                if pts:
                    ax.plot(*zip(*pts, strict=True), styles[pol], marker="o", color=colors[e],
                            label=f"{e} {pol}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"({pat})", fontsize=9)
        ax.set_xlabel("events in the stream")
        ax.set_ylabel("CPU us per event (steady state)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_csv(out: str, *paths: str) -> Path:
    """The plot of :func:`plot` from the rows of several runs' CSV files (e.g. 10^4-10^5
    with every engine, 10^6 with some)."""
    best: dict[tuple, dict] = {}  # a case measured in several files: its most runs
    for p in paths:
        with open(p, encoding="utf-8", newline="") as f:
            for r in csv.DictReader(f):
                k = (r["pattern"], r["policy"], r["engine"], r["size"])
                if r["status"] == "ok" and (k not in best or int(r["runs"]) > int(best[k]["runs"])):
                    best[k] = r
    return plot(list(best.values()), Path(out))


if __name__ == "__main__":  # python -m rsep.bench.epsparql_etalis plot OUT.png A.csv [B.csv ...]
    if len(sys.argv) < 4 or sys.argv[1] != "plot":
        sys.exit("usage: python -m rsep.bench.epsparql_etalis plot OUT.png A.csv [B.csv ...]")
    print(plot_csv(sys.argv[2], *sys.argv[3:]))
