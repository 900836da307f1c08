"""The W3C SPARQL 1.1 evaluation tests through every dialect (project issue 16):
rsep.testing, the shared test helpers beside the tests.

A plain SPARQL 1.1 query, its data one event at time 0, must give inside each
dialect what the W3C expects of SPARQL. It reads the test manifests,
keeps the tests pyoxigraph itself passes (*counted*), rewrites each query into
each dialect at the level of its text, runs it through that dialect's real
``parse_query`` + ``Engine`` path and compares the results as bags:

- numeric and boolean literals by value (within their datatype; pyoxigraph canonicalises
  them), language tags without case;
- blank nodes as wildcards, up to one consistent bijection over the whole result;
- in order only where the query has a top-level ORDER BY and the expected result
  is in an ordered format (SPARQL XML, JSON, TSV, CSV).

Some dialects refuse a construct by design (EP-SPARQL: what needs the end of an
unbounded stream; SPASEQ: what its grammar cannot say; an RSEP-QL event pattern
holds a basic graph pattern only): :data:`REFUSALS` lists each, by reason, with
the message its QueryError must carry at parse time. ``python -m rsep.testing w3c``
(or ``python tests/sparql/test_w3c_eval.py``) prints the counts per dialect.

The package: :mod:`rsep.testing.suite` (manifests, expected results, comparison),
:mod:`rsep.testing.dialects` (a query's shape, its rewriting per dialect, the refusals),
:mod:`rsep.testing.w3c` (running and judging each test, the report),
:mod:`rsep.testing.architecture` (docs/architecture.md's import diagram),
:mod:`rsep.testing.command` (``python -m rsep.testing``).
"""

from rsep.testing.architecture import architecture_diagram, architecture_doc_with_diagram
from rsep.testing.command import main
from rsep.testing.dialects import REFUSALS, Refusal, Shape, refusals, rewrite, shape
from rsep.testing.suite import (
    DIALECTS,
    DIRS,
    EVENT,
    STREAM,
    WINDOW,
    Result,
    W3CTest,
    csv_key,
    data_triples,
    difference,
    expected_result,
    nt_key,
    outputs_result,
    pyoxigraph_result,
    read_manifests,
    term_key,
    w3c_dir,
)
from rsep.testing.w3c import (
    DIVERGENCES,
    SET_SEMANTICS,
    SILENCES,
    UNTIL,
    Divergence,
    Outcome,
    Silence,
    counted,
    dialect_text,
    distinct,
    event_of,
    ordered,
    outcome,
    parse,
    report,
    run_query,
)

__all__ = [
    "DIALECTS", "DIRS", "DIVERGENCES", "EVENT", "REFUSALS", "SET_SEMANTICS", "SILENCES", "STREAM",
    "UNTIL", "WINDOW", "architecture_diagram", "architecture_doc_with_diagram", "Divergence", "Outcome", "Refusal", "Result", "Shape", "Silence", "W3CTest",
    "counted", "csv_key", "data_triples", "dialect_text", "difference", "distinct", "event_of",
    "expected_result", "main", "nt_key", "ordered", "outcome", "outputs_result", "parse",
    "pyoxigraph_result", "read_manifests", "refusals", "report", "rewrite", "run_query", "shape",
    "term_key", "w3c_dir",
]
