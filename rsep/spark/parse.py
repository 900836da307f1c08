"""Raw records -> events, on the executors: the contract every Spark source meets.

Raw-record contract (what a source produces, what ``events_from_records`` takes)
--------------------------------------------------------------------------------
A (streaming or static) DataFrame with at least these columns:

``stream``  string     the stream's IRI (without angle brackets)
``origin``  string     where the text came from, for messages and ordering: a file
                       path, or e.g. ``mqtt://host:1883/topic#000000000042``
``text``    string     one or more *complete* records of one format: a whole TriG /
                       N-Quads document (its prefixes included), or JSON lines
``arrival`` timestamp  when the text arrived (end-to-end latency is measured from it)

Optional column ``format`` (string: ``trig`` | ``nquads`` | ``jsonl``); when it is
missing or null the format comes from the origin's suffix (``.nq``/``.nquads``,
``.jsonl``/``.ndjson``, else TriG) and a text whose first non-blank character is
``{`` is read as JSON lines.

Each text is parsed on its own (its own prefixes, its own blank-node scope); an
event's time triple ``<g> prov:generatedAtTime T`` must be in the same text as
the graph. Simultaneous events are ordered as the in-process merge orders them:
by the stream's rank (the order the streams were given), then by ``origin``
(string order: sources whose messages arrive one by one should use origins that
sort in arrival order, e.g. a zero-padded counter), then by position in the text.

A row whose ``stream`` is ``END_OF_INPUT`` (and whose text is empty) says that the
input has ended: every buffered event is released and every query closed, as the
in-process engine does at the end of its files. Live sources never send it;
finite ones (files replayed once, tests) may.

JSON-lines events: one object per line,
``{"graph": IRI, "time": T, "triples": "<s> <p> <o> . ..."}`` where ``T`` is an
integer or an xsd:dateTime string; ``"start"``/``"end"`` instead of ``"time"`` give
an interval; ``"triples"`` is N-Triples (or Turtle) text (rsep.stream.jsonl).

Malformed records, and events later than the allowed lateness, go to the
dead-letter output with the reason; nothing is dropped silently.
"""

END_OF_INPUT = "urn:rsep:end-of-input"

RAW_COLUMNS = ("stream", "origin", "text", "arrival")
