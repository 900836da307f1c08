"""Markdown tables of a ``rsep bench`` folder (its measurements.csv), with the issue's targets.

    python -m rsep.bench.report benchmarks/results/peers > /tmp/peers.md
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path


def _f(v: str, digits: int = 0) -> str:
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
            "triples/s | p50 / p99 ms | peak MB | outputs | agreement with rsep |")
    out = [head, "|" + "---|" * 12]
    for r in rows:
        name = r["comparison"] + (f" {r['param']}={r['value']}" if r["param"] else "")
        if r["status"] != "ok":
            out.append(f"| {name} | {r['peer']} | {r['events'] or '-'} | - | - | - | - | - | - | "
                       f"- | - | {r['status']} |")
            continue
        lat = (f"{_f(r['latency_p50_ms'], 2)} / {_f(r['latency_p99_ms'], 2)}"
               if r["latency_p50_ms"] else "n/a")
        out.append(
            f"| {name} | {r['peer']}{' (' + r['engine'] + ')' if r['engine'] else ''} | "
            f"{_f(r['events'])} | {r['runs']} | {_f(r['startup_s'], 1)} | "
            f"{_f(r['run_s_median'], 2)} ({_f(r['run_s_min'], 2)}-{_f(r['run_s_max'], 2)}) | "
            f"{_f(r['events_per_s'])} | {_f(r['triples_per_s'])} | {lat} | "
            f"{_f(r['peak_rss_mb'])} | {r['outputs'] or '-'} | "
            f"{r['agreement'] or ('(itself)' if r['peer'] == 'rsep' else '-')} |")
    return "\n".join(out)


def _eps(rows: list[dict], comparison: str, peer: str) -> float | None:
    for r in rows:
        if r["comparison"] == comparison and r["peer"] == peer and not r["param"] \
                and r["status"] == "ok" and r["events_per_s"]:
            return float(r["events_per_s"])
    return None


def targets(rows: list[dict]) -> str:
    """The issue's targets, measured against, each line saying whether it is met."""
    lines = ["| target | measured | met? |", "|---|---|---|"]

    def ratio(name: str, a: float | None, b: float | None, want: float) -> None:
        if a is None or b is None:
            lines.append(f"| {name} | not measured | - |")
            return
        lines.append(f"| {name} | {a:,.0f} vs {b:,.0f} events/s = {a / b:.2f}x | "
                     f"{'yes' if a >= want * b else 'no'} |")

    vs = _eps(rows, "stock-vshape", "rsep")
    ratio("SPASEQ V-shape (rsep) >= CORE events/s (CORE on the per-event-filter sequence it can "
          "express)", vs, _eps(rows, "stock-core", "core"), 1)
    ratio("same query both sides: SEQ with per-event filters, rsep >= CORE",
          _eps(rows, "stock-core", "rsep"), _eps(rows, "stock-core", "core"), 1)
    ratio("SPASEQ V-shape (rsep) >= 3x Flink MATCH_RECOGNIZE", vs,
          _eps(rows, "stock-vshape", "flink"), 3)
    ratio("windowed RSP-QL SELECT, 10^4-triple windows: rsep >= 10x RSP-JS",
          _eps(rows, "sensors-window", "rsep"), _eps(rows, "sensors-window", "rspjs"), 10)
    p99 = next((r["latency_p99_ms"] for r in rows if r["comparison"] == "sensors-window"
                and r["peer"] == "rsep" and r["status"] == "ok" and r["latency_p99_ms"]), None)
    if p99:
        lines.append(f"| windowed RSP-QL: rsep p99 latency per evaluation < 10 ms | "
                     f"{float(p99):.1f} ms | {'yes' if float(p99) < 10 else 'no'} |")
    else:
        lines.append("| windowed RSP-QL: rsep p99 latency per evaluation < 10 ms | not measured | - |")
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
    print("### Targets (issue #8)\n\n" + targets(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
