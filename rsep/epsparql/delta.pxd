# Cython declarations for delta.py's compiled build (python -m rsep.native build): the
# evaluator as a C class, its instant's entry points typed (the stores and the plan's steps
# are plan.pxd's). delta.py stays plain Python; RSEP_PURE=1 runs it as such.
cimport cython
from rsep.epsparql.matcher cimport OccurrenceStore, OnePattern, Solution, combine
from rsep.epsparql.plan cimport Keyed, Step, run

cdef class Delta:
    cdef public object root, w, hs, tau, _at, _plan, _pruned, _kept, _lazy, _bits
    cdef public dict _memo, done, _bg, _compat, _statics, _kind, _one, _leaves, _by_pred, _pmask
    cdef public list _any_pred, _vals
    cdef public set _hit
    cdef public object _anymask
    @cython.locals(occ=OccurrenceStore, pmask=dict)
    cpdef list at(self, object tau)
    @cython.locals(vals=list, store=Keyed)
    cpdef commit(self, object tau)
