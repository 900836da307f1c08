# Cython declarations for seqindex.py's compiled build (python -m rsep.native build): a
# part's state and the two indexes as C classes, so that the per-occurrence noting and the
# per-instant evaluation read their fields as C fields, not through the instance's
# __dict__ (the generic attribute lookup was ~11 k of the 66 k instructions an event of
# pattern (b) under chronological, issue 51). seqindex.py stays plain Python; RSEP_PURE=1
# runs it as such.
cimport cython
from rsep.epsparql.matcher cimport Occurrence, OnePattern, Solution, combine

@cython.final
cdef class _Part:
    cdef public list a, values
    cdef public Py_ssize_t ah, nb
    cdef public dict groups, gkey, partner, partners
    cdef public object bq, maxtw
    cdef public set other, pending
    cdef public tuple last

cdef class CandidateIndex:
    cpdef list note(self, Occurrence oc)
    cpdef list evaluate(self, object part, object ex, object lo=*, bint strict=*)
    cpdef consume(self, object items)
    cpdef bint needs(self, Occurrence oc)

cdef class SeqIndex(CandidateIndex):
    cdef public object shape, policy, sides, by_p
    cdef public bint chrono
    cdef public dict parts, by_item
    cdef public set slow
    cdef public Py_ssize_t seq, tested
    @cython.locals(p=_Part, keys=list, s=Solution, is_b=bint, side=OnePattern, e=tuple, g=list,
                   at=Py_ssize_t)
    cpdef list note(self, Occurrence oc)
    cpdef bint needs(self, Occurrence oc)
    cpdef _index_group(self, _Part p, Solution s)
    cpdef _drop_group(self, _Part p, object mu)
    @cython.locals(p=_Part, g=list, i=Py_ssize_t, e=tuple)
    cpdef consume(self, object items)
    @cython.locals(bq=object, e=tuple, g=list)
    cpdef _drop_dead(self, _Part p)
    @cython.locals(held=list)
    cpdef _forget_entry(self, tuple e)
    @cython.locals(a=list, ah=Py_ssize_t)
    cpdef _expire(self, _Part p, object lo, bint strict)
    @cython.locals(p=_Part, pairs=list, combos=list)
    cpdef list evaluate(self, object part, object ex, object lo=*, bint strict=*)
    @cython.locals(a0=list, sel=tuple, out=list, g=list)
    cpdef list _chronological(self, _Part p)
    @cython.locals(out=list, g=list, b=tuple, j=Py_ssize_t, a1=list, sel=tuple)
    cpdef list _recent(self, _Part p)

cdef class ChainIndex(CandidateIndex):
    cdef public object chain, policy, var, sides, slow, by_p
    cdef public Py_ssize_t n, tested
    cdef public dict parts, by_item
    @cython.locals(keys=list, side=OnePattern, s=Solution, p=list, held=list, j=Py_ssize_t,
                   at=Py_ssize_t)
    cpdef list note(self, Occurrence oc)
    cpdef bint needs(self, Occurrence oc)
    @cython.locals(p=list, xs=list, i=Py_ssize_t)
    cpdef _remove(self, object items)
    cpdef consume(self, object items)
    @cython.locals(p=list, sols=list)
    cpdef list evaluate(self, object part, object ex, object lo=*, bint strict=*)
    @cython.locals(got=list, out=list, lefts=list, r=Solution, ls=list, x=Solution)
    cpdef list _seq(self, list p, Py_ssize_t j, object hi, dict memo)
