"""The Spark plan of a query: its partition key, with the reason, and how events are routed.

The stateful stage is keyed by ``query#bucket``; an event goes to the buckets of its
partition-key values (a hash of the values modulo the number of buckets), whole, and each
bucket runs the in-process engine over those events, its GPMs' solutions restricted to
the bucket's own key values (``QueryPlan.owner``): an event carrying values of several
buckets is read by each, and each answers for its own values only.
A key's label may carry a salt (``query#bucket~salt``) chosen so that the keys are
spread evenly over Spark's shuffle partitions (``key_labels``).
A query is split only when the union of the buckets' outputs is provably the
unpartitioned run's output; otherwise it runs on one key, and ``rsep explain`` says
why (docs/semantics.md, "Spark").
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import pyoxigraph as ox

from rsep.algebra.query import Query
from rsep.algebra.spaseq import AtomKind, SpaseqQuery, Strategy
from rsep.lang import apply_option, dialect_of, parse_query
from rsep.lang.dialect import EPSPARQL, RSP, SPASEQ
from rsep.spaseq.gpm import GPMEvaluator
from rsep.spaseq.partition import partition_key
from rsep.spaseq.streamset import SEvent
from rsep.stream.event import Event

SINGLE = ()


@dataclass(frozen=True)
class Partitioning:
    key: tuple[str, ...]  # variables; () = one key for the whole query
    reason: str

    def describe(self) -> str:
        if self.key:
            return "partition key: " + " ".join("?" + v for v in self.key) + f" ({self.reason})"
        return f"partition key: none, one key ({self.reason})"


def _unsplit_windows(q: Query) -> Partitioning:
    return Partitioning(SINGLE, "an evaluation joins and aggregates the triples of every "
                        "event in its windows, and an event may carry several values of "
                        "any variable, so no split of the events is provably exact")


def _spaseq_key(q: Query) -> Partitioning:
    assert isinstance(q, SpaseqQuery)  # (the family's algebra)
    var, why = partition_key(q)
    if var is None:
        return Partitioning(SINGLE, why)
    coupled = _coupled(q, var)
    if coupled is not None:
        return Partitioning(SINGLE, f"an event may carry several values of ?{var} (an SRBench "
                            "event holds many sensors' readings), and a match's mappings hold "
                            f"all the values of its events: {coupled}, so the bucket of one "
                            "value would answer otherwise")
    return Partitioning((var,), why + "; each bucket answers for its own values only")


def _coupled(q: SpaseqQuery, var: str) -> str | None:
    """Why the values of ``var`` one match holds are judged together (then a bucket that
    sees only its own values answers otherwise), or None. Skip-till-any (Def. 10) takes
    every later event whose mappings join the match's, so restricting both to one value
    changes nothing; conjunction and disjunction pair and unite mappings alike."""
    if Strategy.NEXT in q.seq.ops:
        return ("skip-till-next (';') takes the next event that joins any of them (Def. 11): "
                "an event of one value decides the next event of another")
    for a in q.seq.atoms:
        if a.kind is AtomKind.NEGATION:
            return f"{a.render()} kills the match if an event joins any of them (Appendix B)"
        if a.kind is AtomKind.OPTIONAL:
            return f"{a.render()} is taken if an event joins any of them (Appendix B)"
        if a.kind is AtomKind.KLEENE:
            return f"the iterations of {a.render()} are taken for all of them at once (Def. 13)"
    if var not in q.variables:
        return (f"?{var} is not selected, and a match's rows of several values that agree on "
                "the selected variables are one output (pi_V, Def. 16)")
    return None


def _unsplit_operators(q: Query) -> Partitioning:
    return Partitioning(SINGLE, f"{dialect_of(q).title}: its operators combine events without "
                        "a shared key, so it runs unsplit")


# Each family's partitioning (rsep.lang.dialect)
PARTITIONING: dict[str, Callable[[Query], Partitioning]] = {
    RSP: _unsplit_windows, SPASEQ: _spaseq_key, EPSPARQL: _unsplit_operators}


def partitioning(q: Query) -> Partitioning:
    """The partition key of a parsed query (any dialect), with the reason."""
    return PARTITIONING[dialect_of(q).family](q)


def bucket_of(values: tuple[str, ...], buckets: int) -> int:
    """Stable across processes and runs (Python's hash() is salted per process)."""
    return zlib.crc32("\x1f".join(values).encode()) % buckets


_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k1: int) -> int:
    return (_rotl((k1 * 0xCC9E2D51) & _M32, 15) * 0x1B873593) & _M32


def _mix_h1(h1: int, k1: int) -> int:
    return (_rotl(h1 ^ k1, 13) * 5 + 0xE6546B64) & _M32


def spark_hash(text: str, seed: int = 42) -> int:
    """Spark SQL's ``hash(text)`` (Murmur3Hash of a UTF-8 string, seed 42), the hash its
    HashPartitioning takes modulo the shuffle partitions. Spark's string variant
    (``hashUnsafeBytes``) mixes the trailing bytes one by one, as signed bytes, unlike
    the reference Murmur3; tests compare it with Spark's own function."""
    data = text.encode("utf-8")
    n = len(data)
    aligned = n - n % 4
    h1 = seed
    for i in range(0, aligned, 4):
        h1 = _mix_h1(h1, _mix_k1(int.from_bytes(data[i:i + 4], "little")))
    for i in range(aligned, n):
        b = data[i] - 256 if data[i] > 127 else data[i]
        h1 = _mix_h1(h1, _mix_k1(b & _M32))
    h1 ^= n
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _M32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def shuffle_partition(label: str, partitions: int) -> int:
    """The shuffle partition (and so the task) of a state key: pmod(hash(key), n)."""
    return spark_hash(label) % partitions  # Python's % of a negative number is pmod


def key_labels(keys: list[tuple[str, int]], partitions: int) -> list[str]:
    """A state-key label per (query, bucket), the keys spread round-robin over the shuffle
    partitions. The plain label ``query#bucket`` lands where its hash puts it, and two
    buckets often collide (``spaseq#0`` and ``spaseq#1`` share partition 1 of 2), leaving
    one task doing all the work; so a label gets the smallest salt ``~s`` that puts it in
    its partition. Deterministic: a restart from a checkpoint finds the same keys."""
    out = []
    for i, (name, bucket) in enumerate(keys):
        want = i % partitions
        label = f"{name}#{bucket}"
        salt = 0
        while shuffle_partition(label, partitions) != want:
            salt += 1
            label = f"{name}#{bucket}~{salt}"
        out.append(label)
    return out


@dataclass
class QueryPlan:
    """One registered query, as shipped to the executors (text, not parsed objects)."""

    name: str
    text: str
    dialect: str | None = None
    source: str | None = None
    r2s: str | None = None
    report: str | None = None
    policy: str | None = None
    # the other language options given, as (option, value): --window-bounds, --window-origin
    options: tuple[tuple[str, str], ...] = ()
    streams: tuple[str, ...] = ()
    partitioning: Partitioning = field(default_factory=lambda: Partitioning(SINGLE, ""))
    buckets: int = 1
    keys: tuple[str, ...] = ()  # the state-key label of each bucket (key_labels)

    def key(self, bucket: int) -> str:
        return self.keys[bucket] if self.keys else f"{self.name}#{bucket}"

    def parse(self) -> Query:
        q = parse_query(self.text, self.dialect, source=self.source)
        if self.policy:
            q = apply_option(q, "--policy", self.policy, self.source)
        for o, v in self.options:
            q = apply_option(q, o, v, self.source)
        return q

    def bucket(self, key: str) -> int:
        """The bucket of one of this query's state-key labels."""
        if self.keys:
            return self.keys.index(key)
        return int(key.rpartition("#")[2])

    def owner(self, bucket: int) -> tuple[str, Callable[[object], bool]] | None:
        """What a bucket's engine answers for: (the key variable, whether a value of it is the
        bucket's); None when the query is not split. An event carrying values of several
        buckets goes to each of them (Router), so each must ignore the others' values:
        otherwise every bucket it reached would output the matches of all of them."""
        if not self.partitioning.key or self.buckets <= 1:
            return None
        (var,) = self.partitioning.key  # (SPASEQ's key is one variable)
        return var, _Owns(bucket, self.buckets)


class _Owns:
    """Whether a key value is bucket ``bucket``'s: the Router's rule (bucket_of of its text),
    remembered per value (a run asks at every solution of every event)."""

    def __init__(self, bucket: int, buckets: int) -> None:
        self.bucket = bucket
        self.buckets = buckets
        self._seen: dict[object, bool] = {}

    def __call__(self, value: object) -> bool:
        got = self._seen.get(value)
        if got is None:
            if len(self._seen) > 100_000:  # the distinct values of a long stream: bounded
                self._seen.clear()
            got = self._seen[value] = bucket_of((str(value),), self.buckets) == self.bucket
        return got


class Router:
    """Which buckets of a query an event goes to (runs on the executors)."""

    def __init__(self, qp: QueryPlan, graphs: dict[str, list[ox.Triple]]) -> None:
        self.qp = qp
        self.streams = set(qp.streams)
        self._eval = None
        if qp.partitioning.key and qp.buckets > 1:
            q = qp.parse()
            assert isinstance(q, SpaseqQuery)  # (partitioning gives only SPASEQ a key)
            self._gpms = [(g, g.stream) for g in q.gpms.values()]
            self._eval = GPMEvaluator(q.gpms.values(), graphs)

    def buckets(self, e: Event) -> list[int]:
        if self.streams and e.stream not in self.streams:
            return []  # (a runtime reading no declared stream, EP-SPARQL's, takes every event)
        if self._eval is None:
            return [0]
        key = self.qp.partitioning.key
        n = self.qp.buckets
        out: set[int] = set()
        ev = self._eval
        ev.begin([SEvent(e.stream, e.time, e.triples)])
        try:
            for g, stream in self._gpms:
                if stream != e.stream:
                    continue
                for m in ev.local(g, stream):
                    d = dict(m)
                    vals = tuple(str(d[v]) if v in d else "" for v in key)
                    if "" in vals:
                        return list(range(n))  # a match that binds no key value: every run may take it
                    out.add(bucket_of(vals, n))
        finally:
            ev.end()
        return sorted(out)
