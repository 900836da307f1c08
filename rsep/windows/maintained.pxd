# Cython declarations for maintained.py's compiled build (python -m rsep.native build): the
# factorised form's sides and the maintained window as C classes, so that an event's
# solutions reach their side's join and groups by C calls. maintained.py stays plain
# Python; RSEP_PURE=1 runs it as such.
cimport cython
from rsep.windows.groups cimport Group, Grouping, _State
from rsep.windows.incremental cimport LocalWindow
from rsep.windows.joins cimport Join
from rsep.sparql.matcher cimport Canon, Indexed

cdef class _Side:
    cdef public dict local, pending
    cdef public Join join
    cdef public Py_ssize_t windows
    cdef public bint background
    cdef public Filters filters
    cdef public Grouping grouping
    cpdef joined(self, tuple sid, dict m)

cdef class Factorised:
    cdef dict __dict__
    cdef public tuple keys
    cdef public list aggregates, sides, reads
    cdef public dict of, _values
    @cython.locals(side=_Side, sid=tuple, m=dict)
    cpdef add(self, Py_ssize_t r, tuple c, dict mu)
    @cython.locals(side=_Side, sid=tuple)
    cpdef remove(self, Py_ssize_t r, tuple c)
    @cython.locals(first=dict, rest=list, out=list, gs=list, other=dict, g=Group, h=Group)
    cpdef list groups(self)
    @cython.locals(side=_Side, sid=tuple, w=Py_ssize_t, win=list, bg=list)
    cpdef tuple _arrival(self, list ids)
    @cython.locals(vals=list, g=Group, st=_State, k=Py_ssize_t, j=Py_ssize_t,
                   count=bint)
    cpdef object _values_of(self, list gs)

cdef class MaintainedWindow(LocalWindow):
    cdef public object result, _moves
    cdef public Py_ssize_t w
    cdef public bint loaded
    cpdef object _solved(self, object triples)
    cpdef _enter(self, Py_ssize_t seq, object triples)
    cpdef _leave(self, Py_ssize_t seq)

cdef class Filters:
    cdef public list texts, fns
    cdef public bint opaque
    cdef public tuple vars
    cdef public object _key
    cdef public dict memo
    @cython.locals(key=tuple, undecided=bint)
    cpdef object verdict(self, dict mu)
    cpdef _remember(self, tuple key, bint ok)

cdef class _Solver:
    cdef public Py_ssize_t r
    cdef public object plan, _build
    cdef public Filters filters
    cdef public tuple vars
    @cython.locals(sols=list, out=list, mu=dict)
    cpdef list solutions(self, Indexed ev)

@cython.locals(s=_Solver, ev=Indexed, out=list, i=Py_ssize_t, mu=dict)
cpdef list _solve(list solvers, Canon canon, list rows)
