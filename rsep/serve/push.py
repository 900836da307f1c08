"""The pushed form of a query's results (SSE and WebSocket): the CLI's jsonl objects, one
per result, or RDF Messages (W3C RSP CG), one per evaluation, written by the FormatSink that
``rsep run --format rdfm-trig|rdfm-nquads`` writes with (so a pushed message is the one
``rsep run`` writes to its log, without the ``# @message`` delimiter line)."""

from __future__ import annotations

import io
import json

from rsep.runtime.sinks import FormatSink
from rsep.serve.hub import Item
from rsep.stream.writer import DELIMITER

# ?format= -> the media type announcing it (RDF Messages: the spec's messages=rdfm)
FORMATS = {
    "jsonl": "application/json",
    "rdfm-trig": "application/trig; messages=rdfm",
    "rdfm-nquads": "application/n-quads; messages=rdfm",
}
_ACCEPT = {"application/trig": "rdfm-trig", "application/n-quads": "rdfm-nquads"}


def result_format(fmt: str | None, accept: str | None) -> str:
    """The negotiated format: ``?format=`` first, then an ``Accept`` that names
    ``application/trig`` or ``application/n-quads`` (anything else: jsonl)."""
    if fmt:
        if fmt not in FORMATS:
            raise ValueError(f"unknown result format {fmt!r}: use {', '.join(FORMATS)}")
        return fmt
    for part in (accept or "").lower().split(","):
        media = part.split(";")[0].strip()
        if media in _ACCEPT:
            return _ACCEPT[media]
    return "jsonl"


class _Messages(io.StringIO):
    """Collects the messages a FormatSink ends (rsep.runtime.sinks: an output of items)."""

    def __init__(self) -> None:
        super().__init__()
        self.done: list[str] = []

    def end_item(self) -> None:
        self.done.append(self.getvalue().removesuffix(DELIMITER))
        self.seek(0)
        self.truncate()


class Renderer:
    """One subscriber's results as the texts to push, one pushed item each."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self._out = _Messages()
        self._sink = FormatSink(self._out, fmt, with_query=True) if fmt != "jsonl" else None

    def render(self, item: Item) -> list[str]:
        """The texts ``item`` completes: a jsonl object; for RDF Messages, nothing until the
        evaluation's last output, then its message."""
        if self._sink is None or item.output is None:
            return [json.dumps(item.data, ensure_ascii=False)]
        self._sink.write(item.output)
        if item.last:
            self._sink.end_evaluation()
        done, self._out.done = self._out.done, []
        return done
