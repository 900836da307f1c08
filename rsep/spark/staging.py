"""A streaming run's stream directories, fed to Spark's file source in file-name order.

Spark's file source orders new files by modification time only: files whose times tie (to
the millisecond: a copy, an unpacked archive, a fast writer) came in any order, so a
micro-batch could hold events before the previous one's, and those were rejected as late
(10,000 events over tied files: 7,000 rejected, 185 rows instead of 297: issue 52). So each
directory's files are hard-linked (copied, on another filesystem) into a staging directory
inside the checkpoint, one micro-batch's worth at a time in name order (relative paths, as
strings), and Spark reads that: a micro-batch's files are all it can see. The origins
Spark gives the links are mapped back to the files they mirror (:func:`origin_column`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession


@dataclass
class Staged:
    source: Path  # the stream's directory
    staged: Path  # where its files are linked, a micro-batch at a time


class Staging:
    """The directory streams among ``streams`` (IRI, path), each staged under ``root``.
    Names starting with ``.`` or ``_`` are skipped, as Spark's file source skips them."""

    def __init__(self, streams: Iterable[tuple[str, str]], root: Path) -> None:
        self.dirs: dict[str, Staged] = {}
        for k, (iri, path) in enumerate(streams):
            p = Path(path)
            if "://" not in path and p.is_dir():
                st = root / f"stream-{k}"
                st.mkdir(parents=True, exist_ok=True)
                self.dirs[iri] = Staged(p.resolve(), st)

    @staticmethod
    def _new(d: Staged) -> list[Path]:
        """The directory's files not staged yet, in name order."""
        found = []
        for f in d.source.rglob("*"):
            rel = f.relative_to(d.source)
            if any(part.startswith((".", "_")) for part in rel.parts) or not f.is_file():
                continue
            if not (d.staged / rel).exists():
                found.append(rel)
        return sorted(found, key=lambda r: r.as_posix())

    def stage(self, max_files: int | None = None, max_bytes: int | None = None) -> bool:
        """Stage every directory's next micro-batch: at most ``max_files`` files, or else at
        most ``max_bytes`` bytes of them (at least one file); neither: all. Whether any was."""
        staged = False
        for d in self.dirs.values():
            size = 0
            for n, rel in enumerate(self._new(d)):
                src = d.source / rel
                size += src.stat().st_size
                if n and ((max_files and n >= max_files)
                          or (not max_files and max_bytes and size > max_bytes)):
                    break
                dst = d.staged / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                tmp = dst.with_name("." + dst.name + ".tmp")  # (hidden from Spark till whole)
                tmp.unlink(missing_ok=True)
                try:
                    os.link(src, tmp)
                except OSError:
                    shutil.copy2(src, tmp)  # (keeps the modification time: the arrival)
                os.replace(tmp, dst)
                staged = True
        return staged


def _qualified(spark: SparkSession, path: Path) -> str:
    """A local directory as Spark's ``_metadata.file_path`` spells the files under it."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # (a live session)
    hp = jvm.org.apache.hadoop.fs.Path(str(path.resolve()))
    fs = hp.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return str(fs.makeQualified(hp).toUri().toString()).rstrip("/")


def origin_column(spark: SparkSession, d: Staged) -> Column:
    """``_metadata.file_path`` of a staged link, as that of the file it mirrors."""
    path = F.col("_metadata.file_path")
    sq, oq = _qualified(spark, d.staged), _qualified(spark, d.source)
    return F.when(path.startswith(sq + "/"), F.concat(
        F.lit(oq), F.expr(f"substring(_metadata.file_path, {len(sq) + 1})"))).otherwise(path)
