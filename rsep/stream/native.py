"""rsep's native core (native/, the extension module rsep._core) as the native paths reach it.

What rsep.windows.native (windowed queries), rsep.spaseq.native (SPASEQ chains) and
rsep.epsparql.native (EP-SPARQL SEQs) share:
the module, whether it can run here, which runs may read with it (one TriG or N-Quads
stream file, its times from the default graph's point-time triples), a stream file read into events of ids,
the literals of those events that pyoxigraph's store would give back in another form, and a
run's outcome. The planners and the operators are each path's own.
"""

from __future__ import annotations

import importlib
import os
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pyoxigraph as ox

from rsep.stream.files import StreamFile

# The native reader of :func:`read` holds the whole file as ids before an operator runs (~6
# bytes of memory a byte of TriG at 10^6 events; a file it refuses is refused before a byte
# is written), while today's path streams it in memory bounded by the windows: a larger file
# runs on today's path, so a run's memory stays bounded whatever the file's size
# (tests/windows/test_native_window.py pins the refusal). The operators that read a file in
# parts (:func:`open_stream`: the window operators, SPASEQ's chain and EP-SPARQL's engine)
# have no such bound; :func:`read` is left to rsep bench's EP-SPARQL worker, which times a
# reading pass of its own.
MAX_FILE_BYTES = 256 * 2**20

# :func:`open_stream`'s chunk (bytes read at once, then to the line's end) and the size of
# the dictionary below which it is not swept (0: after every chunk). The tests make both
# tiny, so that a run reads a file in many parts and sweeps the dictionary all along.
STREAM_CHUNK = 1 << 20
SWEEP_TERMS = 1 << 16


def core() -> ModuleType:
    """rsep._core, the extension module. Imported by name: an import statement of it reads
    to import-linter and grimp as one of the package ``rsep`` itself (the extension is no
    module of theirs), which imports the engine lazily, and would make a circle of this."""
    return importlib.import_module("rsep._core")


def available(operator: str, what: str) -> str | None:
    """Why the native core cannot run a path here, or None. ``operator``: the function of
    rsep._core the path calls (a core built before it lacks it); ``what``: its name for the
    message."""
    if os.environ.get("RSEP_PURE", "") not in ("", "0"):
        return "RSEP_PURE=1: the pure build runs Python only"
    if os.environ.get("RSEP_NATIVE", "") == "0":
        # (today's path with the compiled build: what the native paths are measured against)
        return "RSEP_NATIVE=0: the native path is turned off"
    try:
        c = core()
    except ImportError as e:
        return f"the native core is not built ({e})"
    if not hasattr(c, operator):
        return f"the native core was built before its {what} (run `make`)"
    return None


def file_format(path: str | os.PathLike[str]) -> str:
    """The syntax rsep.stream.files.StreamFile reads a stream file at ``path`` in when none
    is given: ``nquads`` by the name (``.nq``, ``.nquads``), else ``trig`` (N-Triples
    included). The native reader reads a file in it; :func:`refusal` refuses a file whose
    syntax was given otherwise."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    return "nquads" if suffix in (".nq", ".nquads") else "trig"


def refusal(queries: Sequence[object], files: Sequence[object], other: str,
            missing: str | None) -> str | None:
    """Why a run of these registered queries (rsep.runtime's) over these stream readers does
    not take a native path, or None: one query its planner took (the query's ``native``,
    its plan or why not; ``other``: what a query without one is), the core built and not
    turned off (``missing``: :func:`available`'s answer), one TriG or N-Quads stream file
    read as a file (no text given), in the syntax its name gives (:func:`file_format`),
    with times from the default graph's point-time triples."""
    if len(queries) != 1:
        return "more than one query"
    plan = getattr(queries[0], "native", other)
    if isinstance(plan, str):
        return plan
    if missing is not None:
        return missing
    if len(files) != 1 or type(files[0]) is not StreamFile or files[0].text is not None \
            or files[0].fmt != file_format(files[0].path):
        return "not one TriG or N-Quads stream file read in the syntax its name gives"
    if files[0].time.in_graph:
        return "times not read from the default graph's point-time triples"
    return None


@dataclass
class Outcome:
    """A native run's end: ``refused`` says why it did not run (nothing to keep)."""

    refused: str = ""
    events: int = 0
    triples: int = 0
    evaluations: int = 0  # a windowed query's evaluations, a SPASEQ query's instants
    rows: int = 0
    read_s: float = 0.0  # seconds in the reader (the file into ids), of the run's
    # a refusal after standard input was read from: a file descriptor (the caller's) of a
    # file holding what was read of it, which today's path reads first (rsep.stream.files)
    replay: int | None = None
    # the bytes of the output that went out before a refusal, a pipe being read (the run
    # wrote through to ``fd:N``): today's path writes them first, and skips them
    sent: int = 0


def finished(src: Any, refused: str, evaluations: int, rows: int) -> Outcome:
    """The outcome of an operator's run over the stream ``src`` (:func:`open_stream`'s)."""
    if refused:
        return Outcome(refused, replay=src.spool(), sent=src.sent())
    return Outcome("", len(src), src.triples(), evaluations, rows, src.stats()[2])


def read(path: str, points: Sequence[str], max_record: int) -> tuple[Any, str, float]:
    """The stream file at ``path`` read into events of ids (rsep._core.StreamEvents), or
    None and why the native reader does not take it; and the seconds the reading took."""
    try:
        size = os.path.getsize(path)
    except OSError as e:
        return None, f"the native reader does not take {path}: {e.strerror}", 0.0
    if size > MAX_FILE_BYTES:
        return None, (f"the native reader does not take {path}: {size:,} bytes, over its "
                      f"{MAX_FILE_BYTES:,} (it holds a file whole; today's path streams it)"), 0.0
    t0 = time.perf_counter()
    ev, why = core().read_stream(path, list(points), max_record, format=file_format(path))
    read_s = time.perf_counter() - t0
    if ev is None:
        return None, f"the native reader does not take {path}: {why}", read_s
    return ev, "", read_s


def open_stream(path: str, points: Sequence[str], max_record: int,
                stored: Callable[[Any], object] | None, refuse: bool) -> tuple[Any, str]:
    """The stream file at ``path`` (in the syntax its name gives: :func:`file_format`) to
    be read in parts as an operator asks for its events
    (rsep._core.Stream, nothing read yet), or None and why not; ``-``: standard input (a
    pipe's bytes kept in a spool file as they are read, so that today's path can read them
    again after a refusal: :class:`Outcome`'s ``replay``). Its literals whose form
    pyoxigraph's store changes (``stored``: as :func:`store_forms`) refuse the run
    (``refuse``) or are read as the store gives them back; ``stored`` None: every term is
    read as the file gives it (as today's EP-SPARQL path reads it)."""
    if path == "-" and stat.S_ISREG(os.fstat(0).st_mode):
        path = "/dev/stdin"  # (a regular file: read from its start, as today's path reads it)
    try:
        src = core().open_stream(path, list(points), max_record, STREAM_CHUNK, SWEEP_TERMS,
                                 format=file_format(path))
    except ValueError as e:
        return None, f"the native reader does not take {path}: {e}"
    if stored is not None:
        src.set_forms(lambda unsure: forms(unsure, stored), refuse)
    return src, ""


def store_forms(ev: Any, stored: Callable[[Any], object]) -> list[tuple[str, str]]:
    """The literals of the events whose form pyoxigraph's store changes: (as written, as the
    store gives it back) in N-Triples syntax. ``stored``: the form of a literal in the store
    (rsep.sparql.matcher.Canon's ``term``), whose answer today's path matches and writes."""
    return forms(ev.unsure(), stored)


def forms(unsure: Sequence[str], stored: Callable[[Any], object]) -> list[tuple[str, str]]:
    """Of these literals (N-Triples syntax), those whose form pyoxigraph's store changes:
    (as written, as the store gives it back)."""
    if not unsure:
        return []
    doc = "".join(f"<urn:rsep:s> <urn:rsep:p> {t} .\n" for t in unsure)
    return [(str(q.object), form) for q in ox.parse(doc, format=ox.RdfFormat.N_TRIPLES)
            if (form := str(stored(q.object))) != str(q.object)]
