"""Report policies (SECRET) and relation-to-stream operators (CQL)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from rsep.stream.time import Duration, parse_duration


class R2S(Enum):
    RSTREAM = "RSTREAM"  # everything that holds at each evaluation
    ISTREAM = "ISTREAM"  # what holds now and did not at the previous evaluation
    DSTREAM = "DSTREAM"  # what held at the previous evaluation and does not now


@dataclass(frozen=True)
class ReportPolicy:
    """When a query is evaluated (the set ET of Def. 5), as SECRET's report conditions.

    - window_close: when a time window closes (every multiple of its step);
    - content_change: when the content of some window differs from the last evaluation;
    - on_arrival: when an item arrives on a stream of the query (push execution);
    - periodic: at every multiple of the period;
    - non_empty: only when some window is non-empty (combined with the others);
    - at: at these instants (to replay a paper's example, whose evaluation times are given).
    """

    window_close: bool = False
    content_change: bool = False
    on_arrival: bool = False
    periodic: Duration | None = None
    non_empty: bool = False
    at: tuple[int, ...] = ()

    @classmethod
    def parse(cls, text: str) -> ReportPolicy:
        """Read e.g. ``window-close,non-empty`` or ``periodic:5``."""
        kw: dict = {}
        at: list[int] = []
        for part in (p.strip().lower() for p in text.split(",") if p.strip()):
            if part.startswith("at:") or (at and part.isdigit()):
                at.append(int(part.removeprefix("at:")))
                kw["at"] = tuple(sorted(at))
            elif part in ("window-close", "wc"):
                kw["window_close"] = True
            elif part in ("content-change", "cc"):
                kw["content_change"] = True
            elif part in ("on-arrival", "push"):
                kw["on_arrival"] = True
            elif part in ("non-empty", "nc"):
                kw["non_empty"] = True
            elif part.startswith("periodic:"):
                kw["periodic"] = parse_duration(part.split(":", 1)[1])
            else:
                raise ValueError(
                    f"unknown report policy {part!r} (expected window-close, content-change, "
                    "on-arrival, non-empty, periodic:D, at:T1,T2,...)"
                )
        policy = cls(**kw)
        if not (policy.window_close or policy.content_change or policy.on_arrival or policy.periodic
                or policy.at):
            raise ValueError("a report policy needs window-close, content-change, on-arrival, "
                             "periodic:D or at:T1,T2,...")
        return policy

    def __str__(self) -> str:
        parts = [n for n, on in (("window-close", self.window_close),
                                 ("content-change", self.content_change),
                                 ("on-arrival", self.on_arrival)) if on]
        if self.periodic:
            parts.append(f"periodic:{self.periodic}")
        if self.at:
            parts.append("at:" + ",".join(map(str, self.at)))
        if self.non_empty:
            parts.append("non-empty")
        return ",".join(parts)
