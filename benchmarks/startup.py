"""The start-up of a tiny ``rsep run`` (issue 19): checkouts A/B, alternated run by run.

Runs the CQELS coupon query and SPASEQ's Query 1 (002) over their few-event streams with each
checkout's ``.venv/bin/rsep`` (cwd: the checkout), round after round, and prints per checkout
and command the median (min) CPU time of the child (user + sys, getrusage) and wall time,
with the load average before and after; the outputs must be identical. ``--bytecode``:
``kept`` runs in the environment as it is (on this machine ``PYTHONDONTWRITEBYTECODE=1``:
a start reads bytecode, never writes it), ``written`` with writing allowed, every module's
bytecode under a directory of its own per checkout (``PYTHONPYCACHEPREFIX``, written by one
warm-up run: nothing is written into a checkout). ``--stages`` prints instead where this
checkout's CPU goes, stage by stage, as rsep.cli.start runs them.

    python benchmarks/startup.py --checkout /work/main --checkout . --runs 21
    python benchmarks/startup.py --bytecode written --checkout /work/main --checkout .
    python benchmarks/startup.py --stages --runs 25
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

S = "tests/data/spaseq"
RUNS = {
    "CQELS coupon (001 Ex. 5 Q2)": [
        "run", "examples/coupon/q2-cqels.rq",
        "--stream", "http://coupons=examples/coupon/coupons.trig",
        "--stream", "http://locations=examples/coupon/locations.trig",
        "--graph", "http://products=examples/coupon/products.ttl", "--time-unit", "1m"],
    "SPASEQ Query 1 (002)": [
        "run", f"{S}/query1.rq",
        "--stream", f"http://smartgrid.org/mainSource={S}/power.trig",
        "--stream", f"http://smartgrid.org/weather={S}/weather.trig",
        "--stream", f"http://smartgrid.org/storageSource={S}/storage.trig",
        "--graph", f"http://smartgrid.org/db={S}/homes.ttl", "--time-unit", "1m"],
}

# one tiny run in this process, timed stage by stage as rsep.cli.start runs them
_STAGES = """
import time
c0 = time.process_time()
import gc, io, sys
gc.disable()
from rsep.cli.start import MethodCode
methods = MethodCode.install()
from rsep.cli.main import main
import rsep.cli.run
gc.freeze(); gc.enable()
c1 = time.process_time()
from rsep.lang.parser import parse_with, parser
text = open(sys.argv[2], encoding="utf-8").read()
if "DEFINE GPM" in text:
    from rsep.lang.spaseq import parser
p = parser()
c2 = time.process_time()
parse_with(p, text)
c3 = time.process_time()
out, sys.stdout = sys.stdout, io.StringIO()
main(sys.argv[1:], started=gc.freeze)
sys.stdout = out
c4 = time.process_time()
print(c0, c1 - c0, c2 - c1, c3 - c2, c4 - c3, c4)
"""
STAGES = ("interpreter and site", "imports (rsep.cli.main, rsep.cli.run)", "loading the parser",
          "the first parse", "the run (parsed again, streams read, evaluated, written)", "all")


def _env(checkout: Path, bytecode: str) -> dict[str, str]:
    env = dict(os.environ)
    if bytecode == "written":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        key = hashlib.sha256(str(checkout.resolve()).encode()).hexdigest()[:12]
        env["PYTHONPYCACHEPREFIX"] = f"/tmp/rsep-startup-pyc-{key}"
    return env


def _once(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        sys.exit(f"{cwd}: {' '.join(argv)}: exit {p.returncode}\n{p.stderr}")
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    return cpu, wall, p.stdout


def _ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.0f} ({min(xs) * 1000:.0f})"


def ab(checkouts: list[Path], runs: int, bytecode: str) -> None:
    cases = [(name, c) for name in RUNS for c in checkouts]
    envs = {c: _env(c, bytecode) for c in checkouts}
    cpu: dict[tuple[str, Path], list[float]] = {k: [] for k in cases}
    wall: dict[tuple[str, Path], list[float]] = {k: [] for k in cases}
    outs: dict[str, set[str]] = {name: set() for name in RUNS}
    for name, c in cases:  # warm-up: parser caches, bytecode where it may be written
        _once([str(c / ".venv/bin/rsep"), *RUNS[name]], c, envs[c])
    load0 = os.getloadavg()
    for _ in range(runs):
        for name, c in cases:
            t, w, out = _once([str(c / ".venv/bin/rsep"), *RUNS[name]], c, envs[c])
            cpu[name, c].append(t)
            wall[name, c].append(w)
            outs[name].add(out)
    load1 = os.getloadavg()
    print(f"{runs} rounds, bytecode {bytecode}, load average {load0[0]:.2f} -> {load1[0]:.2f} "
          f"({os.cpu_count()} cores)\n")
    print("| run | checkout | CPU ms, median (min) | wall ms, median (min) |\n|---|---|---|---|")
    for name, c in cases:
        head = subprocess.run(["git", "-C", str(c), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        print(f"| {name} | {c} ({head}) | {_ms(cpu[name, c])} | {_ms(wall[name, c])} |")
    same = all(len(o) == 1 for o in outs.values())
    print("\noutputs identical" if same else "\nOUTPUTS DIFFER")


def stages(checkout: Path, runs: int) -> None:
    python = str(checkout / ".venv/bin/python")
    rows: dict[str, list[list[float]]] = {name: [] for name in RUNS}
    for _ in range(runs):
        for name, argv in RUNS.items():
            out = subprocess.run([python, "-c", _STAGES, *argv], cwd=checkout, check=True,
                                 capture_output=True, text=True).stdout
            rows[name].append([float(x) for x in out.split()])
    print(f"{runs} runs each, load average {os.getloadavg()[0]:.2f}; CPU ms, median (min)\n")
    print("| stage | " + " | ".join(RUNS) + " |\n|---|" + "---|" * len(RUNS))
    for i, stage in enumerate(STAGES):
        print(f"| {stage} | " + " | ".join(_ms([r[i] for r in rows[name]]) for name in RUNS)
              + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", action="append", type=Path,
                    help="a checkout with its .venv (repeat to compare; default: this one)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--bytecode", choices=("kept", "written"), default="kept")
    ap.add_argument("--stages", action="store_true")
    args = ap.parse_args()
    checkouts = [c.resolve() for c in args.checkout or [Path(__file__).parents[1]]]
    if args.stages:
        stages(checkouts[0], args.runs)
    else:
        ab(checkouts, args.runs, args.bytecode)


if __name__ == "__main__":
    main()
