"""The ``rsep`` command: a table of subcommands, each a module with ``add_parser`` and
``main``; only the one named is imported (``rsep run`` needs neither Spark nor the
benchmarks).

Exit status: 0 success; 1 error (one line on stderr says why); 2 bad usage;
3 the run completed but input records were rejected (see the messages on
stderr and the dead-letter file).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from types import ModuleType

from rsep import __version__
from rsep.lang import QueryError
from rsep.runtime.engine import EngineError
from rsep.stream.time import TimeError

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2

# subcommand -> the module that adds its parser and runs it
SUBCOMMANDS = {"run": "rsep.cli.run", "explain": "rsep.cli.compare",
               "compare": "rsep.cli.compare", "bench": "rsep.bench.cli",
               "spark": "rsep.cli.spark", "serve": "rsep.cli.serve",
               "convert": "rsep.cli.convert"}
# `rsep run --engine ENGINE`: the module that runs it
ENGINES = {"inprocess": "rsep.cli.run", "spark": "rsep.cli.spark"}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or only of the one ``argv`` names."""
    p = argparse.ArgumentParser(prog="rsep", description="RDF stream processing: continuous "
                                "RSP-QL, C-SPARQL and CQELS queries over RDF graph streams.")
    p.add_argument("--version", action="version", version=f"rsep {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    named = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    added: set[str] = set()
    for name, module in SUBCOMMANDS.items():
        if (named is None or name == named) and module not in added:
            added.add(module)
            _module(module).add_parser(sub)
    return p


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)


def _nothing() -> None:
    """The default ``started``: in-process callers (the tests) freeze nothing."""


def main(argv: list[str] | None = None, *, started: Callable[[], None] = _nothing) -> int:
    """``started``: called by ``rsep run`` once its start-up is over (the queries parsed,
    before any stream is read), as ``args.started``; the command's entry point
    (rsep.cli.start) freezes there what start-up allocated."""
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    args.started = started
    module = ENGINES[args.engine] if args.command == "run" else SUBCOMMANDS[args.command]
    try:
        code: int = _module(module).main(args)
        return code
    except QueryError as e:
        print(f"rsep: {e}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_OK
    except (EngineError, TimeError, ValueError, OSError) as e:
        print(f"rsep: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
