"""PNG plots of a ``rsep bench`` run, one idea per picture."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from rsep.bench.report import stage_seconds
from rsep.runtime.stages import REPORTED

COLORS = {"rsep": "#1b7837", "reference": "#7fbf7b", "core": "#762a83", "flink": "#e08214",
          "rspjs": "#2166ac", "naive": "#878787", "esper": "#b2182b",
          "rsprs": "#35978f"}


def _num(v: str | float | None) -> float | None:
    if v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _median_bar(ax, x: float, r: dict, width: float, **kw) -> float:
    """A bar at the median run's events/s, its error bar spanning the fastest and slowest."""
    ev = float(r["events"])
    med, lo, hi = (float(r[k]) for k in ("run_s_median", "run_s_min", "run_s_max"))
    y = ev / med
    ax.bar(x, y, width, yerr=[[y - ev / hi], [ev / lo - y]], **kw)
    return y


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt  # heavy: loaded only when plots are drawn

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_all(rows: list[dict], out: Path) -> list[Path]:
    import matplotlib  # heavy: loaded only when plots are drawn

    matplotlib.use("Agg")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    ok = [r for r in rows if r["status"] == "ok" and _num(r["events_per_s"])]
    head = [r for r in ok if not r["param"]]
    if head:
        written.append(_throughput(head, out / "peers-throughput.png"))
        written.append(_breakdown(head, out / "time-breakdown.png"))
    timed = [r for r in ok if stage_seconds(r) is not None]
    if timed:
        written.append(_stages(timed, out / "rsep-stages.png"))
    titles = {"window_events": ("sweep-window", "window size (events; 6 triples each)", True),
              "pattern_length": ("sweep-length", "pattern length (GPMs)", False),
              "strategy": ("sweep-strategy", "selection strategy", False),
              "kb_triples": ("sweep-kb", "background KB size (triples)", True)}
    for param, (name, label, logx) in titles.items():
        sel = [r for r in ok if r["param"] == param]
        if sel:
            written.append(_sweep(sel, label, logx, out / f"{name}.png"))
    for param, name in (("spark_cores", "sweep-spark"), ("spark_window", "sweep-spark-window")):
        sel = [r for r in ok if r["param"] == param]
        if sel:
            written.append(_spark(sel, out / f"{name}.png"))
    return written


def _throughput(rows: list[dict], path: Path) -> Path:
    import matplotlib.pyplot as plt  # heavy: loaded only when plots are drawn

    comps = list(dict.fromkeys(r["comparison"] for r in rows))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(comps) + 2), 4.2))
    by: defaultdict[str, dict[str, dict]] = defaultdict(dict)
    for r in rows:
        by[r["comparison"]][r["peer"]] = r
    width = 0.8 / max(len(v) for v in by.values())
    labelled: set[str] = set()
    for i, c in enumerate(comps):
        present = list(by[c])
        for j, p in enumerate(present):
            x = i + (j - (len(present) - 1) / 2) * width
            y = _median_bar(ax, x, by[c][p], width, capsize=2, color=COLORS.get(p),
                            label=None if p in labelled else p)
            labelled.add(p)
            ax.text(x, y, f"{y:,.0f}", ha="center", va="bottom", fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(range(len(comps)))
    ax.set_xticklabels(comps, fontsize=8)
    ax.set_ylabel("events/s, steady state (log)")
    ax.set_title("Throughput per engine (median of runs, bars: min-max)")
    ax.legend(fontsize=8)
    return _save(fig, path)


def _breakdown(rows: list[dict], path: Path) -> Path:
    """Start-up against the steady state, per engine and comparison."""
    import matplotlib.pyplot as plt  # heavy: loaded only when plots are drawn

    labels = [f"{r['comparison']}\n{r['peer']}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(rows) + 2), 4.4))
    seen: set[str] = set()
    for i, r in enumerate(rows):
        start, steady = float(r["startup_s"] or 0), float(r["run_s_median"] or 0)
        lab = "start-up (process, imports, JVM, compile, warm-up job)"
        ax.bar(i, start, color="#bababa", label=None if lab in seen else lab)
        seen.add(lab)
        ax.bar(i, steady, bottom=start, color=COLORS.get(r["peer"], "#444444"),
               label=None if r["peer"] in seen else f"{r['peer']}: the stream")
        seen.add(r["peer"])
        ax.text(i, start + steady, f"{start:.1f} + {steady:.1f} s", ha="center", va="bottom",
                fontsize=7)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("seconds (medians)")
    ax.set_title("Start-up, then the stream, per engine")
    ax.legend(fontsize=7)
    return _save(fig, path)


STAGE_COLORS = dict(zip(REPORTED, ("#2166ac", "#1b7837", "#e08214", "#762a83", "#bababa"),
                        strict=True))


def _stages(rows: list[dict], path: Path) -> Path:
    """rsep's microseconds per event, split by stage, one bar per benchmark."""
    import matplotlib.pyplot as plt  # heavy: loaded only when plots are drawn

    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1.6))
    for i, r in enumerate(rows):
        st = stage_seconds(r) or {}
        ev = float(r["events"])
        left = 0.0
        for k, color in STAGE_COLORS.items():
            v = st.get(k, 0.0) / ev * 1e6
            ax.barh(i, v, left=left, color=color, label=k if i == 0 else None)
            if v > 3:
                ax.text(left + v / 2, i, f"{v:.0f}", ha="center", va="center", fontsize=7,
                        color="white")
            left += v
        ax.text(left, i, f" {left:.0f} us", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r["comparison"] + (f" {r['value']}" if r["param"] else "")
                        for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("microseconds per event (a stage-timed run, scaled to the median run)")
    ax.set_title("Where rsep's time goes: parse, match, state, output, engine loop")
    ax.legend(fontsize=7, ncols=5, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    ax.margins(x=0.12)
    return _save(fig, path)


def _sweep(rows: list[dict], label: str, logx: bool, path: Path) -> Path:
    import matplotlib.pyplot as plt  # heavy: loaded only when plots are drawn

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
    return _save(fig, path)


def _spark(rows: list[dict], path: Path) -> Path:
    """Throughput in this process and on Spark local[k]; speed-up over local[1]."""
    import matplotlib.pyplot as plt  # heavy: loaded only when plots are drawn

    rows = sorted(rows, key=lambda r: (r["value"] != "in-process", str(r["value"])))
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    one = next((float(r["events_per_s"]) for r in rows if r["value"] == "local[1]"), None)
    for i, r in enumerate(rows):
        y = _median_bar(ax, i, r, 0.6, capsize=3,
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
    return _save(fig, path)
