"""ETALIS as a `rsep bench` peer: this process becomes SWI-Prolog running
etalis_driver.pl (beside this file) on the spec's rules and stream facts (exec: the
measured process tree is swipl's alone)."""

from __future__ import annotations

import json
import os
import shutil
import sys


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    swipl = shutil.which("swipl")
    if swipl is None:
        print("swipl not found: install Debian's swi-prolog-nox "
              "(benchmarks/peers/setup_etalis.sh)", file=sys.stderr)
        return 1
    driver = os.path.join(os.path.dirname(os.path.abspath(__file__)), "etalis_driver.pl")
    os.execv(swipl, [swipl, "--traditional", "-q", driver, "--", spec["etalis_src"],
                     spec["policy"], spec["rules"], spec["stream"], spec["matches"],
                     spec["gc"], spec["result"]])
    return 1  # (not reached)


if __name__ == "__main__":
    sys.exit(main())
