//! The Python module `rsep._core`.

use crate::dictionary::{TermId, Terms as CoreTerms};
use crate::reader::{parse as core_parse, Format};
use crate::select::{Done, R2s, Refused, Slot, Spec};
use crate::source::{Merged, Options, Source, Streams as _};
use crate::stream::{read_events_as, stable_literal, Events};
use oxrdf::Term;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::str::FromStr;

/// A syntax error as Python sees it: (line, column, byte offset, message).
type Located = (u64, u64, u64, String);

/// A run's term dictionary: one integer id per distinct RDF term, numeric values decoded.
#[pyclass(module = "rsep._core", name = "Terms")]
struct Terms {
    inner: CoreTerms,
}

#[pymethods]
impl Terms {
    #[new]
    fn new() -> Self {
        Self {
            inner: CoreTerms::new(),
        }
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// The term of an id in N-Triples syntax (as `str()` of a pyoxigraph term), or None for
    /// the default graph's id 0 and ids never given.
    fn term(&self, id: TermId) -> Option<String> {
        self.inner.term(id).map(|t| t.to_string())
    }

    /// The terms of many ids (a buffer of native-endian uint32, e.g. a batch's ids), in order;
    /// None where an id names no term.
    fn terms(&self, ids: &[u8]) -> PyResult<Vec<Option<String>>> {
        if !ids.len().is_multiple_of(4) {
            return Err(PyValueError::new_err(
                "ids: a whole number of uint32 is needed",
            ));
        }
        Ok(ids
            .chunks_exact(4)
            .map(|c| self.term(TermId::from_ne_bytes([c[0], c[1], c[2], c[3]])))
            .collect())
    }

    /// The numeric value of an XSD numeric literal's id, None for every other id.
    fn number(&self, id: TermId) -> Option<f64> {
        self.inner.number(id)
    }

    /// The id of a term written in N-Triples syntax, if it was seen.
    fn id(&self, term: &str) -> PyResult<Option<TermId>> {
        let t = Term::from_str(term)
            .map_err(|e| PyValueError::new_err(format!("not an N-Triples term: {term}: {e}")))?;
        Ok(self.inner.get(&t))
    }
}

/// Parse `data` (UTF-8 RDF text in `format`: trig, turtle, nquads or ntriples) into ids of
/// `terms`. Returns the quads' ids (native-endian uint32, four a quad: subject, predicate,
/// object, graph, the default graph 0) as bytes, and the syntax errors as (line, column,
/// byte offset, message), 1-based lines and columns; the parse goes on after an error.
#[pyfunction]
#[pyo3(signature = (data, format, terms, base_iri=None, lenient=false))]
fn parse<'py>(
    py: Python<'py>,
    data: &[u8],
    format: &str,
    mut terms: PyRefMut<'_, Terms>,
    base_iri: Option<&str>,
    lenient: bool,
) -> PyResult<(Bound<'py, PyBytes>, Vec<Located>)> {
    let fmt = Format::from_name(format)
        .ok_or_else(|| PyValueError::new_err(format!("unknown RDF format {format:?}")))?;
    let dict = &mut terms.inner;
    // no Python object is touched while parsing: other threads run meanwhile
    let batch = py
        .detach(|| core_parse(data, fmt, dict, base_iri, lenient))
        .map_err(PyValueError::new_err)?;
    let mut bytes = Vec::with_capacity(batch.ids.len() * 4);
    for id in &batch.ids {
        bytes.extend_from_slice(&id.to_ne_bytes());
    }
    let errors = batch
        .errors
        .into_iter()
        .map(|e| (e.line, e.column, e.offset, e.message))
        .collect();
    Ok((PyBytes::new(py, &bytes), errors))
}

/// A stream file read into events of ids (rsep/windows/native.py's input).
#[pyclass(module = "rsep._core", name = "StreamEvents")]
struct StreamEvents {
    terms: CoreTerms,
    events: Events,
}

#[pymethods]
impl StreamEvents {
    fn __len__(&self) -> usize {
        self.events.len()
    }

    /// How many triples the events hold.
    fn triples(&self) -> usize {
        self.events.triples.len()
    }

    /// The literals of the events' triples whose form pyoxigraph's store may change (in
    /// N-Triples syntax, each once): the caller checks them.
    fn unsure(&self) -> Vec<String> {
        let mut seen = hashbrown::HashSet::new();
        let mut out = Vec::new();
        for t in &self.events.triples {
            if seen.insert(t[2]) {
                if let Some(term) = self.terms.term(t[2]) {
                    if !stable_literal(term) {
                        out.push(term.to_string());
                    }
                }
            }
        }
        out
    }

    /// The id of a term written in N-Triples syntax, if the stream has it.
    fn id(&self, term: &str) -> PyResult<Option<TermId>> {
        let t = Term::from_str(term)
            .map_err(|e| PyValueError::new_err(format!("not an N-Triples term: {term}: {e}")))?;
        Ok(self.terms.get(&t))
    }

    /// Everything read, for the tests that hold two readings equal: the times, each
    /// event's end in the triples, the triples' ids, and the dictionary's terms in id
    /// order from id 1 (N-Triples syntax).
    #[allow(clippy::type_complexity)]
    fn dump(&self) -> (Vec<i64>, Vec<u32>, Vec<[TermId; 3]>, Vec<String>) {
        let ev = &self.events;
        let terms = (1..=self.terms.len() as TermId)
            .map(|id| {
                self.terms
                    .term(id)
                    .map(|t| t.to_string())
                    .unwrap_or_default()
            })
            .collect();
        (
            ev.times.clone(),
            ev.offsets.clone(),
            ev.triples.clone(),
            terms,
        )
    }

    /// Objects read back in another form by pyoxigraph's store, each pair (the literal as
    /// written, as the store gives it back) in N-Triples syntax: every triple's object
    /// replaced by its stored form (what today's path matches and writes).
    fn restore(&mut self, pairs: Vec<(String, String)>) -> PyResult<()> {
        restored(&mut self.terms, &pairs, &mut self.events.triples)
    }
}

/// Every object among `triples` that is one of the pairs' literals as written replaced by
/// the pair's other, its stored form (StreamEvents.restore's).
fn restored<'a>(
    terms: &mut CoreTerms,
    pairs: &[(String, String)],
    triples: impl IntoIterator<Item = &'a mut [TermId; 3]>,
) -> PyResult<()> {
    let parse = |s: &str| {
        Term::from_str(s)
            .map_err(|e| PyValueError::new_err(format!("not an N-Triples term: {s}: {e}")))
    };
    let mut map = hashbrown::HashMap::new();
    for (from, to) in pairs {
        let (a, b) = (parse(from)?, parse(to)?);
        if let Some(a) = terms.get(&a) {
            map.insert(a, terms.intern(b));
        }
    }
    if !map.is_empty() {
        for t in triples {
            if let Some(&to) = map.get(&t[2]) {
                t[2] = to;
            }
        }
    }
    Ok(())
}

/// Read the stream file at `path` into events, or say why the native reader does not take
/// it: (events or None, the reason or ""). `fast`: rsep's own TriG reader tried first (the
/// same events; off, oxttl reads the whole file, for the tests and benchmarks).
#[pyfunction]
#[pyo3(signature = (path, points, max_record, fast=true, format="trig"))]
fn read_stream(
    py: Python<'_>,
    path: &str,
    points: Vec<String>,
    max_record: usize,
    fast: bool,
    format: &str,
) -> PyResult<(Option<StreamEvents>, String)> {
    let format = crate::nquads::from_name(format).map_err(PyValueError::new_err)?;
    let data = std::fs::read(path).map_err(|e| PyValueError::new_err(format!("{path}: {e}")))?;
    let got = py.detach(|| {
        let mut terms = CoreTerms::new();
        read_events_as(&data, format, &mut terms, &points, max_record, fast)
            .map(|events| StreamEvents { terms, events })
    });
    Ok(match got {
        Ok(ev) => (Some(ev), String::new()),
        Err(why) => (None, why),
    })
}

/// A pattern position as Python gives it: ("var", n) or ("id", id or None).
type PySlot = (String, Option<usize>);

/// A windowed SELECT of one triple pattern as Python gives it ([`select_stream`]).
#[allow(clippy::too_many_arguments)]
fn select_spec(
    window: (i64, i64, i64, i64, bool),
    non_empty: bool,
    r2s: &str,
    pattern: [PySlot; 3],
    loose: [(bool, Option<TermId>); 3],
    project: Vec<(String, Option<usize>)>,
    limits: (u64, u64),
    format: &str,
) -> PyResult<Spec> {
    let slot = |(kind, n): &PySlot| -> PyResult<Slot> {
        match kind.as_str() {
            "var" => match n {
                Some(v) if *v < 3 => Ok(Slot::Var(*v)),
                _ => Err(PyValueError::new_err("a variable's number: 0, 1 or 2")),
            },
            "id" => Ok(Slot::Const(n.map(|i| i as TermId))),
            _ => Err(PyValueError::new_err(format!("a slot {kind:?}"))),
        }
    };
    let (range, step, offset, origin, right_closed) = window;
    Ok(Spec {
        range,
        step,
        offset,
        origin,
        right_closed,
        non_empty,
        r2s: r2s_of(r2s)?,
        pattern: [slot(&pattern[0])?, slot(&pattern[1])?, slot(&pattern[2])?],
        loose: loose.map(|(any, id)| if any { None } else { Some(id) }),
        project,
        max_window_triples: limits.0,
        max_results: limits.1,
        tsv: match format {
            "jsonl" => false,
            "tsv" => true,
            _ => return Err(PyValueError::new_err(format!("a format {format:?}"))),
        },
    })
}

/// A stream file to be read in parts as an operator asks for its events (native/src/
/// source.rs), its dictionary swept as it goes.
#[pyclass(module = "rsep._core", name = "Stream")]
struct Stream {
    inner: Source,
    /// the bytes of the output written through ([`run_stream`]'s `fd:N`), of the last run
    sent: u64,
}

#[pymethods]
impl Stream {
    /// The events read so far (all of them after a run).
    fn __len__(&self) -> usize {
        self.inner.events()
    }

    /// How many triples those events hold.
    fn triples(&self) -> u64 {
        self.inner.triples()
    }

    /// The id of a term written in N-Triples syntax (a query's constant): given one now if
    /// the stream has not had it yet, and never swept.
    fn id(&mut self, term: &str) -> PyResult<TermId> {
        let t = Term::from_str(term)
            .map_err(|e| PyValueError::new_err(format!("not an N-Triples term: {term}: {e}")))?;
        Ok(self.inner.pin(t.as_ref()))
    }

    /// `forms(literals)`: given literals (N-Triples syntax) whose form pyoxigraph's store
    /// may change, the pairs (as written, as stored) of those it changes; called as they
    /// come. `refuse`: a literal whose form changes refuses the run (else it is replaced).
    fn set_forms(&mut self, forms: Py<PyAny>, refuse: bool) {
        self.inner.set_forms(
            Box::new(move |literals| {
                Python::attach(|py| {
                    forms
                        .call1(py, (literals,))
                        .and_then(|r| r.extract::<Vec<(String, String)>>(py))
                        .map_err(|e| e.to_string())
                })
            }),
            refuse,
        );
    }

    /// (sweeps of the dictionary, the most terms it held at once, seconds reading).
    fn stats(&self) -> (u64, usize, f64) {
        self.inner.stats()
    }

    /// Standard input's: a file descriptor (the caller's to close) of a file holding the
    /// bytes read of it so far, from its start (the rest is still to be read from standard
    /// input); None for a file.
    fn spool(&self) -> Option<i32> {
        use std::os::fd::IntoRawFd;
        self.inner.spool().map(IntoRawFd::into_raw_fd)
    }

    /// The bytes of the last run's output that went out through `fd:N` before it ended (all
    /// of them, or, after a refusal, those of the events read before the last wait for
    /// input: what today's path, reading the stream again, writes first).
    fn sent(&self) -> u64 {
        self.sent
    }
}

/// The stream file at `path`, to be read in parts (nothing read yet); `-`: standard input
/// (not a regular file: what is read of it is spooled to a file of the temporary directory,
/// unlinked at once, [`Stream::spool`]). `chunk`: the bytes read at once (then to the
/// line's end); `sweep`: the dictionary's size below which it is not swept (0: after every
/// chunk); `fast`: rsep's own TriG reader tried first.
#[pyfunction]
#[pyo3(signature = (path, points, max_record, chunk=crate::stream::CHUNK, sweep=1 << 16, fast=true, format="trig"))]
#[allow(clippy::too_many_arguments)]
fn open_stream(
    path: &str,
    points: Vec<String>,
    max_record: usize,
    chunk: usize,
    sweep: usize,
    fast: bool,
    format: &str,
) -> PyResult<Stream> {
    let opts = Options {
        chunk: chunk.max(1),
        sweep,
        fast,
        format: crate::nquads::from_name(format).map_err(PyValueError::new_err)?,
    };
    let got = if path == "-" {
        let dir = std::env::temp_dir();
        Source::open_stdin(&dir.to_string_lossy(), points, max_record, opts)
    } else {
        Source::open(path, points, max_record, opts)
    };
    got.map(|inner| Stream { inner, sent: 0 })
        .map_err(PyValueError::new_err)
}

/// Run a windowed SELECT of one triple pattern over a [`Stream`], read as the operator goes,
/// writing JSON lines to `out_path`. `loose`: the pattern as rsep's locality check reads it,
/// per position (true, _) for anything or (false, the constant's id, None when the stream
/// has no such term). Returns (the refusal's reason or "", evaluations, rows written); on a
/// refusal, what was written is to be thrown away.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn select_stream(
    py: Python<'_>,
    mut src: PyRefMut<'_, Stream>,
    window: (i64, i64, i64, i64, bool),
    non_empty: bool,
    r2s: &str,
    pattern: [PySlot; 3],
    loose: [(bool, Option<TermId>); 3],
    project: Vec<(String, Option<usize>)>,
    limits: (u64, u64),
    format: &str,
    out_path: &str,
) -> PyResult<(String, u64, u64)> {
    let spec = select_spec(
        window, non_empty, r2s, pattern, loose, project, limits, format,
    )?;
    run_stream(py, out_path, &mut src, |src, out| {
        crate::select::run_on(&spec, src, out)
    })
}

/// Run an operator over a [`Stream`] with the GIL released (taken again only to ask for
/// literals' stored forms), writing to `out_path` through one buffer: (its refusal or "",
/// evaluations, rows written). `out_path` `fd:N`: written through to the caller's file
/// descriptor N as the stream is read ([`Through`]).
fn run_stream(
    py: Python<'_>,
    out_path: &str,
    stream: &mut Stream,
    run: impl Fn(&mut Source, &mut Out) -> std::io::Result<Result<Done, Refused>> + Send + Sync,
) -> PyResult<(String, u64, u64)> {
    let src = &mut stream.inner;
    let through = match out_path.strip_prefix("fd:") {
        Some(fd) => Some(
            Through::open(fd)
                .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("{out_path}: {e}")))?,
        ),
        None => None,
    };
    let got = py.detach(|| {
        let got = (|| loop {
            let mut out = match &through {
                Some(t) => {
                    let waits = t.clone();
                    src.set_wait(Some(Box::new(move || waits.send())));
                    Out::Through(t.clone())
                }
                None => Out::File(std::io::BufWriter::with_capacity(
                    1 << 20,
                    std::fs::File::create(out_path)?,
                )),
            };
            let r = crate::select::unpanicked(|| run(src, &mut out))?;
            if r.is_err() && src.slower().is_some() {
                // rsep's own reader gave the file up: oxttl reads it from the start, the
                // operator runs again and what it wrote is written again (what went out
                // through a pipe's output is not written twice: the same events give the
                // same bytes first)
                src.restart().map_err(std::io::Error::other)?;
                if let Some(t) = &through {
                    t.again();
                }
                continue;
            }
            if r.is_ok() {
                std::io::Write::flush(&mut out)?;
            }
            break Ok::<_, std::io::Error>(r);
        })();
        // (on every way out: the wait holds a clone of the output)
        src.set_wait(None);
        got
    });
    stream.sent = through.as_ref().map_or(0, Through::sent);
    match got {
        Ok(Ok(done)) => Ok((String::new(), done.evaluations, done.rows)),
        Ok(Err(refused)) => Ok((refused.0, 0, 0)),
        Err(e) => Err(pyo3::exceptions::PyOSError::new_err(format!(
            "{out_path}: {e}"
        ))),
    }
}

/// Where an operator's rows go: a file written whole (renamed onto the output by the
/// caller), or [`Through`].
enum Out {
    File(std::io::BufWriter<std::fs::File>),
    Through(Through),
}

impl std::io::Write for Out {
    #[inline]
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Out::File(f) => f.write(b),
            Out::Through(t) => {
                t.0.borrow_mut().buf.extend_from_slice(b);
                Ok(b.len())
            }
        }
    }

    #[inline]
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Out::File(f) => f.write_all(b),
            Out::Through(t) => {
                t.0.borrow_mut().buf.extend_from_slice(b);
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Out::File(f) => f.flush(),
            Out::Through(t) => t.send(),
        }
    }
}

/// An output written through as the stream is read: an endless stream's rows go out as they
/// come (a pipe on standard input), a long file's as it is read, and an interrupted run keeps
/// them. The rows are held until the reading next reads on ([`Source::set_wait`]): by then
/// every row of the events given so far is written, and none of them depends on what comes
/// later, so what went out is what today's path writes first over the same stream. After a
/// late refusal (a syntax error, a literal the native path does not take) today's path reads
/// the stream again (a pipe's from its spool) and skips [`Stream::sent`] bytes of its
/// output; the rows held since the last read are dropped.
#[derive(Clone)]
struct Through(std::rc::Rc<std::cell::RefCell<Sent>>);

struct Sent {
    file: std::fs::File,
    buf: Vec<u8>,
    /// bytes sent (those of a run before a restart included); `skip`: bytes the current
    /// run writes again, not to be sent twice
    sent: u64,
    skip: u64,
}

// SAFETY: a Through is made, shared (the operator's output, the source's wait) and dropped
// within one run_stream call, on the one thread that runs the operator; no clone outlives
// it or crosses to another thread (the wait is taken off the source before it returns).
unsafe impl Send for Through {}
unsafe impl Sync for Through {}

impl Through {
    fn open(fd: &str) -> std::io::Result<Self> {
        use std::os::fd::{BorrowedFd, RawFd};
        let fd: RawFd = fd
            .parse()
            .map_err(|_| std::io::Error::other("not a file descriptor"))?;
        if fd < 0 {
            return Err(std::io::Error::other("not a file descriptor"));
        }
        // SAFETY: the caller keeps descriptor `fd` open for the call; it is duplicated here
        let file = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?;
        Ok(Self(std::rc::Rc::new(std::cell::RefCell::new(Sent {
            file: file.into(),
            buf: Vec::new(),
            sent: 0,
            skip: 0,
        }))))
    }

    /// What was held goes out (but for what an earlier run already sent).
    fn send(&self) -> std::io::Result<()> {
        use std::io::Write;
        let mut s = self.0.borrow_mut();
        let s = &mut *s;
        let dup = usize::try_from(s.skip)
            .unwrap_or(usize::MAX)
            .min(s.buf.len());
        s.file.write_all(&s.buf[dup..])?;
        s.file.flush()?;
        s.skip -= dup as u64;
        s.sent += (s.buf.len() - dup) as u64;
        s.buf.clear();
        Ok(())
    }

    /// The operator runs again from the stream's start: what it held is dropped, and what
    /// was sent is not sent again.
    fn again(&self) {
        let mut s = self.0.borrow_mut();
        s.buf.clear();
        s.skip = s.sent;
    }

    fn sent(&self) -> u64 {
        self.0.borrow().sent
    }
}

/// A pattern as the locality check reads it: per position (true, _) anything or (false, the
/// IRI's id), and the positions it counts (none: the whole triple).
type PyCheck = ([(bool, Option<TermId>); 3], Vec<usize>);
/// A FILTER: (variable, operator, exact value's lexical form or None, double or None).
type PyCond = (usize, String, Option<String>, Option<f64>);
/// GROUP BY: (keys, aggregates as (COUNT | MIN | MAX | SUM | AVG | SAMPLE | GROUP_CONCAT,
/// variable or None, DISTINCT, GROUP_CONCAT's separator, of STR(variable)), implicit).
type PyGroup = (
    Vec<usize>,
    Vec<(String, Option<usize>, bool, String, bool)>,
    bool,
);

/// A query's FILTERs, grouping and output columns as Python gives them (bgp_stream's and
/// join_window's), checked against its `vars` variables.
#[allow(clippy::type_complexity)]
fn bgp_parts(
    vars: usize,
    filters: Vec<PyCond>,
    group: Option<PyGroup>,
    project: Vec<(String, String, Option<usize>)>,
) -> PyResult<(
    Vec<crate::bgp::Cond>,
    Option<crate::bgp::Grouping>,
    Vec<(String, crate::bgp::Col)>,
)> {
    use crate::bgp::{Agg, AggKind, Col, Cond, Constant, Grouping, Op};
    let bad = |what: String| PyValueError::new_err(what);
    let mut conds = Vec::new();
    for (var, op, exact, double) in filters {
        let exact = match exact {
            Some(lex) => Some(
                oxsdatatypes::Decimal::from_str(&lex)
                    .map_err(|e| bad(format!("a decimal {lex:?}: {e}")))?,
            ),
            None => None,
        };
        if var >= vars {
            return Err(bad(format!("a FILTER's variable {var}")));
        }
        conds.push(Cond {
            var,
            op: Op::parse(&op).ok_or_else(|| bad(format!("an operator {op:?}")))?,
            constant: Constant { exact, double },
        });
    }
    let group = match group {
        None => None,
        Some((keys, aggs, implicit)) => {
            let mut out = Vec::new();
            for (name, var, distinct, separator, str_arg) in aggs {
                let kind = match (name.as_str(), distinct, str_arg) {
                    ("COUNT", false, false) => AggKind::Count,
                    ("COUNT", true, false) => AggKind::CountDistinct,
                    ("MIN", false, false) => AggKind::Min,
                    ("MAX", false, false) => AggKind::Max,
                    ("SUM", false, false) => AggKind::Sum,
                    ("AVG", false, false) => AggKind::Avg,
                    ("SAMPLE", false, false) => AggKind::Sample,
                    ("GROUP_CONCAT", false, false) => AggKind::GroupConcat,
                    ("GROUP_CONCAT", false, true) => AggKind::GroupConcatStr,
                    _ => {
                        return Err(bad(format!(
                            "an aggregate {name:?} (DISTINCT: {distinct}, of STR: {str_arg})"
                        )))
                    }
                };
                if var.is_some_and(|v| v >= vars) || var.is_none() && kind != AggKind::Count {
                    return Err(bad(format!("{name}'s variable")));
                }
                out.push(Agg {
                    kind,
                    var,
                    separator,
                });
            }
            if keys.iter().any(|&k| k >= vars) {
                return Err(bad("a GROUP BY variable".into()));
            }
            Some(Grouping {
                keys,
                aggs: out,
                implicit,
            })
        }
    };
    let naggs = group.as_ref().map_or(0, |g| g.aggs.len());
    let mut cols = Vec::new();
    for (name, kind, n) in project {
        cols.push((
            name,
            match (kind.as_str(), n) {
                ("var", n) if n.is_none_or(|v| v < vars) => Col::Var(n),
                ("agg", Some(a)) if a < naggs => Col::Agg(a),
                _ => return Err(bad(format!("a column ({kind:?}, {n:?})"))),
            },
        ));
    }
    Ok((conds, group, cols))
}

/// Run a windowed SELECT of a BGP (several patterns, FILTERs, GROUP BY) over a [`Stream`],
/// read as the operator goes (native/src/bgp.rs), writing to `out_path`: (the refusal's
/// reason or "", evaluations, rows written); on a refusal, what was written is to be thrown
/// away.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn bgp_stream(
    py: Python<'_>,
    mut src: PyRefMut<'_, Stream>,
    window: (i64, i64, i64, i64, bool),
    non_empty: bool,
    r2s: &str,
    patterns: Vec<[PySlot; 3]>,
    vars: usize,
    checks: Vec<PyCheck>,
    filters: Vec<PyCond>,
    group: Option<PyGroup>,
    project: Vec<(String, String, Option<usize>)>,
    limits: (u64, u64),
    format: &str,
    out_path: &str,
) -> PyResult<(String, u64, u64)> {
    let spec = bgp_spec(
        window, non_empty, r2s, patterns, vars, checks, filters, group, project, limits, format,
    )?;
    run_stream(py, out_path, &mut src, |src, out| {
        crate::bgp::run_on(&spec, src, out)
    })
}

/// A windowed SELECT of a BGP as Python gives it ([`bgp_stream`]).
#[allow(clippy::too_many_arguments)]
fn bgp_spec(
    window: (i64, i64, i64, i64, bool),
    non_empty: bool,
    r2s: &str,
    patterns: Vec<[PySlot; 3]>,
    vars: usize,
    checks: Vec<PyCheck>,
    filters: Vec<PyCond>,
    group: Option<PyGroup>,
    project: Vec<(String, String, Option<usize>)>,
    limits: (u64, u64),
    format: &str,
) -> PyResult<crate::bgp::Spec> {
    use crate::bgp::{Check, Spec as BgpSpec};
    let bad = |what: String| PyValueError::new_err(what);
    let slot = |(kind, n): &PySlot| -> PyResult<Slot> {
        match (kind.as_str(), n) {
            ("var", Some(v)) if *v < vars => Ok(Slot::Var(*v)),
            ("id", n) => Ok(Slot::Const(n.map(|i| i as TermId))),
            _ => Err(bad(format!("a slot ({kind:?}, {n:?})"))),
        }
    };
    let mut pats = Vec::new();
    for p in &patterns {
        pats.push([slot(&p[0])?, slot(&p[1])?, slot(&p[2])?]);
    }
    let (conds, group, cols) = bgp_parts(vars, filters, group, project)?;
    let (range, step, offset, origin, right_closed) = window;
    Ok(BgpSpec {
        range,
        step,
        offset,
        origin,
        right_closed,
        non_empty,
        r2s: r2s_of(r2s)?,
        patterns: pats,
        vars,
        checks: checks
            .into_iter()
            .map(|(consts, tracked)| Check {
                consts: consts.map(|(any, id)| if any { None } else { Some(id) }),
                tracked,
            })
            .collect(),
        filters: conds,
        group,
        project: cols,
        max_window_triples: limits.0,
        max_results: limits.1,
        tsv: match format {
            "jsonl" => false,
            "tsv" => true,
            _ => return Err(bad(format!("a format {format:?}"))),
        },
    })
}

/// Several stream files, one for each stream, to be read in parts into one dictionary and
/// merged by time as the operator asks for their events (native/src/source.rs's
/// `Merged`), with a background graph's triples interned in that dictionary too
/// (rsep/windows/native.py's input for a join of windows).
#[pyclass(module = "rsep._core", name = "StreamFiles")]
struct StreamFiles {
    inner: Merged,
    graph: Vec<[TermId; 3]>,
}

#[pymethods]
impl StreamFiles {
    /// How many events the files held, in all (all of them after a run).
    fn __len__(&self) -> usize {
        self.inner.events()
    }

    /// How many triples those events hold.
    fn triples(&self) -> u64 {
        self.inner.triples()
    }

    /// The id of a term written in N-Triples syntax (a query's constant), given one if it is
    /// new, and never swept.
    fn intern(&mut self, term: &str) -> PyResult<TermId> {
        let t = Term::from_str(term)
            .map_err(|e| PyValueError::new_err(format!("not an N-Triples term: {term}: {e}")))?;
        Ok(self.inner.pin(t.as_ref()))
    }

    /// As intern (Stream.id's name).
    fn id(&mut self, term: &str) -> PyResult<TermId> {
        self.intern(term)
    }

    /// The background graph: its triples (subject, predicate, object in N-Triples syntax,
    /// the object in the form pyoxigraph's store gives it), in rsep's order, de-duplicated;
    /// their terms never swept.
    fn set_graph(&mut self, triples: Vec<(String, String, String)>) -> PyResult<()> {
        let mut graph = Vec::with_capacity(triples.len());
        for (s, p, o) in &triples {
            graph.push([self.intern(s)?, self.intern(p)?, self.intern(o)?]);
        }
        self.graph = graph;
        Ok(())
    }

    /// As Stream.set_forms, for every file's literals.
    fn set_forms(&mut self, forms: Py<PyAny>, refuse: bool) {
        self.inner.set_forms(
            || {
                let forms = Python::attach(|py| forms.clone_ref(py));
                Box::new(move |literals| {
                    Python::attach(|py| {
                        forms
                            .call1(py, (literals,))
                            .and_then(|r| r.extract::<Vec<(String, String)>>(py))
                            .map_err(|e| e.to_string())
                    })
                })
            },
            refuse,
        );
    }

    /// (sweeps of the dictionary, the most terms it held at once, seconds reading).
    fn stats(&self) -> (u64, usize, f64) {
        self.inner.stats()
    }
}

/// The stream files at `paths` (one for each stream, in the streams' order), to be read in
/// parts and merged (nothing read yet); `chunk`, `sweep`, `fast` as open_stream's.
#[pyfunction]
#[pyo3(signature = (paths, points, max_record, chunk=crate::stream::CHUNK, sweep=1 << 16, fast=true, formats=None))]
fn open_streams(
    paths: Vec<String>,
    points: Vec<String>,
    max_record: usize,
    chunk: usize,
    sweep: usize,
    fast: bool,
    formats: Option<Vec<String>>,
) -> PyResult<StreamFiles> {
    let formats = match formats {
        None => vec![Format::TriG; paths.len()],
        Some(names) if names.len() == paths.len() => names
            .iter()
            .map(|n| crate::nquads::from_name(n))
            .collect::<Result<_, _>>()
            .map_err(PyValueError::new_err)?,
        Some(_) => return Err(PyValueError::new_err("one format a path")),
    };
    let opts = Options {
        chunk: chunk.max(1),
        sweep,
        fast,
        format: Format::TriG,
    };
    Merged::open(&paths, &formats, points, max_record, opts)
        .map(|inner| StreamFiles {
            inner,
            graph: Vec::new(),
        })
        .map_err(PyValueError::new_err)
}

/// A window of a join as Python gives it: ((range, offset, right-closed), its stream's
/// index, its block's patterns, locality checks and FILTERs).
type PyJoinWindow = (
    (i64, i64, bool),
    usize,
    Vec<[PySlot; 3]>,
    Vec<PyCheck>,
    Vec<PyCond>,
);

/// Run a windowed SELECT joining several windows through the background graph
/// (native/src/join.rs) over [`StreamFiles`], read in parts as the windows go, writing to
/// `out_path`: (the refusal's reason or "", evaluations, rows written); on a refusal, what
/// was written is to be thrown away. `grid`: the windows' common (step, origin).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn join_window(
    py: Python<'_>,
    mut input: PyRefMut<'_, StreamFiles>,
    grid: (i64, i64),
    non_empty: bool,
    r2s: &str,
    windows: Vec<PyJoinWindow>,
    background: Vec<[PySlot; 3]>,
    vars: usize,
    filters: Vec<PyCond>,
    group: Option<PyGroup>,
    project: Vec<(String, String, Option<usize>)>,
    limits: (u64, u64),
    format: &str,
    out_path: &str,
) -> PyResult<(String, u64, u64)> {
    use crate::bgp::Check;
    use crate::join::{Spec as JoinSpec, Window};
    let bad = |what: String| PyValueError::new_err(what);
    let slot = |(kind, n): &PySlot| -> PyResult<Slot> {
        match (kind.as_str(), n) {
            ("var", Some(v)) if *v < vars => Ok(Slot::Var(*v)),
            ("id", n) => Ok(Slot::Const(n.map(|i| i as TermId))),
            _ => Err(bad(format!("a slot ({kind:?}, {n:?})"))),
        }
    };
    let pats = |ps: &[[PySlot; 3]]| -> PyResult<Vec<[Slot; 3]>> {
        ps.iter()
            .map(|p| Ok([slot(&p[0])?, slot(&p[1])?, slot(&p[2])?]))
            .collect()
    };
    // (a block's and the output's parts, read as bgp_stream reads them)
    let parts = |filters: Vec<PyCond>, group: Option<PyGroup>, project| {
        bgp_parts(vars, filters, group, project)
    };
    let (top, group, cols) = parts(filters, group, project)?;
    let mut wins = Vec::new();
    for ((range, offset, right_closed), stream, patterns, checks, conds) in windows {
        if stream >= input.inner.count() {
            return Err(bad(format!("a stream {stream}")));
        }
        let (conds, _, _) = parts(conds, None, Vec::new())?;
        wins.push(Window {
            range,
            offset,
            right_closed,
            stream,
            patterns: pats(&patterns)?,
            checks: checks
                .into_iter()
                .map(|(consts, tracked)| Check {
                    consts: consts.map(|(any, id)| if any { None } else { Some(id) }),
                    tracked,
                })
                .collect(),
            filters: conds,
        });
    }
    let (step, origin) = grid;
    let spec = JoinSpec {
        step,
        origin,
        non_empty,
        r2s: r2s_of(r2s)?,
        windows: wins,
        background: pats(&background)?,
        vars,
        filters: top,
        group,
        project: cols,
        max_window_triples: limits.0,
        max_results: limits.1,
        tsv: match format {
            "jsonl" => false,
            "tsv" => true,
            _ => return Err(bad(format!("a format {format:?}"))),
        },
    };
    let StreamFiles { inner, graph } = &mut *input;
    let graph = &*graph;
    run_files(py, out_path, inner, |src, out| {
        crate::join::run_on(&spec, src, graph, out)
    })
}

/// [`run_stream`] over several files merged ([`StreamFiles`]): a file rsep's own reader gave
/// up has every file read again from its start (that one by oxttl), the operator run again.
fn run_files(
    py: Python<'_>,
    out_path: &str,
    src: &mut Merged,
    run: impl Fn(
            &mut Merged,
            &mut std::io::BufWriter<std::fs::File>,
        ) -> std::io::Result<Result<Done, Refused>>
        + Send
        + Sync,
) -> PyResult<(String, u64, u64)> {
    let got = py.detach(|| loop {
        let file = std::fs::File::create(out_path)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        let r = crate::select::unpanicked(|| run(src, &mut out))?;
        if r.is_err() && src.slower().is_some() {
            src.restart().map_err(std::io::Error::other)?;
            continue;
        }
        std::io::Write::flush(&mut out)?;
        break Ok::<_, std::io::Error>(r);
    });
    match got {
        Ok(Ok(done)) => Ok((String::new(), done.evaluations, done.rows)),
        Ok(Err(refused)) => Ok((refused.0, 0, 0)),
        Err(e) => Err(pyo3::exceptions::PyOSError::new_err(format!(
            "{out_path}: {e}"
        ))),
    }
}

/// A comparison operand as Python gives it: (a variable's number, None) or (None, a
/// numeric literal in N-Triples syntax).
/// A comparison's operand in postfix tokens: `v<n>` a variable, `c<literal>` a number
/// (N-Triples), `+`, `-`, `*` on the two before.
type PyOperand = Vec<String>;
/// A SPASEQ GPM: (triple patterns, the variables it binds, its FILTERs on those alone,
/// its FILTERs reading earlier GPMs' variables, the stream it reads: its place among the
/// streams given), each FILTER a conjunction of comparisons.
type PyGpm = (
    Vec<[PySlot; 3]>,
    Vec<usize>,
    Vec<(PyOperand, String, PyOperand)>,
    Vec<(PyOperand, String, PyOperand)>,
    usize,
);

/// A SPASEQ state's atom: (Kleene+, its leaf key, the variables each iteration binds
/// afresh, those of them written in "iterations" with their names, the GPM's name).
/// And the negated GPMs just before it (their numbers in `negs`), and a conjunction's or
/// disjunction's alternatives (each a conjunction of (leaf key, GPM); empty: the state's
/// GPM is `gpms`'), and whether it is optional.
type PyAtom = (
    bool,
    u64,
    Vec<usize>,
    Vec<(String, usize)>,
    String,
    Vec<usize>,
    Vec<Vec<(u64, PyGpm)>>,
    bool,
);

/// Run a SPASEQ chain (native/src/chain.rs) over a [`Stream`] or, each GPM on its own
/// stream's events, over [`StreamFiles`] (one file a stream), read as the engine goes,
/// writing to `out_path` in `format` (jsonl, tsv, or events: rsep bench's worker's): (the
/// refusal's reason or "", instants, rows written); on a refusal, what was written is to
/// be thrown away.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn chain_stream(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    gpms: Vec<PyGpm>,
    ops: Vec<String>,
    atoms: Vec<PyAtom>,
    negs: Vec<PyGpm>,
    vars: usize,
    partition: Option<usize>,
    window: Option<i64>,
    t0: Option<i64>,
    project: Vec<(String, Option<usize>)>,
    distinct: bool,
    limits: (u64, Option<u64>, bool),
    format: &str,
    out_path: &str,
) -> PyResult<(String, u64, u64)> {
    use crate::bgp::Op;
    use crate::chain::{value_of, Atom, Cmp, Format, Gpm, Operand, Select, Spec as ChainSpec, Val};
    let bad = |what: String| PyValueError::new_err(what);
    let var = |v: usize| {
        if v < vars {
            Ok(v)
        } else {
            Err(bad(format!("a variable {v}")))
        }
    };
    let operand = |tokens: &PyOperand| -> PyResult<Operand> {
        use crate::epsparql::Arith;
        let mut stack: Vec<Operand> = Vec::new();
        for tok in tokens {
            let op = match tok.as_str() {
                "+" => Some(Arith::Add),
                "-" => Some(Arith::Sub),
                "*" => Some(Arith::Mul),
                _ => None,
            };
            if let Some(op) = op {
                let (Some(b), Some(a)) = (stack.pop(), stack.pop()) else {
                    return Err(bad(format!("an operand {tokens:?}")));
                };
                stack.push(Operand::Arith(Box::new(a), op, Box::new(b)));
            } else if let Some(v) = tok.strip_prefix('v') {
                let v = v.parse().map_err(|_| bad(format!("a variable {tok}")))?;
                stack.push(Operand::Var(var(v)?));
            } else if let Some(lit) = tok.strip_prefix('c') {
                let t = Term::from_str(lit).map_err(|e| bad(format!("a literal {lit}: {e}")))?;
                match value_of(Some(t.as_ref())) {
                    Val::Unsure => return Err(bad(format!("a constant not decided here: {lit}"))),
                    v => stack.push(Operand::Const(v)),
                }
            } else {
                return Err(bad(format!("an operand token {tok:?}")));
            }
        }
        match (stack.pop(), stack.is_empty()) {
            (Some(o), true) => Ok(o),
            _ => Err(bad(format!("an operand {tokens:?}"))),
        }
    };
    let cmps = |cs: &[(PyOperand, String, PyOperand)]| -> PyResult<Vec<Cmp>> {
        cs.iter()
            .map(|(l, op, r)| {
                Ok(Cmp {
                    left: operand(l)?,
                    op: Op::parse(op).ok_or_else(|| bad(format!("an operator {op:?}")))?,
                    right: operand(r)?,
                })
            })
            .collect()
    };
    let slot = |(kind, n): &PySlot| -> PyResult<Slot> {
        match (kind.as_str(), n) {
            ("var", Some(v)) => Ok(Slot::Var(var(*v)?)),
            ("id", n) => Ok(Slot::Const(n.map(|i| i as TermId))),
            _ => Err(bad(format!("a slot ({kind:?}, {n:?})"))),
        }
    };
    let gpm = |(patterns, binds, local, stateful, stream): &PyGpm| -> PyResult<Gpm> {
        let mut pats = Vec::new();
        for p in patterns {
            pats.push([slot(&p[0])?, slot(&p[1])?, slot(&p[2])?]);
        }
        Ok(Gpm {
            stream: *stream,
            patterns: pats,
            binds: binds.iter().map(|&v| var(v)).collect::<PyResult<_>>()?,
            local: cmps(local)?,
            stateful: cmps(stateful)?,
        })
    };
    let chain = gpms.iter().map(gpm).collect::<PyResult<Vec<_>>>()?;
    let negs = negs.iter().map(gpm).collect::<PyResult<Vec<_>>>()?;
    if let Some(p) = partition {
        var(p)?;
    }
    for (_, v) in &project {
        if let Some(v) = v {
            var(*v)?;
        }
    }
    let ops = ops
        .iter()
        .map(|op| Select::parse(op).ok_or_else(|| bad(format!("an event selection {op:?}"))))
        .collect::<PyResult<Vec<_>>>()?;
    let mut chain_atoms = Vec::new();
    for (kleene, key, drop, shown, name, forbid, alts, optional) in atoms {
        for &v in drop.iter().chain(shown.iter().map(|(_, v)| v)) {
            var(v)?;
        }
        if forbid.iter().any(|&f| f >= negs.len()) {
            return Err(bad(format!("a negated GPM {forbid:?}")));
        }
        chain_atoms.push(Atom {
            kleene,
            key,
            drop,
            shown,
            name,
            forbid,
            alts: alts
                .iter()
                .map(|alt| {
                    alt.iter()
                        .map(|(k, g)| Ok((*k, gpm(g)?)))
                        .collect::<PyResult<Vec<_>>>()
                })
                .collect::<PyResult<Vec<_>>>()?,
            optional,
        });
    }
    let spec = ChainSpec {
        gpms: chain,
        ops,
        vars,
        partition,
        window,
        t0,
        project,
        distinct,
        max_runs: limits.0,
        max_instant: limits.1,
        lazy_expiry: limits.2,
        atoms: chain_atoms,
        negs,
        format: match format {
            "jsonl" => Format::Jsonl,
            "tsv" => Format::Tsv,
            "events" => Format::Events,
            _ => return Err(bad(format!("a format {format:?}"))),
        },
    };
    if let Ok(mut files) = src.cast::<StreamFiles>().map(Bound::borrow_mut) {
        return run_files(py, out_path, &mut files.inner, |src, out| {
            crate::chain::run_on(&spec, src, out)
        });
    }
    let mut src = src.cast::<Stream>()?.borrow_mut();
    run_stream(py, out_path, &mut src, |src, out| {
        crate::chain::run_on(&spec, src, out)
    })
}

/// A numeric expression in postfix tokens: `v<n>` a variable, `d` getDURATION(), `c<lit>`
/// a number (N-Triples), `+`, `-`, `*` on the two before.
fn epsparql_num(tokens: &[String], vars: usize) -> PyResult<crate::epsparql::Num> {
    use crate::chain::{value_of, Val};
    use crate::epsparql::{Arith, Num};
    let bad = |what: String| PyValueError::new_err(what);
    let mut stack: Vec<Num> = Vec::new();
    for t in tokens {
        let arith = match t.as_str() {
            "+" => Some(Arith::Add),
            "-" => Some(Arith::Sub),
            "*" => Some(Arith::Mul),
            _ => None,
        };
        if let Some(op) = arith {
            let (Some(b), Some(a)) = (stack.pop(), stack.pop()) else {
                return Err(bad(format!("an expression {tokens:?}")));
            };
            stack.push(Num::Arith(Box::new(a), op, Box::new(b)));
        } else if t == "d" {
            stack.push(Num::Duration);
        } else if let Some(v) = t.strip_prefix('v') {
            let v: usize = v.parse().map_err(|_| bad(format!("a variable {t}")))?;
            if v >= vars {
                return Err(bad(format!("a variable {v}")));
            }
            stack.push(Num::Var(v));
        } else if let Some(lit) = t.strip_prefix('c') {
            let term = Term::from_str(lit).map_err(|e| bad(format!("a literal {lit}: {e}")))?;
            match value_of(Some(term.as_ref())) {
                Val::Unsure => return Err(bad(format!("a constant not decided here: {lit}"))),
                v => stack.push(Num::Const(v)),
            }
        } else {
            return Err(bad(format!("a token {t:?}")));
        }
    }
    match (stack.pop(), stack.is_empty()) {
        (Some(n), true) => Ok(n),
        _ => Err(bad(format!("an expression {tokens:?}"))),
    }
}

type PyNumCmp = (Vec<String>, String, Vec<String>);
type PyClause = (Option<Vec<PySlot>>, Option<u32>, String, usize);
type PyRule = (String, u32, Vec<PyNumCmp>, Vec<usize>);

/// Run an EP-SPARQL SEQ (native/src/epsparql.rs) over a [`Stream`], read as the engine
/// goes, writing to `out_path` in
/// `format` (jsonl, tsv, or values: rsep bench's worker's): `mode` unrestricted (its
/// `patterns` and `filter`) or etalis-chronological / etalis-recent (its binarised
/// `rules` and `clauses`, and the rule `window`). Returns (the refusal's reason or "",
/// instants, rows written); on a refusal, what was written is to be thrown away.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn epsparql_stream(
    py: Python<'_>,
    mut src: PyRefMut<'_, Stream>,
    mode: &str,
    vars: usize,
    patterns: Vec<Vec<PySlot>>,
    filter: Vec<PyNumCmp>,
    rules: Vec<PyRule>,
    clauses: Vec<PyClause>,
    window: Option<(f64, bool)>,
    project: Vec<(String, Option<usize>)>,
    format: &str,
    out_path: &str,
) -> PyResult<(String, u64, u64)> {
    use crate::bgp::Op;
    use crate::chain::Format;
    use crate::epsparql::{Action, Clause, Cmp, Mode, Rule, RuleOp, Spec as EpSpec, Trigger};
    let bad = |what: String| PyValueError::new_err(what);
    let var = |v: usize| {
        if v < vars {
            Ok(v)
        } else {
            Err(bad(format!("a variable {v}")))
        }
    };
    let slot = |(kind, n): &PySlot| -> PyResult<Slot> {
        match (kind.as_str(), n) {
            ("var", Some(v)) => Ok(Slot::Var(var(*v)?)),
            ("id", n) => Ok(Slot::Const(n.map(|i| i as TermId))),
            _ => Err(bad(format!("a slot ({kind:?}, {n:?})"))),
        }
    };
    let pattern = |p: &[PySlot]| -> PyResult<[Slot; 3]> {
        match p {
            [s, p, o] => Ok([slot(s)?, slot(p)?, slot(o)?]),
            _ => Err(bad("a triple pattern of three slots".into())),
        }
    };
    let cmps = |cs: &[PyNumCmp]| -> PyResult<Vec<Cmp>> {
        cs.iter()
            .map(|(l, op, r)| {
                Ok(Cmp {
                    left: epsparql_num(l, vars)?,
                    op: Op::parse(op).ok_or_else(|| bad(format!("an operator {op:?}")))?,
                    right: epsparql_num(r, vars)?,
                })
            })
            .collect()
    };
    for (_, v) in &project {
        if let Some(v) = v {
            var(*v)?;
        }
    }
    let mode = match mode {
        "unrestricted" => Mode::Unrestricted {
            patterns: patterns
                .iter()
                .map(|p| pattern(p))
                .collect::<PyResult<_>>()?,
            filter: cmps(&filter)?,
        },
        "etalis-chronological" | "etalis-recent" => {
            let mut rs = Vec::new();
            for (op, head, conds, shared) in &rules {
                rs.push(Rule {
                    op: match op.as_str() {
                        "seq" => RuleOp::Seq,
                        "where" => RuleOp::Where,
                        "event" => RuleOp::Event,
                        _ => return Err(bad(format!("a rule operator {op:?}"))),
                    },
                    head: *head,
                    conds: cmps(conds)?,
                    shared: shared.iter().map(|&v| var(v)).collect::<PyResult<_>>()?,
                });
            }
            let mut cs = Vec::new();
            for (atom, temp, action, rule) in &clauses {
                if *rule >= rs.len() {
                    return Err(bad(format!("a rule {rule}")));
                }
                cs.push(Clause {
                    trigger: match (atom, temp) {
                        (Some(p), None) => Trigger::Atom(pattern(p)?),
                        (None, Some(n)) => Trigger::Temp(*n),
                        _ => return Err(bad("a trigger: an atom or a temp".into())),
                    },
                    action: match action.as_str() {
                        "insert" => Action::Insert,
                        "check" => Action::Check,
                        "where" => Action::Where,
                        "event" => Action::Event,
                        _ => return Err(bad(format!("an action {action:?}"))),
                    },
                    rule: *rule,
                });
            }
            Mode::Etalis {
                rules: rs,
                clauses: cs,
                recent: mode == "etalis-recent",
                window,
            }
        }
        _ => return Err(bad(format!("a mode {mode:?}"))),
    };
    let spec = EpSpec {
        mode,
        vars,
        project,
        format: match format {
            "jsonl" => Format::Jsonl,
            "tsv" => Format::Tsv,
            "values" => Format::Events,
            _ => return Err(bad(format!("a format {format:?}"))),
        },
    };
    run_stream(py, out_path, &mut src, |src, out| {
        crate::epsparql::run_on(&spec, src, out)
    })
}

/// EP-SPARQL's formal chronological / recent (native/src/formal.rs) over a [`Stream`], read
/// as the engine goes: the SEQ's `patterns`, the FILTER's comparisons (as epsparql_stream's),
/// the `policy` (CHRONOLOGICAL or RECENT), the query's `window` (h, strict) or None, the
/// partition variable or None, the columns, jsonl / tsv / values. Returns (the refusal's
/// reason or "", evaluations, rows written); on a refusal, what was written is to be thrown
/// away.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn epsparql_formal_stream(
    py: Python<'_>,
    mut src: PyRefMut<'_, Stream>,
    policy: &str,
    vars: usize,
    patterns: Vec<Vec<PySlot>>,
    filter: Vec<PyNumCmp>,
    window: Option<(f64, bool)>,
    part: Option<usize>,
    project: Vec<(String, Option<usize>)>,
    format: &str,
    out_path: &str,
) -> PyResult<(String, u64, u64)> {
    use crate::bgp::Op;
    use crate::chain::Format;
    use crate::epsparql::Cmp;
    use crate::policy::Policy;
    let bad = |what: String| PyValueError::new_err(what);
    let var = |v: usize| {
        if v < vars {
            Ok(v)
        } else {
            Err(bad(format!("a variable {v}")))
        }
    };
    let slot = |(kind, n): &PySlot| -> PyResult<Slot> {
        match (kind.as_str(), n) {
            ("var", Some(v)) => Ok(Slot::Var(var(*v)?)),
            ("id", n) => Ok(Slot::Const(n.map(|i| i as TermId))),
            _ => Err(bad(format!("a slot ({kind:?}, {n:?})"))),
        }
    };
    let mut pats = Vec::new();
    for p in &patterns {
        match p.as_slice() {
            [s, p, o] => pats.push([slot(s)?, slot(p)?, slot(o)?]),
            _ => return Err(bad("a triple pattern of three slots".into())),
        }
    }
    let mut cmps = Vec::new();
    for (l, op, r) in &filter {
        cmps.push(Cmp {
            left: epsparql_num(l, vars)?,
            op: Op::parse(op).ok_or_else(|| bad(format!("an operator {op:?}")))?,
            right: epsparql_num(r, vars)?,
        });
    }
    for v in project.iter().filter_map(|(_, v)| *v).chain(part) {
        var(v)?;
    }
    let policy = match Policy::parse(policy) {
        Some(p @ (Policy::Chronological | Policy::Recent)) => p,
        _ => return Err(bad(format!("a policy {policy:?}"))),
    };
    let spec = crate::formal::Spec {
        patterns: pats,
        filter: cmps,
        policy,
        window,
        part,
        vars,
        project,
        format: match format {
            "jsonl" => Format::Jsonl,
            "tsv" => Format::Tsv,
            "values" => Format::Events,
            _ => return Err(bad(format!("a format {format:?}"))),
        },
    };
    run_stream(py, out_path, &mut src, |src, out| {
        crate::formal::run_on(&spec, src, out)
    })
}

/// RSEP-QL's MATCH on ids (crate::rsepql) over a [`Stream`], read as the matcher goes: the BEPs (each a triple pattern's slots and
/// its landmark window's t0), the event pattern in postfix (`b<n>` a BEP, `first`, `last`,
/// `seq`), the policy, per column (name, "var" | "from" | "to", variable), the
/// FILTER's comparisons (as epsparql_run's), the R2S
/// operator, (max window triples, max results), jsonl or tsv: (refusal or "",
/// evaluations, rows).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn match_stream(
    py: Python<'_>,
    mut src: PyRefMut<'_, Stream>,
    beps: Vec<(Vec<PySlot>, i64)>,
    expr: Vec<String>,
    policy: &str,
    vars: usize,
    project: Vec<(String, String, Option<usize>)>,
    filter: Vec<PyNumCmp>,
    r2s: &str,
    limits: (u64, u64),
    format: &str,
    out_path: &str,
) -> PyResult<(String, u64, u64)> {
    use crate::rsepql::{Bep, Col, Expr, Spec as MatchSpec};
    let bad = |what: String| PyValueError::new_err(what);
    let var = |v: usize| {
        if v < vars {
            Ok(v)
        } else {
            Err(bad(format!("a variable {v}")))
        }
    };
    let mut bs = Vec::new();
    for (p, t0) in &beps {
        let mut slots = [Slot::Const(None); 3];
        if p.len() != 3 {
            return Err(bad("a triple pattern of three slots".into()));
        }
        for (k, (kind, n)) in p.iter().enumerate() {
            slots[k] = match (kind.as_str(), n) {
                ("var", Some(v)) => Slot::Var(var(*v)?),
                ("id", n) => Slot::Const(n.map(|i| i as TermId)),
                _ => return Err(bad(format!("a slot ({kind:?}, {n:?})"))),
            };
        }
        bs.push(Bep {
            pattern: slots,
            t0: *t0,
        });
    }
    let mut stack: Vec<Expr> = Vec::new();
    for tok in &expr {
        let e = match tok.as_str() {
            "first" | "last" => {
                let x = Box::new(stack.pop().ok_or_else(|| bad("an empty stack".into()))?);
                if tok == "first" {
                    Expr::First(x)
                } else {
                    Expr::Last(x)
                }
            }
            "seq" => {
                let r = stack.pop().ok_or_else(|| bad("an empty stack".into()))?;
                let l = stack.pop().ok_or_else(|| bad("an empty stack".into()))?;
                Expr::Seq(Box::new(l), Box::new(r))
            }
            t => match t.strip_prefix('b').and_then(|n| n.parse::<usize>().ok()) {
                Some(n) if n < bs.len() => Expr::Bep(n),
                _ => return Err(bad(format!("an event pattern token {t:?}"))),
            },
        };
        stack.push(e);
    }
    let expr = match (stack.pop(), stack.is_empty()) {
        (Some(e), true) => e,
        _ => return Err(bad("not one event pattern".into())),
    };
    let mut cols = Vec::new();
    for (name, kind, v) in project {
        let col = match kind.as_str() {
            "var" => Col::Var(v.map(var).transpose()?),
            "from" => Col::From,
            "to" => Col::To,
            _ => return Err(bad(format!("a column {kind:?}"))),
        };
        cols.push((name, col));
    }
    let spec = MatchSpec {
        beps: bs,
        expr,
        policy: crate::policy::Policy::parse(policy)
            .ok_or_else(|| bad(format!("a policy {policy:?}")))?,
        vars,
        project: cols,
        filter: filter
            .iter()
            .map(|(l, op, r)| {
                Ok(crate::epsparql::Cmp {
                    left: epsparql_num(l, vars)?,
                    op: crate::bgp::Op::parse(op)
                        .ok_or_else(|| bad(format!("an operator {op:?}")))?,
                    right: epsparql_num(r, vars)?,
                })
            })
            .collect::<PyResult<_>>()?,
        r2s: r2s_of(r2s)?,
        max_window_triples: limits.0,
        max_results: limits.1,
        tsv: match format {
            "jsonl" => false,
            "tsv" => true,
            _ => return Err(bad(format!("a format {format:?}"))),
        },
    };
    run_stream(py, out_path, &mut src, |src, out| {
        crate::rsepql::run_on(&spec, src, out)
    })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Terms>()?;
    m.add_class::<StreamEvents>()?;
    m.add_function(wrap_pyfunction!(read_stream, m)?)?;
    m.add_class::<Stream>()?;
    m.add_function(wrap_pyfunction!(open_stream, m)?)?;
    m.add_function(wrap_pyfunction!(select_stream, m)?)?;
    m.add_function(wrap_pyfunction!(bgp_stream, m)?)?;
    m.add_class::<StreamFiles>()?;
    m.add_function(wrap_pyfunction!(open_streams, m)?)?;
    m.add_function(wrap_pyfunction!(join_window, m)?)?;
    m.add_function(wrap_pyfunction!(chain_stream, m)?)?;
    m.add_function(wrap_pyfunction!(epsparql_stream, m)?)?;
    m.add_function(wrap_pyfunction!(epsparql_formal_stream, m)?)?;
    m.add_function(wrap_pyfunction!(match_stream, m)?)?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    Ok(())
}

/// The R2S operator the planner names (rsep.algebra.policy.R2S's value).
fn r2s_of(name: &str) -> PyResult<R2s> {
    match name {
        "RSTREAM" => Ok(R2s::RStream),
        "ISTREAM" => Ok(R2s::IStream),
        "DSTREAM" => Ok(R2s::DStream),
        _ => Err(PyValueError::new_err(format!("an R2S operator {name:?}"))),
    }
}
