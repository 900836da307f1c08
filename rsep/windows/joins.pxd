# Cython declarations for joins.py's compiled build (python -m rsep.native build): relations
# and the join as C classes, so that a window solution's way in and out reads C fields and
# makes C calls. joins.py stays plain Python; RSEP_PURE=1 runs it as such.
cimport cython

cdef class Relation:
    cdef public tuple vars
    cdef public bint window
    cdef public dict live, indexes, getters
    cpdef dict index(self, tuple keys)
    @cython.locals(getters=dict, idx=dict, bucket=dict)
    cpdef add(self, object c, dict mu)
    @cython.locals(getters=dict, idx=dict, bucket=dict)
    cpdef remove(self, object c)

cdef class Join:
    cdef dict __dict__
    cdef public list relations, plans, _steps
    cdef public Py_ssize_t windows
    cdef public dict solutions, _by_comp
    cdef public bint single
    @cython.locals(rels=list, rel=Relation, idx=dict, nxt=list, partial=list, bucket=dict,
                   m=dict, merged=dict, wc=list, bc=list)
    cpdef list extend(self, Py_ssize_t r, object c, dict mu)
    @cython.locals(got=list, by_comp=dict, sols=dict, d=dict, jid=tuple)
    cpdef list add(self, Py_ssize_t r, object c, dict mu)
    @cython.locals(jids=dict, by_comp=dict, sols=dict, d=dict, jid=tuple)
    cpdef list remove(self, Py_ssize_t r, object c)
