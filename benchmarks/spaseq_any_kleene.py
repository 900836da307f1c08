"""Skip-till-any with Kleene+ (``SEQ (A: B+: C)``, 002's Query 4 with ``B+``) against the window.

Each configuration runs in a process of its own (so that its peak RSS is its own), reading
the stock stream file as ``rsep run`` does (StreamFile, merge_streams, Engine.run: nothing
parsed beforehand, so a 10^6-event stream needs no more memory than a short one), and
prints CPU µs per event and the matches of each tenth of the stream, µs per match, the
most live runs and the peak RSS. Per-event cost flat along the stream means the engine's
state stays bounded by the window; against the window, cost per *match* stays flat while
the matches per event grow with the window (every earlier rise of a company pairs with
every later fall within the window): polynomial, where an engine that enumerates the
subsets of B's events (OpenCEP-style skip-till-any Kleene closure) grows exponentially.

    .venv/bin/python benchmarks/spaseq_any_kleene.py --events 1000000 --windows 1000
    .venv/bin/python benchmarks/spaseq_any_kleene.py --events 100000 \\
        --windows 100 300 1000 3000 10000 --budget 120 --plot docs/img/spaseq-any-kleene.png
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_stock import STREAM_IRI, generate  # noqa: E402
from spaseq_throughput import query  # noqa: E402


def one(path: str, n_events: int, window: int, kleene: bool, budget: float) -> dict:
    """One configuration in this process: per tenth, CPU µs per event and matches."""
    from rsep import Engine, parse_query
    from rsep.stream.files import StreamFile
    from rsep.stream.source import DeadLetter, merge_streams

    eng = Engine()
    eng.register(parse_query(query(3, "any", window, kleene)), name="q")
    rt = eng.queries[0]
    seg = max(1, n_events // 10)
    tenths: list[tuple[float, int]] = []  # (µs per event, matches) per tenth
    n = outs = 0
    seen = [0, 0]  # events, outputs at the last mark
    c0 = last = time.process_time()
    over = False

    def pulled():
        # marks taken as the engine pulls events: a tenth's matches are those its events made
        nonlocal n, last, over
        for ev in merge_streams([StreamFile(path, STREAM_IRI)], DeadLetter(None)):
            yield ev
            n += 1
            if n % seg == 0:
                now = time.process_time()
                tenths.append(((now - last) / (n - seen[0]) * 1e6, outs - seen[1]))
                seen[0], seen[1], last = n, outs, now
                if now - c0 > budget:
                    over = True
                    return

    for _ in eng.run(pulled()):
        outs += 1
    cpu = time.process_time() - c0
    st = rt.stats
    return {"window": window, "kleene": kleene, "events": n, "cpu": cpu, "matches": outs,
            "over": over, "tenths": tenths, "live": st.max_live if st else 0,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--file", default="/tmp/rsep_bench/stock_{n}.trig")
    ap.add_argument("--windows", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--kleene", choices=["yes", "both"], default="yes",
                    help="both: also the plain A: B: C")
    ap.add_argument("--budget", type=float, default=600.0, help="CPU seconds per run")
    ap.add_argument("--plot", help="write a PNG of cost against the window here")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # a worker: window,kleene
    a = ap.parse_args()
    path = Path(a.file.format(n=a.events))
    if a.one:
        w, k = a.one.split(",")
        print(json.dumps(one(str(path), a.events, int(w), k == "1", a.budget)))
        return 0
    if not path.is_file():
        generate(path, a.events)
    print(f"stream: {path} ({a.events} events); load average {os.getloadavg()[0]:.1f}")
    print("| query | window | events | µs/event | matches | µs/match | matches/event | "
          "max live runs | peak RSS MB | µs/event per tenth |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for kl in ([True] if a.kleene == "yes" else [True, False]):
        for w in a.windows:
            out = subprocess.run([sys.executable, __file__, "--events", str(a.events), "--file",
                                  a.file, "--budget", str(a.budget), "--one", f"{w},{int(kl)}"],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            rows.append(r)
            per_ev = r["cpu"] / r["events"] * 1e6
            per_m = r["cpu"] / r["matches"] * 1e6 if r["matches"] else float("nan")
            tenths = "/".join(f"{t:.0f}" for t, _ in r["tenths"])
            print(f"| {'A: B+: C' if kl else 'A: B: C'} | {w:,} | {r['events']:,}"
                  f"{' (budget)' if r['over'] else ''} | {per_ev:,.1f} | {r['matches']:,} | "
                  f"{per_m:,.1f} | {r['matches'] / r['events']:,.2f} | {r['live']:,} | "
                  f"{r['rss_mb']:,.0f} | {tenths} |", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    if a.plot:
        plot(rows, a.plot)
    return 0


def plot(rows: list[dict], out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for kl, style in ((True, "o-"), (False, "s--")):
        rs = sorted((r for r in rows if r["kleene"] is kl), key=lambda r: r["window"])
        if not rs:
            continue
        name = "A: B+: C" if kl else "A: B: C"
        ws = [r["window"] for r in rs]
        ax.plot(ws, [r["cpu"] / r["events"] * 1e6 for r in rs], style, label=f"{name}: µs per event")
        ax.plot(ws, [r["cpu"] / max(1, r["matches"]) * 1e6 for r in rs], style, alpha=0.6,
                label=f"{name}: µs per match")
        ax.plot(ws, [r["matches"] / r["events"] for r in rs], style, alpha=0.35,
                label=f"{name}: matches per event")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("WITHIN (events per window)")
    ax.set_title("SPASEQ skip-till-any on the stock stream (CPU, one core)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
