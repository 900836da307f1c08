# Cython declarations for nfa.py's compiled build (python -m rsep.native build): the engine's
# fields as C fields and C calls between its per-instant steps. nfa.py stays plain Python;
# RSEP_PURE=1 runs it as such.
cimport cython
from rsep.spaseq.runs cimport Arrival, Run

cdef class NFAEngine:
    cdef public object nfa, gpm, t0, window, options, trace, prev, stats, pvar, _emit, _future
    cdef public dict runs, index, by_window, classes, _per_leaf, ranges, D, _by_stream, _conj
    cdef public dict _range, _touch_info, _start_streams
    cdef public object _quiet
    cdef public set strict
    cdef public list _starts, _ikey_info, _plain
    cdef public Py_ssize_t instants, _next_id

    cdef Py_ssize_t _new_id(self)
    @cython.locals(per_leaf=dict, index=dict, got=set)
    cdef _add(self, Run r)
    @cython.locals(got=set)
    cdef object _remove(self, object rid)
    @cython.locals(quiet=dict)
    cdef bint _idle(self, dict evs)
    @cython.locals(touched=set, index=dict, ranges=dict, per_leaf=dict, lazy=bint, keyed=bint)
    cdef set _touched(self, dict evs)
    @cython.locals(matches=list, born=list, dying=dict, tracing=bint, touched=set, keep=bint,
                   killed=bint, took=bint, live=Py_ssize_t, successors=list, r=Run, heir=Run,
                   s=Run)
    cdef list _process(self, object t, dict evs)
    cdef _expire(self, object t)
    @cython.locals(tracing=bint, successors=list, virtual=Run, s=Run)
    cdef _start(self, object t, dict evs, list born, list matches)
    @cython.locals(arr=Arrival, succ=Run)
    cdef tuple _step(self, Run r, object t, dict evs, list matches)
    cdef list _leaf(self, object leaf, object x, object t, dict evs)
    @cython.locals(out=list, stay=Run, moving=Run)
    cdef tuple _kleene(self, Run r, object st, object t, dict evs, list matches)
    cdef Run _successor(self, Run r, object om, list steps, object t)
    @cython.locals(out=list, skip=Run)
    cdef list _enter(self, Run r, Py_ssize_t i, object override, list matches, tuple negs=*)
