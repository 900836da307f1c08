# Cython declarations for matcher.py's compiled build (python -m rsep.native build): an
# event's index and the canonical-term cache as C classes, typed loops in the BGP matcher.
# matcher.py stays plain Python; RSEP_PURE=1 runs it as such.
cimport cython

cdef class Canon:
    cdef public dict _cache
    cdef public object _store, _g, _s
    cpdef object term(self, object t)
    cdef object _canonical(self, object t)
    @cython.locals(cache=dict, out=list, by_pred=dict, tr=tuple)
    cpdef Indexed indexed(self, object triples, object preds=*)

cdef class Indexed:
    cdef public object triples, by_term
    cdef public dict by_pred, shapes
    @cython.locals(idx=dict)
    cpdef dict index(self, object p, Py_ssize_t pos, list cands)

cdef class CompiledGPM:
    cdef public object triples, local_filters, stateful, shape, names, perm, sorted_names
    cdef public object bound, _project, _build, shape_id, row_key, _fkey, plan
    cdef public dict verdicts
    @cython.locals(sols=list)
    cdef list _solutions(self, Indexed ev)
    @cython.locals(memo=dict, out=list, mu=dict)
    cdef list _passing(self, list sols)
    cpdef list values(self, Indexed ev)

cpdef list _match_shape(tuple shape, Indexed ev)
@cython.locals(sols=list, nxt=list, by_pred=dict, mu=list, new=list, cands=list, tr=tuple)
cpdef list _match_plan(tuple plan, Indexed ev)
