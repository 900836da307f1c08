# Cython declarations for aggregates.py's compiled build (python -m rsep.native build): the
# order traits of a MIN / MAX state as a C class, so that a maintained group's value going
# in and out counts them by a C call (rsep.windows.groups). aggregates.py stays plain
# Python; RSEP_PURE=1 runs it as such.
cimport cython

cdef class Traits:
    cdef public Py_ssize_t n, bad, num, str, dbl, flt, not_f64, not_f32
    @cython.locals(k=Py_ssize_t)
    cpdef add(self, tuple v, Py_ssize_t sign=*)
    cpdef bint ordered(self)
