# Cython declarations for groups.py's compiled build (python -m rsep.native build): groups,
# the aggregates' states and the grouping as C classes, so that each solution's way in and
# out (a group, its states) reads C fields and makes C calls. groups.py stays plain Python;
# RSEP_PURE=1 runs it as such.
cimport cython
from rsep.sparql.aggregates cimport Traits

cdef class Group:
    cdef public tuple key
    cdef public dict sols
    cdef public object order, last, values
    cdef public bint unsorted, dirty
    cdef public list states
    cpdef sort(self)
    cpdef object first(self)
    cpdef list args(self, Py_ssize_t i)

cdef class _State:
    cpdef add(self, object v, object jid, Py_ssize_t sign)
    cpdef object value(self, Group g, Py_ssize_t i)

cdef class _Count(_State):
    cdef public Py_ssize_t err
    cpdef add(self, object v, object jid, Py_ssize_t sign)
    cpdef object value(self, Group g, Py_ssize_t i)

cdef class _CountDistinct(_State):
    cdef public object seen
    cdef public Py_ssize_t err
    cpdef add(self, object v, object jid, Py_ssize_t sign)
    cpdef object value(self, Group g, Py_ssize_t i)

cdef class _Sum(_State):
    cdef public bint avg
    cdef public list kinds
    cdef public object si, sd, ai, ad
    cdef public Py_ssize_t err
    cpdef add(self, object v, object jid, Py_ssize_t sign)
    cpdef object value(self, Group g, Py_ssize_t i)

cdef class _Extreme(_State):
    cdef public bint largest
    cdef public list heap
    cdef public Traits traits
    cdef public Py_ssize_t err, pushed
    @cython.locals(info=list, k=Py_ssize_t)
    cpdef add(self, object v, object jid, Py_ssize_t sign)
    @cython.locals(heap=list, sols=dict, a=tuple)
    cpdef object value(self, Group g, Py_ssize_t i)

cdef class _Fold(_State):
    cdef public object agg
    cpdef add(self, object v, object jid, Py_ssize_t sign)
    cpdef object value(self, Group g, Py_ssize_t i)

cdef class Grouping:
    cdef dict __dict__
    cdef public tuple keys
    cdef public list aggregates
    cdef public bint implicit
    cdef public dict groups, _where
    cdef public object _key, _args
    cpdef Group _group(self, tuple key)
    @cython.locals(g=Group, st=_State, args=tuple, i=Py_ssize_t, n=Py_ssize_t, states=list)
    cpdef add(self, object jid, dict mu)
    @cython.locals(g=Group, st=_State, args=tuple, i=Py_ssize_t, n=Py_ssize_t, states=list)
    cpdef remove(self, object jid)
