"""Markdown tables of a ``rsep bench`` folder (its measurements.csv), with the issue's targets.

    python -m rsep.bench.report benchmarks/results/peers > /tmp/peers.md
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from rsep.runtime.stages import REPORTED


def _f(v: str | None, digits: int = 0) -> str:
    if v is None:
        return "-"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return "-"
    return f"{x:,.{digits}f}"


def _rows(folder: Path) -> list[dict]:
    with open(folder / "measurements.csv", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def table(rows: list[dict]) -> str:
    head = ("| benchmark | engine | events | runs | start-up s | steady s (min-max) | events/s | "
            "triples/s | CPU s | events/CPU-s | p50 / p99 ms | peak MB | outputs | "
            "agreement with rsep |")
    out = [head, "|" + "---|" * 14]
    for r in rows:
        name = r["comparison"] + (f" {r['param']}={r['value']}" if r["param"] else "")
        if r["status"] != "ok":
            out.append(f"| {name} | {r['peer']} | {r['events'] or '-'} | - | - | - | - | - | - | "
                       f"- | - | - | - | {r['status']} |")
            continue
        lat = (f"{_f(r['latency_p50_ms'], 2)} / {_f(r['latency_p99_ms'], 2)}"
               if r["latency_p50_ms"] else "n/a")
        out.append(
            f"| {name} | {r['peer']}{' (' + r['engine'] + ')' if r['engine'] else ''} | "
            f"{_f(r['events'])} | {r['runs']} | {_f(r['startup_s'], 1)} | "
            f"{_f(r['run_s_median'], 2)} ({_f(r['run_s_min'], 2)}-{_f(r['run_s_max'], 2)}) | "
            f"{_f(r['events_per_s'])} | {_f(r['triples_per_s'])} | "
            f"{_f(r.get('cpu_s_median'), 1)} | {_f(r.get('events_per_cpu_s'))} | {lat} | "
            f"{_f(r['peak_rss_mb'])} | {r['outputs'] or '-'} | "
            f"{r['agreement'] or ('(itself)' if r['peer'] == 'rsep' else '-')} |")
    return "\n".join(out)


def _eps(rows: list[dict], comparison: str, peer: str, key: str = "events_per_s"
         ) -> float | None:
    for r in rows:
        if r["comparison"] == comparison and r["peer"] == peer and not r["param"] \
                and r["status"] == "ok" and r.get(key):
            return float(r[key])
    return None


def targets(rows: list[dict]) -> str:
    """The issue's targets, measured against, each line saying whether it is met."""
    lines = ["| target | wall clock: events/s | CPU: events/CPU-s | met? (wall / CPU) |",
             "|---|---|---|---|"]

    def ratio(name: str, a: tuple[str, str], b: tuple[str, str], want: float) -> None:
        cells, met = [], []
        for key in ("events_per_s", "events_per_cpu_s"):
            x, y = _eps(rows, *a, key), _eps(rows, *b, key)
            if x is None or y is None:
                cells.append("not measured")
                met.append("-")
            else:
                cells.append(f"{x:,.0f} vs {y:,.0f} = {x / y:.2f}x")
                met.append("yes" if x >= want * y else "no")
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {' / '.join(met)} |")

    ratio("SPASEQ V-shape (rsep) >= CORE (CORE on the per-event-filter sequence it can "
          "express)", ("stock-vshape", "rsep"), ("stock-core", "core"), 1)
    ratio("same query both sides: SEQ with per-event filters, rsep >= CORE",
          ("stock-core", "rsep"), ("stock-core", "core"), 1)
    ratio("SPASEQ V-shape (rsep) >= 3x Flink MATCH_RECOGNIZE", ("stock-vshape", "rsep"),
          ("stock-vshape", "flink"), 3)
    ratio("windowed RSP-QL SELECT, 10^4-triple windows: rsep >= 10x RSP-JS",
          ("sensors-window", "rsep"), ("sensors-window", "rspjs"), 10)
    p99 = next((r["latency_p99_ms"] for r in rows if r["comparison"] == "sensors-window"
                and r["peer"] == "rsep" and r["status"] == "ok" and r["latency_p99_ms"]), None)
    if p99:
        lines.append(f"| windowed RSP-QL: rsep p99 latency per evaluation < 10 ms | "
                     f"{float(p99):.1f} ms | - | {'yes' if float(p99) < 10 else 'no'} |")
    else:
        lines.append("| windowed RSP-QL: rsep p99 latency per evaluation < 10 ms | not measured "
                     "| - | - |")
    spark = {r["value"]: float(r["events_per_s"]) for r in rows
             if r["param"] == "spark_cores" and r["status"] == "ok" and r.get("events_per_s")}
    one, two, here = spark.get("local[1]"), spark.get("local[2]"), spark.get("in-process")
    if one and two:
        lines.append(f"| Spark pipeline, partitioned query: local[1] -> local[2] >= 1.7x | "
                     f"{one:,.0f} -> {two:,.0f} = {two / one:.2f}x | - | "
                     f"{'yes' if two >= 1.7 * one else 'no'} |")
    else:
        lines.append("| Spark pipeline, partitioned query: local[1] -> local[2] >= 1.7x | "
                     "not measured | - | - |")
    if two and here and one:
        per2, per1 = here / (two / 2), here / one
        lines.append(f"| Spark pipeline per core within 2x of the single process | "
                     f"local[2]: {here:,.0f} vs {two / 2:,.0f} per core = {per2:.2f}x; "
                     f"local[1]: {here:,.0f} vs {one:,.0f} = {per1:.2f}x | - | "
                     f"{'yes' if per2 <= 2 else 'no'} / {'yes' if per1 <= 2 else 'no'} |")
    else:
        lines.append("| Spark pipeline per core within 2x of the single process | not measured "
                     "| - | - |")
    win = {r["value"]: float(r["events_per_s"]) for r in rows
           if r["param"] == "spark_window" and r["status"] == "ok" and r.get("events_per_s")}
    two, here = win.get("local[2]"), win.get("in-process")
    if two and here:
        per2 = here / (two / 2)
        lines.append(f"| Spark pipeline, windowed query: local[2] per core within 1.5x of the "
                     f"single process | {here:,.0f} vs {two / 2:,.0f} per core = {per2:.2f}x | - "
                     f"| {'yes' if per2 <= 1.5 else 'no'} |")
    else:
        lines.append("| Spark pipeline, windowed query: local[2] per core within 1.5x of the "
                     "single process | not measured | - | - |")
    return "\n".join(lines)


def stage_seconds(row: dict) -> dict[str, float] | None:
    """An rsep row's seconds per stage (rsep.runtime.stages), or None if it has none."""
    st = {k: float(v) for k, v in (kv.split("=") for kv in row.get("stages", "").split(";")
                                   if "=" in kv)}
    return st if row["peer"] == "rsep" and row["status"] == "ok" and "parse" in st else None


def stages(rows: list[dict]) -> str:
    """rsep's time per event and stage (a separate stage-timed run, scaled to the median)."""
    names = REPORTED

    lines = ["| benchmark | " + " | ".join(f"{n} us/event" for n in names) + " | total |",
             "|" + "---|" * (len(names) + 2)]
    for r in rows:
        st = stage_seconds(r)
        if st is None:
            continue
        ev = float(r["events"])
        name = r["comparison"] + (f" {r['param']}={r['value']}" if r["param"] else "")
        cells = [f"{st.get(n, 0.0) / ev * 1e6:.1f}" for n in names]
        lines.append(f"| {name} | " + " | ".join(cells) +
                     f" | {sum(st.values()) / ev * 1e6:.1f} |")
    return "\n".join(lines)


def paired(rows: list[dict]) -> str:
    """rsep against each peer: the ratio of the two medians, and the median of the rounds'
    ratios (each round's rsep and peer runs back to back: a drift of the machine cancels)."""
    lines = ["| benchmark | peer | runs | rsep x, of the medians (wall / CPU) | "
             "rsep x, round by round (wall / CPU) |", "|---|---|---|---|---|"]
    for r in rows:
        if r["peer"] == "rsep" or r["status"] != "ok" or not r.get("paired_x_wall"):
            continue
        mine = next((x for x in rows if x["peer"] == "rsep" and x["comparison"] == r["comparison"]
                     and x["param"] == r["param"] and x["value"] == r["value"]
                     and x["status"] == "ok"), None)
        of = ["-", "-"]
        if mine is not None:
            for i, key in enumerate(("events_per_s", "events_per_cpu_s")):
                if mine.get(key) and r.get(key):
                    of[i] = f"{float(mine[key]) / float(r[key]):.2f}x"
        by = [f"{float(r[k]):.2f}x" if r.get(k) else "-" for k in ("paired_x_wall", "paired_x_cpu")]
        name = r["comparison"] + (f" {r['param']}={r['value']}" if r["param"] else "")
        lines.append(f"| {name} | {r['peer']} | {r['runs']} | {' / '.join(of)} | {' / '.join(by)} |")
    return "\n".join(lines)


def whats(rows: list[dict]) -> str:
    seen: dict[str, str] = {}
    for r in rows:
        seen.setdefault(r["comparison"], r["what"])
    return "\n".join(f"- **{k}**: {v}" for k, v in seen.items())


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    folder = Path(args[0] if args else "benchmarks/results/peers")
    rows = _rows(folder)
    print("### What each benchmark compares\n\n" + whats(rows) + "\n")
    print("### Measurements\n\n" + table(rows) + "\n")
    print("### rsep against each peer\n\n" + paired(rows) + "\n")
    print("### Where rsep's time goes (us per event)\n\n" + stages(rows) + "\n")
    print("### Targets (issue #8)\n\n" + targets(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
