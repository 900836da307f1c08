"""``python -m rsep.testing w3c [DIALECT ...] [--quiet] | rsp4j [--manifest FILE] | csrbench [READING ...]
| architecture``."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from rsep.testing import csrbench, rsp4j
from rsep.testing.architecture import architecture_doc_with_diagram
from rsep.testing.suite import DIALECTS
from rsep.testing.w3c import report


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["architecture"]:  # rewrite docs/architecture.md's diagram from the code
        doc = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
        doc.write_text(architecture_doc_with_diagram(doc.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    if args[:1] == ["rsp4j"]:  # RSP4J's published queries, read from $RSEP_RSP4J
        return rsp4j.main(args[1:])
    if args[:1] == ["csrbench"]:  # rsep against YASPER's and C-SPARQL 2.0's recorded answers
        warnings.simplefilter("ignore")
        return csrbench.main(args[1:])
    if not args or args[0] != "w3c":
        print("usage: python -m rsep.testing w3c [DIALECT ...] [--quiet] | rsp4j [--manifest FILE] "
              "| csrbench [rspql|rsp4j ...] | architecture", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")
    dialects = [a for a in args[1:] if not a.startswith("-")] or list(DIALECTS)
    report(dialects, failures="--quiet" not in args)
    return 0

