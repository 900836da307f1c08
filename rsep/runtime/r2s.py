"""Relation-to-stream operators with CQL's bag semantics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

from rsep.algebra.policy import R2S

# What one row of an evaluation outputs: a SELECT's variables and bindings (variable ->
# N-Triples term), an ASK's answer, or a CONSTRUCT / DESCRIBE triple (N-Triples).
Selected = tuple[tuple[str, ...], dict[str, str]]
Payload = Selected | bool | str
Row = tuple[Hashable, Payload]  # (key for bag comparison, payload to output)


class R2SOperator:
    """Turns the relation computed at each evaluation into stream elements.

    RStream emits R(t); IStream emits R(t) - R(t') and DStream R(t') - R(t) (bag
    differences), where t' is the previous evaluation time.
    """

    def __init__(self, op: R2S) -> None:
        self.op = op
        self._previous: Counter[Hashable] = Counter()
        self._previous_rows: dict[Hashable, Payload] = {}

    def apply(self, rows: Sequence[Row]) -> list[tuple[str, Payload]]:
        if self.op is R2S.RSTREAM:
            return [("insert", payload) for _, payload in rows]
        current: Counter[Hashable] = Counter(k for k, _ in rows)
        out: list[tuple[str, Payload]] = []
        if self.op is R2S.ISTREAM:
            budget = current - self._previous
            for k, payload in rows:
                if budget[k] > 0:
                    budget[k] -= 1
                    out.append(("insert", payload))
        else:
            gone = self._previous - current
            for k, n in gone.items():
                out.extend(("delete", self._previous_rows[k]) for _ in range(n))
        self._previous = current
        self._previous_rows = {k: payload for k, payload in rows}
        return out
