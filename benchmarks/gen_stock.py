"""Deterministic generator of an SMD-like TriG stream of stock transactions (002 Sec. 8.1).

Each event is one named graph, one transaction of a company, five triples shaped
as 002 Figure 2's events (one subject, its attributes), which Queries 3 and 4
(Appendix A) match with ``?company pred:price ?p . ?company pred:volume ?vol``:

    stock:c<k>  pred:price   <integer, a random walk per company>
    stock:c<k>  pred:volume  <integer>
    stock:c<k>  pred:sector  stock:s<k mod sectors>
    stock:c<k>  pred:tx      stock:tx<t>
    stock:c<k>  pred:type    pred:buy | pred:sell

and its time is ``<g> prov:generatedAtTime t`` in the default graph, t = 0, 1, 2, ...
(one event per time unit, so a window of w units holds w events). The same seed
gives the same file, byte for byte.

    python benchmarks/gen_stock.py --events 100000 --out /tmp/stock.trig --seed 7
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterator
from pathlib import Path

PRED = "http://example/"  # Appendix A's PREFIX pred: <http://example/>
STOCK = "http://stockmarket.org/id/"
EVENT_BASE = "http://stockmarket.org/event/"
STREAM_IRI = "http://stockmarket.org/stocks/google"  # Queries 3 and 4's stream
TRIPLES_PER_EVENT = 5

PREFIXES = f"""\
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix pred: <{PRED}> .
@prefix stock: <{STOCK}> .
@prefix ev: <{EVENT_BASE}> .
"""


def transactions(events: int, *, seed: int = 7, companies: int = 110,
                 sectors: int = 11) -> Iterator[tuple[int, int, int, int, bool]]:
    """(time, company, price, volume, buy) per event: 110 companies in 11 sectors as 002's
    replicated SMD; prices are random walks (cents), volumes uniform."""
    rng = random.Random(seed)
    price = [rng.randint(2_000, 50_000) for _ in range(companies)]
    for t in range(events):
        c = rng.randrange(companies)
        price[c] = max(100, price[c] + rng.randint(-60, 60))
        yield t, c, price[c], rng.randint(1, 5_000), rng.random() < 0.5


def generate(out: str | Path, events: int, *, seed: int = 7, companies: int = 110,
             sectors: int = 11) -> dict[str, int]:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(PREFIXES)
        buf: list[str] = []
        for t, c, p, v, buy in transactions(events, seed=seed, companies=companies,
                                            sectors=sectors):
            buf.append(
                f"ev:{t} prov:generatedAtTime {t} .\n"
                f"ev:{t} {{ stock:c{c} pred:price {p} ; pred:volume {v} ; "
                f"pred:sector stock:s{c % sectors} ; pred:tx stock:tx{t} ; "
                f"pred:type pred:{'buy' if buy else 'sell'} . }}\n")
            if len(buf) >= 10_000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))
    tmp.replace(path)
    return {"events": events, "triples": events * TRIPLES_PER_EVENT, "bytes": path.stat().st_size}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--out", required=True, help="TriG file to write")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--companies", type=int, default=110)
    ap.add_argument("--sectors", type=int, default=11)
    args = ap.parse_args(argv)
    if args.events < 0 or args.companies < 1 or args.sectors < 1:
        ap.error("--events must be >= 0, --companies and --sectors >= 1")
    info = generate(args.out, args.events, seed=args.seed, companies=args.companies,
                    sectors=args.sectors)
    print(f"wrote {args.out}: {info['events']} events, {info['triples']} triples, "
          f"{info['bytes'] / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
