"""LARS (001): streams, windows, programs and answer streams; translations of RSP
queries (tau_1 for C-SPARQL, tau_2 for CQELS) and push-pull agreement."""

from rsep.lars.answer import answer_stream, derived_at
from rsep.lars.core import (
    NOW,
    NULL,
    TRUE,
    UNBOUNDED,
    AtAtom,
    Atom,
    LarsError,
    Lit,
    Modal,
    Program,
    Rule,
    Stream,
    TimeWindow,
    TupleWindow,
    Var,
    WindowAtom,
    cmp_test,
    data_stream,
    mod_test,
)

__all__ = [
    "NOW", "NULL", "TRUE", "UNBOUNDED", "AtAtom", "Atom", "LarsError", "Lit", "Modal", "Program",
    "Rule", "Stream", "TimeWindow", "TupleWindow", "Var", "WindowAtom", "answer_stream",
    "cmp_test", "data_stream", "derived_at", "mod_test",
]
