"""PNG plots of a ``rsep bench`` run, one idea per picture."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

COLORS = {"rsep": "#1b7837", "reference": "#7fbf7b", "core": "#762a83", "flink": "#e08214",
          "rspjs": "#2166ac", "naive": "#878787"}


def _num(v: object) -> float | None:
    try:
        return float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def plot_all(rows: list[dict], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    ok = [r for r in rows if r["status"] == "ok" and _num(r["events_per_s"])]
    head = [r for r in ok if not r["param"]]
    if head:
        written.append(_throughput(head, out / "peers-throughput.png"))
        written.append(_breakdown(head, out / "time-breakdown.png"))
    titles = {"window_events": ("sweep-window", "window size (events; 6 triples each)", True),
              "pattern_length": ("sweep-length", "pattern length (GPMs)", False),
              "strategy": ("sweep-strategy", "selection strategy", False),
              "kb_triples": ("sweep-kb", "background KB size (triples)", True)}
    for param, (name, label, logx) in titles.items():
        sel = [r for r in ok if r["param"] == param]
        if sel:
            written.append(_sweep(sel, label, logx, out / f"{name}.png"))
    sel = [r for r in ok if r["param"] == "spark_cores"]
    if sel:
        written.append(_spark(sel, out / "sweep-spark.png"))
    return written


def _throughput(rows: list[dict], path: Path) -> Path:
    import matplotlib.pyplot as plt

    comps = list(dict.fromkeys(r["comparison"] for r in rows))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(comps) + 2), 4.2))
    by = defaultdict(dict)
    for r in rows:
        by[r["comparison"]][r["peer"]] = r
    width = 0.8 / max(len(v) for v in by.values())
    labelled: set[str] = set()
    for i, c in enumerate(comps):
        present = list(by[c])
        for j, p in enumerate(present):
            r = by[c][p]
            ev = float(r["events"])
            med, lo, hi = (float(r[k]) for k in ("run_s_median", "run_s_min", "run_s_max"))
            y = ev / med
            x = i + (j - (len(present) - 1) / 2) * width
            ax.bar(x, y, width, yerr=[[y - ev / hi], [ev / lo - y]], capsize=2,
                   color=COLORS.get(p), label=None if p in labelled else p)
            labelled.add(p)
            ax.text(x, y, f"{y:,.0f}", ha="center", va="bottom", fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(range(len(comps)))
    ax.set_xticklabels(comps, fontsize=8)
    ax.set_ylabel("events/s, steady state (log)")
    ax.set_title("Throughput per engine (median of runs, bars: min-max)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _breakdown(rows: list[dict], path: Path) -> Path:
    """Start-up, then the steady state split into the stages a worker reports (e.g. the
    naive baseline's store building vs querying, the reference's reading vs evaluating)."""
    import matplotlib.pyplot as plt

    labels = [f"{r['comparison']}\n{r['peer']}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(rows) + 2), 4.4))
    hatches = ("//", "..", "xx", "\\\\", "++")
    seen: set[str] = set()
    for i, r in enumerate(rows):
        start, steady = float(r["startup_s"] or 0), float(r["run_s_median"] or 0)
        lab = "start-up (process, imports, JVM, compile)"
        ax.bar(i, start, color="#bababa", label=None if lab in seen else lab)
        seen.add(lab)
        bottom = start
        stages = [kv.split("=") for kv in r.get("stages", "").split(";") if "=" in kv]
        # a warm-up job (Flink, Spark) is part of start-up, not of the stream
        stages = [(k, float(v)) for k, v in stages if not k.startswith("job_")]
        rest = steady - sum(v for _, v in stages) if stages else steady
        for j, (k, v) in enumerate(stages):
            ax.bar(i, v, bottom=bottom, color=COLORS.get(r["peer"], "#444444"),
                   hatch=hatches[j % len(hatches)], edgecolor="white",
                   label=None if k in seen else k)
            seen.add(k)
            bottom += v
        if rest > 0:
            ax.bar(i, rest, bottom=bottom, color=COLORS.get(r["peer"], "#444444"))
        ax.text(i, start + steady, f"{start:.1f} + {steady:.1f} s", ha="center", va="bottom",
                fontsize=7)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("seconds (medians)")
    ax.set_title("Where the time goes: start-up, then the stream (colour: engine)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _sweep(rows: list[dict], label: str, logx: bool, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    series = defaultdict(list)
    for r in rows:
        # a description names the swept value ("SEQ of 3 GPMs"): one series for all values
        what = re.sub(rf"\b{re.escape(str(r['value']))}\b", "n", r["what"])
        series[(r["comparison"], r["peer"], what[:40])].append(r)
    categorical = not all(_num(r["value"]) is not None for r in rows)
    cats = list(dict.fromkeys(str(r["value"]) for r in rows))
    for (_, peer, what), rs in series.items():
        if not categorical:
            rs = sorted(rs, key=lambda r: float(r["value"]))
        xs = [cats.index(str(r["value"])) if categorical else float(r["value"]) for r in rs]
        ys = [float(r["events_per_s"]) for r in rs]
        name = peer if len({k[2] for k in series}) == 1 else f"{peer}: {what.split(',')[0][:28]}"
        ax.plot(xs, ys, marker="o", label=name, color=COLORS.get(peer))
    if categorical:
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels(cats)
    elif logx:
        ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(label)
    ax.set_ylabel("events/s, steady state (log)")
    ax.set_title(f"Throughput vs {label.split(' (')[0]}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _spark(rows: list[dict], path: Path) -> Path:
    """Throughput in this process and on Spark local[k]; speed-up over local[1]."""
    import matplotlib.pyplot as plt

    rows = sorted(rows, key=lambda r: (r["value"] != "in-process", str(r["value"])))
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    one = next((float(r["events_per_s"]) for r in rows if r["value"] == "local[1]"), None)
    for i, r in enumerate(rows):
        ev = float(r["events"])
        med, lo, hi = (float(r[k]) for k in ("run_s_median", "run_s_min", "run_s_max"))
        y = ev / med
        ax.bar(i, y, 0.6, yerr=[[y - ev / hi], [ev / lo - y]], capsize=3,
               color="#1b7837" if r["value"] == "in-process" else "#5aae61")
        note = f"{y:,.0f}"
        if one and str(r["value"]).startswith("local["):
            note += f"\n{y / one:.2f}x local[1]"
        ax.text(i, y, note, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([str(r["value"]) for r in rows])
    ax.set_ylabel("events/s, steady state")
    ax.set_xlabel("rsep in this process, and on the Spark pipeline with k local cores")
    ax.set_title("Speed-up vs Spark parallelism (median of runs, bars: min-max)")
    ax.margins(y=0.2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
