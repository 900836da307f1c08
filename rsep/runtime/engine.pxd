# Cython declarations for engine.py's compiled build (python -m rsep.native build): the
# engine as a C class, so that its per-event loop reads its own fields as C fields. It keeps
# a __dict__ (callers may hang their own state on an engine). engine.py stays plain Python;
# RSEP_PURE=1 runs it as such.
cdef class Engine:
    cdef dict __dict__
    cdef public object time_unit_ms, limits, watchdog, background, kind, now, start
    cdef public Py_ssize_t events
    cdef public object _out
    cdef dict _shared
    cdef public bint allow_dereference
    cdef public dict graphs
    cdef public list queries
    cdef public set _deferring
