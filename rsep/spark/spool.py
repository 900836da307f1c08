"""A local append-only log that makes live sources (MQTT, TCP) replayable for Spark.

Spark's micro-batch recovery re-plans an uncommitted batch from its checkpointed
offsets, which a broker subscription or a socket cannot serve. A live source
therefore appends every message it receives to a :class:`Spool` and hands Spark
offsets that are sequence numbers in it. The spool is a directory of segment
files ``<first seq>.log``; each record carries a CRC so a torn tail left by a
crash is cut off at the next open. Segments whose records Spark has committed
are deleted, so disk use is bounded by the uncommitted backlog plus one segment.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import struct
import tempfile
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import overload

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows

from rsep.spark.texts import PAYLOAD_FORMATS

# crc32, payload length, arrival (microseconds since the epoch), key length
_HEAD = struct.Struct("<IIqH")
_SUFFIX = ".log"


class SpoolError(RuntimeError):
    pass


class Spool:
    """Records numbered 0, 1, 2, ... in arrival order; ``[first, durable)`` can be read.

    One process owns a spool directory at a time (an exclusive ``flock``). ``append``
    and ``sync`` may be called from different threads.
    """

    def __init__(self, directory: str | Path | None, *, segment_bytes: int = 8 << 20,
                 fsync: bool = True, lock_timeout: float = 10.0) -> None:
        self.temporary = directory is None
        self.dir = Path(tempfile.mkdtemp(prefix="rsep-spool-")) if directory is None else Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.fsync = fsync
        self._mutex = threading.Lock()
        self._lock_file = open(self.dir / "lock", "a+")  # noqa: SIM115 (held for the spool's life)
        self._acquire(lock_timeout)
        meta = self.dir / "spool.json"
        if meta.exists():
            self.id = json.loads(meta.read_text())["id"]
        else:
            self.id = uuid.uuid4().hex
            tmp = meta.with_suffix(".tmp")
            tmp.write_text(json.dumps({"id": self.id, "format": 1}))
            os.replace(tmp, meta)
        self._segments = sorted(int(p.name[: -len(_SUFFIX)]) for p in self.dir.glob("*" + _SUFFIX))
        if not self._segments:
            self._segments = [0]
            (self.dir / _name(0)).touch()
        last = self._segments[-1]
        count, size = _recover(self.dir / _name(last))
        self.end = last + count
        self.durable = self.end
        self._out = open(self.dir / _name(last), "ab")  # noqa: SIM115
        self._out_size = size

    def _acquire(self, timeout: float) -> None:
        # A query restarted at once may find its predecessor's process still closing.
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    self._lock_file.close()
                    raise SpoolError(
                        f"spool {self.dir} is in use by another running source "
                        "(each query needs its own spool directory)") from None
                time.sleep(0.05)

    @property
    def first(self) -> int:
        """The oldest sequence number still stored."""
        return self._segments[0]

    def append(self, key: str, payload: bytes, arrival_us: int) -> int:
        k = key.encode("utf-8")
        body = struct.pack("<q", arrival_us) + k + payload
        rec = _HEAD.pack(zlib.crc32(body), len(payload), arrival_us, len(k)) + k + payload
        with self._mutex:
            if self._out_size >= self.segment_bytes:
                self._roll()
            self._out.write(rec)
            self._out_size += len(rec)
            seq = self.end
            self.end += 1
            return seq

    def _roll(self) -> None:
        self._flush()
        self._out.close()
        self._segments.append(self.end)
        self._out = open(self.dir / _name(self.end), "ab")  # noqa: SIM115
        self._out_size = 0
        if self.fsync:
            _fsync_dir(self.dir)

    def _flush(self) -> None:
        self._out.flush()
        if self.fsync:
            os.fsync(self._out.fileno())
        self.durable = self.end

    def sync(self) -> int:
        """Make every appended record durable; returns the end of the durable prefix."""
        with self._mutex:
            if self.durable != self.end:
                self._flush()
            return self.durable

    def read(self, start: int, end: int) -> Iterator[tuple[int, int, str, bytes]]:
        """(seq, arrival_us, key, payload) for ``start <= seq < end``, all durable."""
        with self._mutex:
            if start < self._segments[0]:
                raise SpoolError(
                    f"records from {start} were requested but spool {self.dir} starts at "
                    f"{self._segments[0]}: they were committed and deleted (was the "
                    "checkpoint replaced, or the spool shared between queries?)")
            if end > self.durable:
                raise SpoolError(f"records up to {end} were requested but spool {self.dir} "
                                 f"holds {self.durable} (was the spool deleted or replaced?)")
            segs = list(self._segments)
        i = max(j for j, s in enumerate(segs) if s <= start) if start < end else len(segs)
        while i < len(segs) and segs[i] < end:
            seq = segs[i]
            with open(self.dir / _name(seq), "rb") as f:
                for arrival, key, payload in _records(f):
                    if seq >= end:
                        return
                    if seq >= start:
                        yield seq, arrival, key, payload
                    seq += 1
            i += 1

    def release(self, upto: int) -> None:
        """Delete the segments whose records all precede ``upto`` (committed by Spark)."""
        with self._mutex:
            while len(self._segments) > 1 and self._segments[1] <= upto:
                (self.dir / _name(self._segments.pop(0))).unlink(missing_ok=True)

    def close(self) -> None:
        with self._mutex:
            if self._out.closed:
                return
            self._flush()
            self._out.close()
        fcntl.flock(self._lock_file, fcntl.LOCK_UN)
        self._lock_file.close()
        if self.temporary:
            shutil.rmtree(self.dir, ignore_errors=True)


def _name(seq: int) -> str:
    return f"{seq:020d}{_SUFFIX}"


def _records(f) -> Iterator[tuple[int, str, bytes]]:
    while True:
        head = f.read(_HEAD.size)
        if len(head) < _HEAD.size:
            return
        crc, n, arrival, k = _HEAD.unpack(head)
        data = f.read(k + n)
        if len(data) < k + n or zlib.crc32(struct.pack("<q", arrival) + data) != crc:
            return
        yield arrival, data[:k].decode("utf-8"), data[k:]


def _recover(path: Path) -> tuple[int, int]:
    """Count the intact records of the last segment and cut off a torn tail."""
    count = 0
    good = 0
    with open(path, "rb") as f:
        for _ in _records(f):
            count += 1
            good = f.tell()
        size = f.seek(0, os.SEEK_END)
    if size != good:
        with open(path, "r+b") as f:
            f.truncate(good)
            f.flush()
            os.fsync(f.fileno())
    return count, good


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# ------------------------------------------------------------------ Spark side

# parse.py's raw-record contract; ``format`` null = detected from the text.
SCHEMA = "stream string, origin string, text string, arrival timestamp, format string"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class SpooledRows(InputPartition):
    """Rows of one partition, read from the spool on the driver: executors need no access
    to the driver's disk."""

    def __init__(self, rows: list[tuple[str, str, str, int]], fmt: str | None) -> None:
        super().__init__(len(rows))
        self.rows = rows
        self.format = fmt


class SpooledStreamReader(DataSourceStreamReader):
    """Offsets ``{"spool": id, "seq": n}`` over a :class:`Spool` fed by a receiver thread.

    Spark also builds readers only to plan and to call ``read`` on executors, so
    ``__init__`` only checks options; the spool is opened and the receiver started
    (``_start``, appending to ``self.spool``) at the first offset request, which comes
    from the long-lived driver-side process. Subclasses define ``row(key, payload)`` ->
    (stream, origin, text) and may override ``_sync`` to confirm to the sender what
    became durable.
    """

    spool: Spool

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options = {str(k).lower(): v for k, v in options.items()}
        self.format = options.get("format") or None
        if self.format not in (None, "trig", "nquads", "jsonl", *PAYLOAD_FORMATS):
            raise ValueError(f"format must be trig, nquads, jsonl, {', '.join(PAYLOAD_FORMATS)}, "
                             f"not {self.format!r}")
        self.fsync = _flag(options.get("fsync", "true"), "fsync")
        self.start_at = options.get("startingoffsets", "earliest")
        if self.start_at not in ("earliest", "latest"):
            raise ValueError(f"startingOffsets must be 'earliest' or 'latest', not {self.start_at!r}")
        self.max_rows = _positive(options.get("maxrecordsperbatch"), "maxRecordsPerBatch")
        self.partition_rows = _positive(options.get("recordsperpartition", "2000"),
                                        "recordsPerPartition")
        self.failure: BaseException | None = None  # set by the receiver thread
        self._started = False

    def _start(self) -> None:
        raise NotImplementedError

    def _open(self) -> None:
        if not self._started:
            self.spool = Spool(self.options.get("spooldir") or None, fsync=self.fsync)
            self._started = True
            try:
                self._start()
            except BaseException:
                self.stop()
                raise

    # The receiver runs in this (driver-side) process; its errors surface at the next trigger.
    def _check(self) -> None:
        self._open()
        if self.failure is not None:
            raise SpoolError(f"{self.describe()}: {self.failure}") from self.failure

    def describe(self) -> str:
        return "live source"

    def row(self, seq: int, key: str, payload: bytes) -> tuple[str, str, str]:
        raise NotImplementedError

    def _sync(self) -> int:
        return self.spool.sync()

    def _offset(self, seq: int) -> dict:
        return {"spool": self.spool.id, "seq": seq}

    def _seq(self, offset: dict) -> int:
        if offset.get("spool") != self.spool.id:
            raise SpoolError(
                f"{self.describe()}: the checkpoint's offsets belong to spool {offset.get('spool')} "
                f"but {self.spool.dir} is spool {self.spool.id}; restarting from a checkpoint "
                "needs the same spoolDir as the run that wrote it")
        return int(offset["seq"])

    def initialOffset(self) -> dict:
        self._check()
        return self._offset(self.spool.first if self.start_at == "earliest" else self.spool.sync())

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        self._check()
        first = self._seq(start)
        end = self._sync()
        if isinstance(limit, ReadMaxRows):
            end = min(end, first + limit.max_rows)
        return self._offset(end)

    def reportLatestOffset(self) -> dict | None:
        return self._offset(self.spool.durable) if self._started else None

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        self._check()
        a, b = self._seq(start), self._seq(end)
        parts: list[InputPartition] = []
        rows: list[tuple[str, str, str, int]] = []
        for seq, arrival, key, payload in self.spool.read(a, b):
            rows.append((*self.row(seq, key, payload), arrival))
            if len(rows) >= self.partition_rows:
                parts.append(SpooledRows(rows, self.format))
                rows = []
        if rows:
            parts.append(SpooledRows(rows, self.format))
        return parts

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        assert isinstance(partition, SpooledRows)  # (what partitions() made)
        for stream, origin, text, arrival in partition.rows:
            yield stream, origin, text, _EPOCH + timedelta(microseconds=arrival), partition.format

    def commit(self, end: dict) -> None:
        self._check()
        self.spool.release(self._seq(end))

    def stop(self) -> None:
        if self._started:
            self.spool.close()


def now_us() -> int:
    return time.time_ns() // 1000


def _flag(value: str, name: str) -> bool:
    v = str(value).lower()
    if v not in ("true", "false"):
        raise ValueError(f"option {name} must be true or false, not {value!r}")
    return v == "true"


@overload
def _positive(value: str, name: str) -> int: ...
@overload
def _positive(value: str | None, name: str) -> int | None: ...
def _positive(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n <= 0:
        raise ValueError(f"option {name} must be a positive integer, not {value!r}")
    return n
