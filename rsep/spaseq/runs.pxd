# Cython declarations for runs.py's compiled build (python -m rsep.native build): runs and
# their arrivals as C classes, so that making one is a C allocation and reading a field a
# C access from nfa.pxd's typed code. runs.py stays plain Python; RSEP_PURE=1 runs it as such.
cimport cython

cdef class Arrival:
    cdef public object time  # (an abstract time may exceed 64 bits)
    cdef public Run parent
    cdef public tuple steps

cdef class Run:
    cdef public Py_ssize_t id, state, iterations
    cdef public object omega, last, window, op, ckey
    cdef public list arrivals
    cdef public bint standalone
    cdef public tuple negs, keys
