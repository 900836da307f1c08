# Cython declarations for plan.py's compiled build (python -m rsep.native build): the kept
# solutions' buckets and a compiled plan's steps as C classes, and the plan's loop typed.
# plan.py stays plain Python; RSEP_PURE=1 runs it as such.
cimport cython
from rsep.epsparql.matcher cimport OnePattern, Solution, combine

cdef class Keyed:
    cdef public tuple key
    cdef public dict buckets, ends
    cdef public Py_ssize_t n, kept
    cpdef tuple of(self, Solution s)
    @cython.locals(s=Solution, b=list)
    cpdef add(self, object sols)
    cpdef list get(self, tuple k, object lo=*)
    @cython.locals(b=list, e=list, i=Py_ssize_t, j=Py_ssize_t, s=Solution)
    cpdef list before(self, tuple k, object t, object lo=*)

cdef class Step:
    cdef public int kind
    cdef public object node, cond, fn, fn_for, keep, left
    cdef public Py_ssize_t a, b
    cdef public unsigned long long mask
    cdef public OnePattern one
    cdef public Keyed old, store
    cdef public bint chk, same

@cython.locals(vals=list, out=list, st=Step, kind=int, db=list, got=list, oa=Keyed, chk=bint,
               x=Solution, y=Solution, one=OnePattern)
cpdef list run(list plan, list fresh, unsigned long long hit, object tau, dict hs, object ex)
