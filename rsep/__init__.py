"""rsep: RDF stream processing and semantic complex event processing."""

__version__ = "0.1.0"

from rsep import _native  # noqa: E402

_native.install()  # before the first compiled module loads: never a stale build

from rsep.algebra.policy import R2S, ReportPolicy  # noqa: E402
from rsep.lang import QueryError, parse_query  # noqa: E402
from rsep.runtime.engine import Engine, EngineError, Limits, Output  # noqa: E402
from rsep.stream.event import Event  # noqa: E402
from rsep.stream.files import StreamFile, TimeConfig  # noqa: E402

__all__ = ["Engine", "EngineError", "Event", "Limits", "Output", "QueryError", "R2S",
           "ReportPolicy", "StreamFile", "TimeConfig", "parse_query", "__version__"]
