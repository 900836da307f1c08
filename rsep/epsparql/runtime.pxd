# Cython declarations for runtime.py's compiled build (python -m rsep.native build): the
# context and the runtime as C classes, so that the engine's per-instant calls read their
# fields as C fields. Each keeps a __dict__: --stage-times wraps their methods per instance.
# runtime.py stays plain Python; RSEP_PURE=1 runs it as such.
cimport cython
from rsep.epsparql.delta cimport Delta

cdef class EpContext:
    cdef dict __dict__
    cdef public object engine, schema, background, world, last, _derived, _kept
    cdef public list runtimes, _rules, _queries
    cdef public dict pending
    cdef public bint prune, policies, _dl_valid
    cdef public object _dl

cdef class EpSparqlRuntime:
    cdef dict __dict__
    cdef public object query, engine, name, callback, last_tick, kind, plan, leaf_horizon
    cdef public object window, policy_state, _bn
    cdef public set streams, _ticks, _emitted
    cdef public EpContext ctx
    cdef public Delta delta
    cdef public bint unrestricted
    cdef public dict outbox
