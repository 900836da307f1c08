# Cython declarations for matcher.py's compiled build (python -m rsep.native build): a
# solution and a one-pattern BGP as C classes, so that making a solution is a C allocation
# and reading its fields a C access from delta.pxd's typed code. matcher.py stays plain
# Python; RSEP_PURE=1 runs it as such.
cimport cython

@cython.final
@cython.no_gc  # (its fields hold strings, numbers and tuples / frozensets of them: no cycle)
cdef class Solution:
    cdef public object mu, ta, tw, just

cpdef Solution combine(Solution a, Solution b)

@cython.final
@cython.no_gc  # (strings and numbers)
cdef class Occurrence:
    cdef public object s, p, o, ta, tw, item, seq

cdef class OccurrenceStore:
    cdef public list all, fresh
    cdef public dict by_p, by_po, by_ps
    cdef public set keys
    cdef public bint indexed
    cdef public Py_ssize_t version
    cdef public object fresh_tau
    @cython.locals(key=tuple)
    cpdef bint add(self, Occurrence oc)
    cpdef _index(self, Occurrence oc)
    @cython.locals(old=list, oc=Occurrence)
    cpdef prune_before(self, object lo)
    @cython.locals(oc=Occurrence)
    cpdef prune_kept(self, list kept)

cdef class OnePattern:
    cdef public list consts, eqs, outs
    @cython.locals(out=list, t=tuple, ok=bint, i=Py_ssize_t, j=Py_ssize_t, oc=Occurrence)
    cpdef list match(self, list occs)
