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

cdef class OnePattern:
    cdef public list consts, eqs, outs
    @cython.locals(out=list, t=tuple, ok=bint, i=Py_ssize_t, j=Py_ssize_t)
    cpdef list match(self, list occs)
