"""The TriG of two benchmark streams to standard output, event for event as rsep.bench's
generators write their files, so that a long run reads it through a pipe (``rsep run
--stream IRI=-``) and no file of it is written:

    python benchmarks/stream_stdout.py stock N | rsep run core.rq \\
        --stream http://stockmarket.org/stocks/google=- -o out.jsonl
    python benchmarks/stream_stdout.py epsparql N | rsep run --dialect epsparql ... \\
        --stream http://example.org/epstream=- -o out.jsonl

``stock``: rsep.bench.workloads.stock (seed 42, 10 companies, 3 sectors: `rsep bench
stock-core`'s stream); ``epsparql``: rsep.bench.epsparql_etalis.generate (seed 25, 5 keys).
The same random draws in the same order as those generators, so the text is theirs byte for
byte (``cmp`` against their stocks.trig / stream.trig: docs/benchmarks.md, "The CEP engines
along 10^7 events").
"""

from __future__ import annotations

import random
import sys

from rsep.bench import epsparql_etalis as ee
from rsep.bench.workloads import EXORG, PRED, PROV, _lit


def stock(size: int, out: list[str]) -> None:
    rng = random.Random(42)
    companies, sectors = 10, 3
    steps = (-3, -2, -1, 1, 2, 3)
    base = f"{EXORG}bench/stock/stocks/"
    price = [100 + rng.randrange(50) for _ in range(companies)]
    for t in range(size):
        c = rng.randrange(companies)
        price[c] = max(1, price[c] + rng.choice(steps))
        vol = rng.randrange(1, 1000)
        kind = "buy" if rng.random() < 0.5 else "sell"
        comp = f"<{PRED}c{c}>"
        body = (f"{comp} <{PRED}price> {price[c]} . {comp} <{PRED}volume> {vol} . "
                f"{comp} <{PRED}sector> <{PRED}s{c % sectors}> . {comp} <{PRED}txid> {t} . "
                f"{comp} <{PRED}type> {_lit(kind)} .")
        out.append(f"<{base}{t}> <{PROV}> {t} .\n<{base}{t}> {{ {body} }}\n")
        if len(out) >= 5000:
            flush(out)


def epsparql(size: int, out: list[str]) -> None:
    rng = random.Random(25)
    keys = 5
    walk = [100] * keys
    base = f"{ee.EX}bench/epstream/"
    for t in range(size):
        k = rng.randrange(keys)
        kind = "abc"[rng.randrange(3)]
        walk[k] += rng.randint(-5, 5)
        out.append(f"<{base}{t}> <{PROV}> {t} .\n"
                   f"<{base}{t}> {{ <{ee.EX}c{k}> <{ee.EX}{kind}> {_lit(walk[k])} . }}\n")
        if len(out) >= 5000:
            flush(out)


def flush(out: list[str]) -> None:
    sys.stdout.write("".join(out))
    out.clear()


if __name__ == "__main__":
    which, n = sys.argv[1], int(sys.argv[2])
    buf: list[str] = []
    {"stock": stock, "epsparql": epsparql}[which](n, buf)
    flush(buf)
