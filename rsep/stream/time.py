"""Time on the timeline T: abstract integer units or xsd:dateTime as epoch milliseconds.

Streams carry either abstract integer timestamps (the papers' examples) or
xsd:dateTime values; internally both are ints. Durations in queries are plain
integers (abstract units) or unit-carrying values (PT5S, 30m, 5s) that need a
known length of one time unit: 1 ms for dateTime streams, or a declared
``time_unit_ms`` for abstract streams.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_INTEGER_TYPES = {
    XSD + n
    for n in (
        "integer", "int", "long", "short", "nonNegativeInteger", "positiveInteger",
        "unsignedLong", "unsignedInt",
    )
}
XSD_DATETIME_TYPES = {XSD + "dateTime", XSD + "dateTimeStamp"}


def precedes(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """(t1, t2) < (t3, t4) on intervals of T: ends earlier, or ends together and starts earlier
    (000's order on event mappings; EP-SPARQL's selection uses the same)."""
    return (a[1], a[0]) < (b[1], b[0])


class TimeKind(Enum):
    ABSTRACT = "abstract"
    DATETIME = "datetime"


class TimeError(ValueError):
    """A timestamp or duration that cannot be read."""


def parse_datetime_ms(text: str) -> int:
    s = text.strip()
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError as e:
        raise TimeError(f"not an xsd:dateTime: {text!r}") from e
    if dt.tzinfo is None:
        # xsd:dateTime without a zone: read as UTC so replays are reproducible.
        dt = dt.replace(tzinfo=UTC)
    return int(round(dt.timestamp() * 1000))


def format_datetime_ms(ms: int) -> str:
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    if ms % 1000:
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Timestamp:
    value: int
    kind: TimeKind


# Longer numbers are refused with a message of their own: Python's int() stops at 4300
# digits with a ValueError, and no clock needs more than 19.
MAX_DIGITS = 1000


def _digits_bound(text: str, what: str) -> None:
    if len(text) > MAX_DIGITS:
        raise TimeError(f"{what} of {len(text)} characters: at most {MAX_DIGITS} are read")


def timestamp_from_literal(lexical: str, datatype: str | None) -> Timestamp:
    """Read a stream timestamp literal (xsd:integer or xsd:dateTime)."""
    _digits_bound(lexical, "a timestamp")
    if datatype in XSD_DATETIME_TYPES:
        return Timestamp(parse_datetime_ms(lexical), TimeKind.DATETIME)
    if datatype is None or datatype in XSD_INTEGER_TYPES or datatype == XSD + "string":
        try:
            return Timestamp(int(lexical.strip()), TimeKind.ABSTRACT)
        except ValueError:
            pass
        if datatype != XSD + "integer":
            try:
                return Timestamp(parse_datetime_ms(lexical), TimeKind.DATETIME)
            except TimeError:
                pass
    raise TimeError(
        f"timestamp {lexical!r} is neither an xsd:integer nor an xsd:dateTime"
    )


def format_time(value: int, kind: TimeKind | None) -> int | str:
    if kind is TimeKind.DATETIME:
        return format_datetime_ms(value)
    return value


# ---------------------------------------------------------------- durations

_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_SHORT = re.compile(r"^(\d+)(ms|s|min|m|h|d)$", re.IGNORECASE)
_ISO = re.compile(
    r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE
)


@dataclass(frozen=True)
class Duration:
    """A window parameter: either abstract units or milliseconds of wall time."""

    amount: int
    in_ms: bool  # True when written with a unit (PT5S, 30m, ...)
    text: str

    def units(self, kind: TimeKind | None, time_unit_ms: int | None) -> int:
        """The duration in timeline units of a stream of the given kind."""
        if not self.in_ms:
            return self.amount
        if kind is TimeKind.DATETIME:
            return self.amount
        if time_unit_ms:
            if self.amount % time_unit_ms:
                raise TimeError(
                    f"duration {self.text} is not a whole number of time units "
                    f"({time_unit_ms} ms each)"
                )
            return self.amount // time_unit_ms
        raise TimeError(
            f"duration {self.text} has a unit, but the stream uses abstract integer "
            "timestamps: use dateTime timestamps, a plain integer, or declare the "
            "length of one time unit (--time-unit, e.g. 1m)"
        )

    def __str__(self) -> str:
        return self.text


def parse_duration(text: str) -> Duration:
    t = text.strip()
    if t.startswith('"'):
        # "PT5S"^^xsd:duration
        t = t[1 : t.index('"', 1)]
    _digits_bound(t, "a duration")
    if re.fullmatch(r"\d+", t):
        return Duration(int(t), False, text.strip())
    m = _SHORT.match(t)
    if m:
        return Duration(int(m.group(1)) * _UNIT_MS[m.group(2).lower()], True, text.strip())
    m = _ISO.match(t)
    if m and t.upper() not in ("P", "PT"):
        d, h, mi, s = m.groups()
        ms = (int(d or 0) * 86_400 + int(h or 0) * 3600 + int(mi or 0) * 60) * 1000
        ms += int(round(float(s or 0) * 1000))
        return Duration(ms, True, text.strip())
    raise TimeError(f"not a duration: {text!r} (expected e.g. 5, PT5S, 30m, 5s, 1h)")


def parse_time_unit(text: str) -> int:
    d = parse_duration(text)
    if not d.in_ms:
        raise TimeError(f"--time-unit needs a unit, e.g. 1m or PT1S, not {text!r}")
    return d.amount


PROV = "http://www.w3.org/ns/prov#"
TIMEVOCAB = "http://streamreasoning.org/timeVocab#"

POINT_PREDICATES = (PROV + "generatedAtTime", TIMEVOCAB + "startsAtTime")
START_PREDICATES = (PROV + "startedAtTime",)
END_PREDICATES = (PROV + "endedAtTime", TIMEVOCAB + "endsAtTime")


@dataclass
class TimeConfig:
    """Which predicates carry event times and where to look for them."""

    point: tuple[str, ...] = POINT_PREDICATES
    start: tuple[str, ...] = START_PREDICATES
    end: tuple[str, ...] = END_PREDICATES
    in_graph: bool = False  # also read time triples inside the event graph

    @classmethod
    def with_predicate(cls, iri: str, in_graph: bool = False) -> TimeConfig:
        return cls(point=(iri,), start=(), end=(), in_graph=in_graph)

    def role(self, predicate: str) -> str | None:
        if predicate in self.point:
            return "point"
        if predicate in self.start:
            return "start"
        if predicate in self.end:
            return "end"
        return None
