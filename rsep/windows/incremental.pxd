# Cython declarations for incremental.py's compiled build (python -m rsep.native build): the
# event-local window as a C class, so that each event's entry (the locality check's terms,
# its matching triples) and its way in and out read C fields and make C calls. It keeps a
# __dict__. incremental.py stays plain Python; RSEP_PURE=1 runs it as such.
cimport cython

cpdef str _key(object x)

cdef class LocalWindow:
    cdef dict __dict__
    cdef public list blocks, queries, _entered, _any_pred, _full_mask, _removed
    cdef public dict _by_pred, live, _counts, _early, _born, _created
    cdef public Py_ssize_t conflicts, batches, _clock, _born_cap, _top, epoch
    cdef public bint full, reorder
    cdef public object _canon, _compiled
    cpdef change(self, object changes)
    @cython.locals(matching=list, rows=list, terms=set, hit=list, by_pred=dict, any_pred=list,
                   matched=bint, bi=Py_ssize_t, tracked=tuple, pos=Py_ssize_t)
    cpdef tuple _entry(self, object triples, bint keep_rows=*)
    cpdef _enter(self, Py_ssize_t seq, object triples)
    cpdef _leave(self, Py_ssize_t seq)
    @cython.locals(counts=dict, c=Py_ssize_t)
    cpdef _count_in(self, object entry)
    @cython.locals(counts=dict, c=Py_ssize_t)
    cpdef _count_out(self, object entry)
