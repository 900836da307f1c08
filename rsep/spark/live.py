"""A live source by URL (``--stream IRI=mqtt://...`` or ``tcp://...``): the raw-records
DataFrame of the matching spooled source."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from rsep.spark.mqtt import mqtt_records
from rsep.spark.socket import parse_url, socket_records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_URL_FORMAT = re.compile(r"\?format=(trig|nquads|jsonl)$")
_URL_RECONNECT = re.compile(r"[?&]reconnect=([0-9.]+)")


def is_live_url(text: str) -> bool:
    return text.startswith(("mqtt://", "tcp://"))


def live_records(spark: SparkSession, stream: str, url: str, *,
                 spool_dir: str | Path | None = None) -> DataFrame:
    """The raw-records DataFrame of a live source given by URL (for ``--stream IRI=URL``):
    ``mqtt://host[:port]/topic-filter`` or ``tcp://host:port``, either optionally ending
    in ``?format=trig|nquads|jsonl`` (MQTT default: detected per message; TCP: trig); an
    MQTT URL also takes ``?reconnect=SECONDS`` (the source's ``reconnectTimeout``).
    ``spool_dir`` should be a directory of the query's checkpoint, one per source."""
    r = _URL_RECONNECT.search(url) if url.startswith("mqtt://") else None
    if r is not None:  # (mqtt://...?reconnect=SECONDS, as rsep run's live source takes it)
        url = url[:r.start()] + (url[r.end():].replace("&", "?", 1) if r.group()[0] == "?"
                                 else url[r.end():])
    m = _URL_FORMAT.search(url)
    fmt = m.group(1) if m else None
    base = url[: m.start()] if m else url
    if base.startswith("mqtt://"):
        return mqtt_records(spark, base, stream=stream, spool_dir=spool_dir,
                            **({"format": fmt} if fmt else {}),
                            **({"reconnectTimeout": r.group(1)} if r else {}))
    if base.startswith("tcp://"):
        host, port = parse_url(base)
        return socket_records(spark, host, port, stream=stream, fmt=fmt or "trig",
                              spool_dir=spool_dir)
    raise ValueError(f"not a live source URL (mqtt://host:port/topic or tcp://host:port): {url!r}")
