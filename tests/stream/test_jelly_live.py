"""Jelly on every live source (issue 24): the same events from a Jelly file, standard input,
TCP (a delimited stream of frames) and MQTT (one frame per broker message) give the same
results; a frame that does not decode is dead-lettered with its position and the stream
goes on."""

from __future__ import annotations

import io
import json
import socket
import sys
import threading
import time
from pathlib import Path

from mqtt_broker import publish

from rsep.cli.main import main
from rsep.runtime.mqtt_output import delimited_frames
from rsep.stream.jelly import Delimited
from rsep.stream.messages import MessageLog
from rsep.testing.snippets import ROOT

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"
SR = "http://example.org/srbench"
QUERY = str(ROOT / "examples" / "srbench-hot.rq")
# a frame's bytes that are no Protobuf message (field 12 with wire type 7)
GARBAGE = b"\x67\x61\x72\x62\x61\x67\x65"


def _varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def _jelly(tmp_path: Path) -> bytes:
    log = tmp_path / "weather.jelly"
    assert main(["convert", str(SRBENCH), "--to", "jelly", "-o", str(log), "-q"]) == 0
    return log.read_bytes()


def _broken(data: bytes) -> bytes:
    """The stream with a garbage frame after its fifth: framed right, undecodable."""
    frames = delimited_frames(data)
    return b"".join(_varint(len(f)) + f for f in [*frames[:5], GARBAGE, *frames[5:]])


def _serve(data: bytes, piece: int = 333) -> int:
    """A TCP server that sends ``data`` in small pieces (cutting frames and their lengths)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def run() -> None:
        conn, _ = srv.accept()
        with conn:
            for i in range(0, len(data), piece):
                conn.sendall(data[i:i + piece])
        srv.close()

    threading.Thread(target=run, daemon=True).start()
    return srv.getsockname()[1]


def _run(args: list[str], out: Path) -> tuple[int, list[dict]]:
    code = main(["run", QUERY, *args, "-q", "-o", str(out)])
    return code, [json.loads(line) for line in out.read_text().splitlines()]


def test_the_delimited_cutter_takes_frames_cut_anywhere():
    frames = [b"a" * 3, b"", b"b" * 200, b"c"]
    data = b"".join(_varint(len(f)) + f for f in frames)
    for piece in (1, 2, 7, len(data)):
        cutter = Delimited()
        got = [f for i in range(0, len(data), piece) for f in cutter.feed(data[i:i + piece])]
        assert got == [(0, b"aaa"), (4, b""), (5, b"b" * 200), (207, b"c")]
        assert cutter.buf == b""


def test_jelly_from_a_file_stdin_and_tcp_gives_the_stream_files_results(tmp_path, monkeypatch):
    _, ref = _run(["--stream", f"{SR}={SRBENCH}"], tmp_path / "ref.jsonl")
    assert len(ref) > 20
    data = _jelly(tmp_path)
    assert _run(["--stream", f"{SR}={tmp_path / 'weather.jelly'}"], tmp_path / "file.jsonl") == (0, ref)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert _run(["--stream", f"{SR}=-", "--stream-format", "jelly"], tmp_path / "stdin.jsonl") == (0, ref)
    port = _serve(data)
    assert _run(["--stream", f"{SR}=tcp://127.0.0.1:{port}?format=jelly"], tmp_path / "tcp.jsonl") == (0, ref)
    port = _serve(data, piece=4096)
    assert _run(["--stream", f"{SR}=tcp://127.0.0.1:{port}", "--stream-format", "jelly"],
                tmp_path / "tcp2.jsonl") == (0, ref)


def test_a_garbage_frame_over_tcp_is_dead_lettered_with_its_position(tmp_path):
    data = _jelly(tmp_path)
    _, ref = _run(["--stream", f"{SR}={SRBENCH}"], tmp_path / "ref.jsonl")
    broken = _broken(data)
    offset = sum(len(_varint(len(f))) + len(f) for f in delimited_frames(data)[:5])
    port = _serve(broken)
    dead = tmp_path / "dead.jsonl"
    code, got = _run(["--stream", f"{SR}=tcp://127.0.0.1:{port}?format=jelly", "--dead-letter", str(dead)],
                     tmp_path / "tcp.jsonl")
    (r,) = [json.loads(x) for x in dead.read_text().splitlines()]
    assert (code, r["file"], r["line"]) == (3, f"tcp://127.0.0.1:{port}", 6)
    assert r["reason"].startswith(f"frame 6 (byte {offset}): not a Jelly frame")
    assert got == ref  # every other frame read: the stream went on


def test_jelly_over_mqtt_one_frame_per_broker_message(broker, tmp_path):
    data = _jelly(tmp_path)
    _, ref = _run(["--stream", f"{SR}={SRBENCH}"], tmp_path / "ref.jsonl")
    frames = delimited_frames(data)
    assert len(frames) == 34 == sum(1 for _ in MessageLog(tmp_path / "weather.jelly", SR).messages())
    url = f"mqtt://127.0.0.1:{broker}/weather-jelly?format=jelly&idle=4"
    result: dict = {}
    dead = tmp_path / "dead.jsonl"
    runner = threading.Thread(target=lambda: result.update(out=_run(
        ["--stream", f"{SR}={url}", "--dead-letter", str(dead)], tmp_path / "mqtt.jsonl")))
    runner.start()
    time.sleep(1.5)  # the run subscribes first: MQTT delivers what is published after that
    publish(broker, "weather-jelly", [*frames[:5], GARBAGE, *frames[5:]])
    runner.join(60)
    assert result["out"] == (3, ref)
    (r,) = [json.loads(x) for x in dead.read_text().splitlines()]
    assert (r["line"], r["reason"].split(":")[0]) == (6, "frame 6")
    assert r["reason"].startswith("frame 6: not a Jelly frame")
