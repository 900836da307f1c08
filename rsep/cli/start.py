"""The ``rsep`` command's entry point (pyproject's console script): rsep.cli.main imported
with the cyclic garbage collector paused, then what it allocated frozen (``gc.freeze``),
and dataclasses' methods made from cached code (:class:`MethodCode`).

A start allocates ~50,000 containers (modules' dicts, classes, functions, the parser's
tables) that live as long as the process; collected young, over and over as they pile up,
they cost ~10% of a tiny run (docs/benchmarks.md, "Start-up"). Frozen, after the imports and
again once ``rsep run``'s start-up is over (``started``), no collection looks at them
again; collections go on as usual for what the run allocates."""

from __future__ import annotations

import builtins
import dataclasses
import gc
import importlib.util
import marshal
import sys
from pathlib import Path
from types import CodeType
from typing import Any

from rsep.cache import cache_dir, write_atomically

KEPT = 4096  # methods' texts a cache keeps at most (then only those the last start used)


class MethodCode:
    """The compiled code of the methods dataclasses writes for a class (``__init__``,
    ``__repr__``, ``__eq__``...), by their text. dataclasses compiles that text for every
    class at every start (Python 3.11's ``_create_fn`` exec's it: five compilations per
    class), ~20 ms of a tiny run for rsep's ~55 classes. Installed as the ``exec`` of the
    dataclasses module (its one call of it), it compiles a text only when new: the same text
    compiled the same way (as ``exec`` does, file ``<string>``) gives the same code, so the
    classes are dataclasses' own. Kept in :func:`rsep.cache.cache_dir`, one file per
    bytecode format and optimization level."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            kept = marshal.loads(path.read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            kept = {}
        self.kept: dict[str, CodeType] = kept if isinstance(kept, dict) else {}
        self.used: dict[str, CodeType] = {}
        self.compiled = 0  # texts this start compiled

    @classmethod
    def install(cls) -> MethodCode:
        magic = importlib.util.MAGIC_NUMBER.hex()
        cache = cls(cache_dir() / f"dataclass-code-{magic}-O{sys.flags.optimize}.marshal")
        dataclasses.exec = cache.exec  # type: ignore[attr-defined]
        return cache

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        if isinstance(source, str):
            code = self.used.get(source) or self.kept.get(source)
            if code is None:
                code = compile(source, "<string>", "exec", dont_inherit=True)
                self.compiled += 1
            self.used[source] = code
            source = code
        builtins.exec(source, globals, locals)

    def save(self) -> None:
        """Writes the cache if this start compiled a text it did not hold."""
        if self.used.keys() <= self.kept.keys():
            return
        kept = {**self.kept, **self.used} if len(self.kept) + len(self.used) <= KEPT else self.used
        if write_atomically(self.path, marshal.dumps(kept)):
            self.kept = kept


def main() -> int:
    gc.disable()
    try:
        methods = MethodCode.install()
        # (imported here, once the dataclasses' methods come from the cache and with the GC
        # paused: what rsep's imports allocate is frozen below, never traversed again)
        from rsep.cli.main import main as rsep_main
    finally:
        gc.freeze()
        gc.enable()
    methods.save()
    try:
        # the parsers and what else the subcommand's start-up allocated, frozen in turn
        return rsep_main(started=gc.freeze)
    finally:
        methods.save()  # the modules a subcommand imported as it ran
