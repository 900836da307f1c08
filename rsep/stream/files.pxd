# Cython declarations for files.py's compiled build (python -m rsep.native build): the
# scan of a chunk's braces as a C loop over its UTF-8 bytes. files.py stays plain Python;
# RSEP_PURE=1 runs it as such.
cimport cython

@cython.locals(data=bytes, ch=cython.uchar, prev=cython.uchar, c=cython.uchar,
               closes=Py_ssize_t, depth=bint, alternate=bint,
               above=bint, blank=bint, opens=list, mask=cython.ulonglong,
               i=Py_ssize_t, j=Py_ssize_t)
cpdef tuple _braces_scan(str chunk, Py_ssize_t line)
