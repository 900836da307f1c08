"""rsep: RDF stream processing and semantic complex event processing."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rsep import _native

__version__ = "0.1.0"

_native.install()  # before the first compiled module loads: never a stale build

if TYPE_CHECKING:
    from rsep.algebra.policy import R2S, ReportPolicy
    from rsep.lang import QueryError, parse_query
    from rsep.runtime.engine import Engine, EngineError, Limits, Output
    from rsep.stream.event import Event
    from rsep.stream.files import StreamFile, TimeConfig
    from rsep.stream.protocol import Sink, Source
    from rsep.stream.readers import open_stream

# The public names, by the module that defines them: imported on first use (PEP 562), so that
# `import rsep` (every subcommand's first step) loads neither the engine nor the grammars.
_PUBLIC = {"Engine": "rsep.runtime.engine", "EngineError": "rsep.runtime.engine",
           "Limits": "rsep.runtime.engine", "Output": "rsep.runtime.engine",
           "QueryError": "rsep.lang", "parse_query": "rsep.lang", "R2S": "rsep.algebra.policy",
           "ReportPolicy": "rsep.algebra.policy", "Event": "rsep.stream.event",
           "StreamFile": "rsep.stream.files", "TimeConfig": "rsep.stream.files",
           "Source": "rsep.stream.protocol", "Sink": "rsep.stream.protocol",
           "open_stream": "rsep.stream.readers"}


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'rsep' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value  # once: later lookups are plain attributes
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})


__all__ = ["Engine", "EngineError", "Event", "Limits", "Output", "QueryError", "R2S",
           "ReportPolicy", "Sink", "Source", "StreamFile", "TimeConfig", "open_stream",
           "parse_query", "__version__"]
