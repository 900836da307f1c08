# Cython declarations for policy.py's compiled build (python -m rsep.native build): the
# policy state as a C class, so that noting an occurrence and evaluating an instant read
# its fields as C fields (issue 51). policy.py stays plain Python; RSEP_PURE=1 runs it as
# such.
cimport cython
from rsep.epsparql.matcher cimport Occurrence
from rsep.epsparql.seqindex cimport CandidateIndex

cdef class PolicyState:
    cdef public object root, policy, var, select
    cdef public CandidateIndex index
    cdef public set consumed, dirty
    cdef public list positions
    cdef public object fifo, heap, last_start
    cdef public dict item_parts
    cdef public bint full, consumed_since
    @cython.locals(held=tuple, index=CandidateIndex)
    cpdef note(self, Occurrence oc, object window)
    @cython.locals(out=list, got=list, index=CandidateIndex)
    cpdef list evaluate(self, object w, object tau, tuple window)
    cpdef consume(self, object items)
    cpdef object deadline(self, object after, tuple window)
    @cython.locals(heap=list)
    cpdef tuple _pop(self)
