"""A registered query's results published to MQTT (``output=mqtt://HOST:PORT/TOPIC``): each
result item one broker message, QoS 1, as ``rsep run --output mqtt://...`` publishes them
(rsep.runtime.mqtt_output): a jsonl object per result, or an RDF Message per evaluation
(rdfm-trig / rdfm-nquads text without its delimiter, Jelly one ``RdfStreamFrame``)."""

from __future__ import annotations

from typing import Any

from rsep.runtime.mqtt_output import ITEM_FORMATS, MqttOutput
from rsep.runtime.sinks import FormatSink


class MqttPublisher:
    """A channel subscriber (rsep.serve.worker.Channel) that publishes the items (worker.Item)
    it is handed. Connects on creation (OSError: the broker cannot be reached); when
    publishing fails later, it stops and says why in :meth:`describe` (the query and its
    other subscribers go on)."""

    def __init__(self, url: str, fmt: str) -> None:
        if not url.startswith("mqtt://"):
            raise ValueError(f"an output is an MQTT topic (mqtt://HOST:PORT/TOPIC), not {url!r}")
        if fmt not in ITEM_FORMATS:
            raise ValueError(f"unknown output format {fmt!r}: use {', '.join(ITEM_FORMATS)}")
        self.url = url
        self.fmt = fmt
        self.out = MqttOutput(url, fmt)
        self.sink = FormatSink(self.out, fmt, with_query=True)
        self.error: str | None = None

    def __call__(self, item: Any) -> None:
        if self.error is not None:
            return
        try:
            if item.kind == "end":
                self.sink.close()  # what is pending goes out, and the broker acknowledges it
                self.out.close()
            elif item.kind == "result" and item.output is not None:
                self.sink.write(item.output)
                if item.last:
                    self.sink.end_evaluation()
        except OSError as e:  # the broker went away: the query's other outputs go on
            self.error = str(e)

    def describe(self) -> dict[str, Any]:
        return {"url": self.url, "format": self.fmt, "published": self.out.published,
                "error": self.error}
