"""The ``rsep`` command: a table of subcommands, each a module with ``add_parser`` and
``main``; only the one named is imported (``rsep run`` needs neither Spark nor the
benchmarks).

Exit status, one table for every command (README, "Exit status"): 0 success; 1 error
(one line on stderr says why: a query's error, located, from every command alike); 2 bad
usage (or a query outside what the command takes); 3 the run completed but input records
were rejected (see the messages on stderr and the dead-letter file); 4 ``compare``: the
engines disagree; 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import ModuleType

from rsep import __version__
from rsep.lang import QueryError
from rsep.lang.errors import OptionRefused
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
        if args.command == "run" and args.engine == "inprocess":
            return interruptible(_module(module).main, args)
        code: int = _module(module).main(args)
        return code
    except OptionRefused as e:
        print(f"rsep: {e}", file=sys.stderr)
        return EXIT_USAGE
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


# rsep run's recursion limit: the query bounds (rsep.lang.bounds) let a query through whose
# parse tree is ~1,000 levels deep, which rsep's analyses walk by recursion (Python's
# default limit is 1,000); what the C stack takes is the query's depth, not this limit.
RECURSION = 10_000
GRACE = 0.7  # seconds the main thread has to take a SIGINT itself before it is forced


def interruptible(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """``rsep run``'s in-process main, stopped by SIGINT within :data:`GRACE` seconds even
    inside a native call. Python runs a signal handler in the main thread between bytecodes
    only: a Ctrl-C waited until pyoxigraph's evaluation returned (minutes for a runaway).
    The C-level handler writes the signal to a wake-up pipe at once; a thread reading it
    gives the main thread GRACE seconds to take the KeyboardInterrupt (then the run closes
    its outputs as usual: a live run's last message is published); if it has not, the
    thread flushes what was output, says so and ends the process, status 130."""
    if threading.current_thread() is not threading.main_thread():
        return run(args)  # (signals go to the main thread: nothing to watch here)
    r, w = os.pipe()  # (a pipe, not a socket pair: start-up imports no socket module)
    os.set_blocking(w, False)
    taken = threading.Event()
    done = threading.Event()

    def on_sigint(signum: int, frame: object) -> None:
        taken.set()
        raise KeyboardInterrupt

    def watch() -> None:
        while True:
            try:
                data = os.read(r, 64)
            except OSError:
                return
            if not data or done.is_set():
                os.close(r)
                return
            if signal.SIGINT in data and not taken.wait(GRACE) and not done.is_set():
                for f in (*getattr(args, "flush", ()), sys.stdout):
                    try:
                        f.flush()
                    except (OSError, ValueError):
                        pass  # a closed or broken output: the process ends anyway
                print("rsep: interrupted; the results output so far are kept",
                      file=sys.stderr, flush=True)
                os._exit(130)

    old_handler = signal.signal(signal.SIGINT, on_sigint)
    old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, RECURSION))
    t = threading.Thread(target=watch, name="rsep-sigint", daemon=True)
    t.start()
    try:
        return run(args)
    finally:
        done.set()
        signal.set_wakeup_fd(old_fd)
        signal.signal(signal.SIGINT, old_handler)
        sys.setrecursionlimit(old_limit)
        os.close(w)  # the watching thread reads the end of the pipe and ends


if __name__ == "__main__":
    sys.exit(main())
