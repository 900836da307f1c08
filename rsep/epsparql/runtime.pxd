# Cython declarations for runtime.py's compiled build (python -m rsep.native build): the
# context and the runtime as C classes, so that the engine's per-instant calls read their
# fields as C fields. Each keeps a __dict__: --stage-times wraps their methods per instance.
# runtime.py stays plain Python; RSEP_PURE=1 runs it as such.
cimport cython
from rsep.epsparql.delta cimport Delta
from rsep.epsparql.matcher cimport Occurrence, OccurrenceStore
from rsep.epsparql.policy cimport PolicyState
from rsep.epsparql.seqindex cimport CandidateIndex

cdef class EpSparqlRuntime

cdef class EpContext:
    cdef dict __dict__
    cdef public object engine, schema, background, world, last, _derived, _kept
    cdef public list runtimes, _rules, _queries, _noting
    cdef public dict pending
    cdef public bint prune, policies, _dl_valid
    cdef public object _dl
    cdef public Py_ssize_t _prune_at
    cdef public OccurrenceStore occ
    cpdef forget(self, object tau)
    @cython.locals(occ=OccurrenceStore, kept=list, oc=Occurrence)
    cpdef _prune_one(self, object lo, set consumed, CandidateIndex index)
    @cython.locals(rt=EpSparqlRuntime, ps=PolicyState)
    cpdef object deadline(self)
    cpdef insert(self, object e)
    cpdef bint _alone(self)
    @cython.locals(rt=EpSparqlRuntime, ps=PolicyState, oc=Occurrence, occ=OccurrenceStore,
                   noting=list, got=dict, sols=list, box=list)
    cpdef process(self, object tau)

cdef class EpSparqlRuntime:
    cdef dict __dict__
    cdef public object query, engine, name, callback, last_tick, kind, plan, leaf_horizon
    cdef public object window, _bn
    cdef public PolicyState policy_state
    cdef public set streams, _ticks, _emitted
    cdef public EpContext ctx
    cdef public Delta delta
    cdef public bint unrestricted
    cdef public dict outbox
    cpdef object deadline(self)
    cpdef list solutions(self, object tau)
    cpdef list outputs(self, object s, object tau, object triples=*)
    cpdef finish(self, object tau)
