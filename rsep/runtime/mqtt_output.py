"""``rsep run --output mqtt://HOST:PORT/TOPIC``: each result item published as one MQTT
message, QoS 1.

An item is what :class:`~rsep.runtime.sinks.FormatSink` ends with :meth:`MqttOutput.end_item`:
a jsonl object (the line without its newline), or, for the RDF Message formats, one
evaluation's message (rdfm-trig / rdfm-nquads: the message's text without the log's version label and its ``MESSAGE``
delimiter, since a broker message already delimits it; jelly: the message's
``RdfStreamFrame``, not length-delimited, as Jelly is carried over MQTT and Kafka). A Jelly
stream's frames share lookup tables, so its consumer reads the topic from the first frame.

Publishing does not wait for the broker; :meth:`flush` (on exit, on Ctrl-C through the
run's ``finally``, and before a watchdog ends the process) waits until every message
published so far is acknowledged.
"""

from __future__ import annotations

import io
import threading
import time
from typing import BinaryIO

import paho.mqtt.client as paho

from rsep.stream.live import mqtt_url
from rsep.stream.writer import FORMATS as MESSAGE_FORMATS
from rsep.stream.writer import payload

ITEM_FORMATS = ("jsonl", *MESSAGE_FORMATS)


def delimited_frames(data: bytes) -> list[bytes]:
    """The frames of length-delimited Protobuf bytes (varint length, then the frame)."""
    out = []
    i = 0
    while i < len(data):
        n = shift = 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        out.append(data[i:i + n])
        i += n
    return out


class MqttOutput(io.StringIO):
    """A text output whose items are published to ``topic`` (``buffer``: the bytes of a
    Jelly item)."""

    def __init__(self, url: str, fmt: str, *, timeout: float = 10.0) -> None:
        super().__init__()
        if fmt not in ITEM_FORMATS:
            raise ValueError(f"--output {url} publishes one item per message: give --format "
                             f"{', '.join(ITEM_FORMATS)} (not {fmt}: its rows and blocks are not items)")
        self.url = url
        self.host, self.port, self.topic = mqtt_url(url)
        if any(c in self.topic for c in "+#"):
            raise ValueError(f"cannot publish to a topic filter with wildcards: {self.topic!r}")
        self.fmt = fmt
        self.timeout = timeout
        self.published = 0
        self._bytes = io.BytesIO()
        self._pending: list[paho.MQTTMessageInfo] = []
        connected = threading.Event()
        refused: list[str] = []

        def on_connect(c, userdata, flags, reason, properties) -> None:
            if reason.is_failure:
                refused.append(str(reason))
            connected.set()

        self._client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self._client.on_connect = on_connect
        try:
            self._client.connect(self.host, self.port)
        except OSError as e:
            raise OSError(f"--output {url}: cannot connect to the broker: {e}") from None
        self._client.loop_start()
        if not connected.wait(timeout) or refused:
            self._client.loop_stop()
            raise OSError(f"--output {url}: the broker "
                          + (f"refused the connection: {refused[0]}" if refused
                             else f"did not answer in {timeout} s"))

    @property
    def buffer(self) -> BinaryIO:
        return self._bytes

    def end_item(self) -> None:
        """Publish what was written since the last item as one message."""
        if self.fmt == "jelly":
            payloads = delimited_frames(self._bytes.getvalue())
            self._bytes.seek(0)
            self._bytes.truncate()
        else:
            text = self.getvalue()
            self.seek(0)
            self.truncate()
            text = payload(text) if self.fmt != "jsonl" else text.removesuffix("\n")
            payloads = [text.encode("utf-8")]
        for p in payloads:
            info = self._client.publish(self.topic, p, qos=1)
            if info.rc != paho.MQTT_ERR_SUCCESS:
                raise OSError(f"--output {self.url}: publish failed: {paho.error_string(info.rc)}")
            self._pending.append(info)
            self.published += 1
        if len(self._pending) > 1000:  # forget the acknowledged ones
            self._pending = [i for i in self._pending if not i.is_published()]

    def flush(self) -> None:
        """Wait until the broker has acknowledged every message published so far."""
        if self.closed:
            return
        deadline = time.monotonic() + self.timeout
        for info in self._pending:
            while not info.is_published():
                if time.monotonic() > deadline:
                    raise OSError(f"--output {self.url}: the broker did not acknowledge "
                                  f"{sum(not i.is_published() for i in self._pending)} "
                                  f"message(s) in {self.timeout} s")
                info.wait_for_publish(0.1)
        self._pending = []

    def close(self) -> None:
        if self.closed:
            return
        try:
            self.flush()
        finally:
            self._client.disconnect()
            self._client.loop_stop()
            super().close()
