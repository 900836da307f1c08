"""The ``rsep`` command's entry point (pyproject's console script): rsep.cli.main imported
with the cyclic garbage collector paused, then what it allocated frozen (``gc.freeze``).

A start allocates a few hundred thousand objects (modules, classes, functions) that live
as long as the process; collected young, over and over as they pile up, they cost ~15% of a
tiny run (docs/benchmarks.md, "Start-up"). Frozen, no collection looks at them again;
collections go on as usual for what the run allocates."""

from __future__ import annotations

import gc


def main() -> int:
    gc.disable()
    try:
        from rsep.cli.main import main as rsep_main
    finally:
        gc.freeze()
        gc.enable()
    return rsep_main()
