# Cython declarations for gpm.py's compiled build (python -m rsep.native build): the
# evaluator's fields as C fields and C calls between its own steps. gpm.py stays plain
# Python; RSEP_PURE=1 runs it as such.
cimport cython

cdef class GPMEvaluator:
    cdef dict __dict__  # rsep run --stage-times wraps its methods per instance
    cdef public list gpms
    cdef public object store, canon, _preds, _pvar, _owns
    cdef public dict kb, _query, _kb_of, compiled, _pending, _canon, _events, _local, _holds, _pat
    cdef public bint shared
    cdef public Py_ssize_t _n, evaluations, compiled_evaluations, filter_queries, fallbacks

    cdef object _indexed(self, object stream)
    cdef object _evaluate(self, object gpm, object stream)
