# Cython declarations for chain.py's compiled build (python -m rsep.native build): C
# fields for runs, states and the engine, and C calls between the engine's own steps.
# chain.py stays plain Python; RSEP_PURE=1 runs it as such.
cimport cython

cdef class _Run:
    cdef public Py_ssize_t id
    cdef public list envs
    cdef public tuple steps
    cdef public object window

cdef class _State:
    cdef public Py_ssize_t index, slot
    cdef public object stream, gpm, key, rng, pidx, ridx
    cdef public bint strict, stateful, exact
    cdef public tuple shared, new

cdef class ChainEngine:
    cdef public object gpm, t0, window, options, pvar, _stats, _oldest, _mapping
    cdef public Py_ssize_t n, _slots, live, _next_id
    cdef public list _state, buckets

    @cython.locals(i=Py_ssize_t, st=_State)
    cdef list _process(self, object t, dict evs)
    cdef list _rows(self, _State st, list cache)
    @cython.locals(lo=Py_ssize_t, hi=Py_ssize_t, took=Py_ssize_t, n=Py_ssize_t, sure=bint,
                   last=bint, buckets=dict, plain=list, ranged=list, ys=list, bk=list)
    cdef _step(self, Py_ssize_t i, _State st, object t, list rows, list matches)
    @cython.locals(took=Py_ssize_t, j=Py_ssize_t, r=_Run, stay=list, stay_ys=list, envs=list)
    cdef tuple _meet(self, list runs, list ys, _State st, list group, bint test, object t,
                     bint last, list matches)
    cdef _took(self, _Run r, list envs, object t, _State st, bint last, list matches)
    cdef object _match(self, object t, list envs, tuple steps)
    @cython.locals(env=dict, d=dict, out=list, shared=tuple, new=tuple, vals=tuple)
    cdef list _extend(self, _State st, list envs, list rows, bint test=*)
    @cython.locals(st=_State, envs=list)
    cdef _start(self, object t, dict evs, list matches, list cache)
    @cython.locals(one=bint, envs=list, buckets=dict, b=list, ys=list, k=Py_ssize_t)
    cdef _add(self, Py_ssize_t i, _Run r)

cdef object _groups(list rows, object pidx, bint mixed)
cdef tuple _bounds(list ys, object op, object ev)
