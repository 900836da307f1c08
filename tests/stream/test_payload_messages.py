"""The helpers the MQTT, Kafka and Spark sources share for one RDF Message per payload."""

from __future__ import annotations

import pytest

from rsep.stream.event import Event, Rejected
from rsep.stream.messages import Message, messages_mode, payload_messages
from rsep.stream.time import TimeConfig

T = "<http://www.w3.org/ns/prov#generatedAtTime>"
INT = "^^<http://www.w3.org/2001/XMLSchema#integer>"


def test_messages_mode_is_decided_in_one_place():
    assert messages_mode("jelly", False, "mqtt://h/t") is True  # Jelly's frames are messages
    assert messages_mode("trig", True, "u") is True and messages_mode("nquads", False, "u") is False
    assert messages_mode("jsonl", False, "u") is False
    with pytest.raises(ValueError, match="an RDF Message Log is TriG or N-Quads, not JSON lines: 'kafka://h/t'"):
        messages_mode("jsonl", True, "kafka://h/t")


def test_each_payload_is_one_message_with_its_own_blank_nodes():
    payloads = [f'_:b <http://ex.org/p> "{i}" .\n<http://ex.org/m{i}> {T} "{i}"{INT} .' for i in (1, 2)]
    got = list(payload_messages("mqtt://h/t", "urn:s", payloads, fmt="nquads").messages())
    assert [type(m) for m in got] == [Message, Message]
    blanks = [{q.subject for q in m.quads if q.predicate.value == "http://ex.org/p"} for m in got]
    assert blanks[0] != blanks[1]  # the same label in two messages: two nodes
    events = list(payload_messages("mqtt://h/t", "urn:s", payloads, fmt="nquads"))
    assert [e.time for e in events if isinstance(e, Event)] == [1, 2]


def test_a_payload_in_the_drafts_form_is_refused_as_mixed():
    got = list(payload_messages("kafka://h/t", "urn:s", [f"<http://ex.org/m> {T} \"1\"{INT} .\n# @message\n"],
                                fmt="trig", time=TimeConfig()))
    [bad] = [r for r in got if isinstance(r, Rejected)]
    assert (bad.origin, bad.line, bad.column) == ("kafka://h/t", 2, 1)
    assert bad.reason.endswith("a log is in one syntax or the other")
    assert not [e for e in got if isinstance(e, Event)]
