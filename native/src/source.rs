//! A stream file read in parts, as an operator asks for its events, with a dictionary that
//! stays bounded (issue 47: an unbounded stream).
//!
//! [`crate::stream::read_events`] holds a whole file's events and every term of it before an
//! operator runs. A [`Source`] reads the file a chunk at a time (the chunks
//! [`crate::stream`]'s record bound is proven on: [`CHUNK`] bytes, then to the line's end),
//! gives the operator each event once the next event's time came (an event's graph may be
//! given in several blocks), and lets go of the events the operator says it is done with.
//! The file is accepted or refused exactly as `read_events` accepts or refuses it:
//!
//! - rsep's own TriG reader ([`crate::trig`]) reads the text up to the last line ending a
//!   graph block (`}`) in what was read; no token spans a line (a long string is refused),
//!   so that text is a whole number of statements, or the reader fails on it (a `}` line
//!   inside a block, in a comment): any failure of that reader, as in `read_events`, hands
//!   the file to oxttl's reading, from the start ([`Source::slower`]: the caller runs again);
//! - oxttl is fed the same chunks as `read_events` feeds it, so each quad comes out of the
//!   same chunk and the record bound is checked on the same numbers, event by event.
//!
//! Refusals found late (a syntax error, a time going back, a literal the caller does not
//! take) come after the operator wrote rows: the caller throws its output away.
//!
//! The dictionary is swept when it has doubled since the last sweep (and holds at least
//! the sweep threshold): every term not referred to by an event still held, the event being
//! read, a pinned term (the query's constants) is freed, and its id given again to a new
//! term. An operator keeps ids only of the events it has not let go of, and drops what it
//! made of ids (their text) when [`Source::generation`] changes.

use crate::dictionary::{TermId, Terms};
use crate::nquads::Parser;
use crate::reader::Format;
use crate::select::Refused;
use crate::stream::{has_long_string, stable_literal, Events, Reader, CHUNK};
use crate::trig::{read_on, Declared};
use std::io::{Read, Seek};
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

/// The stored forms of literals (N-Triples syntax): given the literals whose form may
/// change, the pairs (as written, as stored) of those that do, or a refusal.
pub type Forms = dyn FnMut(Vec<String>) -> Result<Vec<(String, String)>, String> + Send + Sync;

/// How a file is read: the chunks' size, the dictionary's size below which it is never
/// swept (0: swept after every chunk), whether rsep's own reader is tried first (TriG's
/// only), its syntax (TriG or N-Quads: [`crate::nquads`]).
#[derive(Clone, Copy)]
pub struct Options {
    pub chunk: usize,
    pub sweep: usize,
    pub fast: bool,
    pub format: Format,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            chunk: CHUNK,
            sweep: 1 << 16,
            fast: true,
            format: Format::TriG,
        }
    }
}

/// Events as an operator asks for them: event `k` is there once `has(k)` said so, until
/// the operator lets go of it (`release`); ids keep their terms while `generation` stays.
pub trait Feed {
    /// Whether event `k` is there; a refusal of the stream.
    fn has(&mut self, k: usize) -> Result<bool, Refused>;
    fn time(&self, k: usize) -> i64;
    fn triples_of(&self, k: usize) -> &[[TermId; 3]];
    /// The operator is done with the events before `below`.
    fn release(&mut self, below: usize);
    fn terms(&self) -> &Terms;
    fn generation(&self) -> u64;
    /// Whether the dictionary holds every term of the stream (it was read whole first).
    fn whole(&self) -> bool;
    /// The operator keeps ids past the events it let go of (a CEP engine's runs, its
    /// partition keys): the dictionary is then swept only when it asks
    /// ([`Feed::sweep_holding`]), never while it reads on.
    fn hold(&mut self) {}
    /// Whether the dictionary is due a sweep (under [`Feed::hold`]).
    fn due(&self) -> bool {
        false
    }
    /// Sweep the dictionary, keeping the terms of `held` besides those of the events still
    /// held and the pinned ones.
    fn sweep_holding(&mut self, _held: &[TermId]) {}
}

/// A whole file's events, read before the operator runs.
pub struct Whole<'a> {
    pub events: &'a Events,
    pub terms: &'a Terms,
}

impl Feed for Whole<'_> {
    fn has(&mut self, k: usize) -> Result<bool, Refused> {
        Ok(k < self.events.len())
    }
    fn time(&self, k: usize) -> i64 {
        self.events.times[k]
    }
    fn triples_of(&self, k: usize) -> &[[TermId; 3]] {
        self.events.triples_of(k)
    }
    fn release(&mut self, _below: usize) {}
    fn terms(&self) -> &Terms {
        self.terms
    }
    fn generation(&self) -> u64 {
        0
    }
    fn whole(&self) -> bool {
        true
    }
}

impl Feed for Source {
    fn has(&mut self, k: usize) -> Result<bool, Refused> {
        Source::has(self, k)
    }
    fn time(&self, k: usize) -> i64 {
        Source::time(self, k)
    }
    fn triples_of(&self, k: usize) -> &[[TermId; 3]] {
        Source::triples_of(self, k)
    }
    fn release(&mut self, below: usize) {
        Source::release(self, below)
    }
    fn terms(&self) -> &Terms {
        Source::terms(self)
    }
    fn generation(&self) -> u64 {
        Source::generation(self)
    }
    fn whole(&self) -> bool {
        false
    }
    fn hold(&mut self) {
        self.holding = true;
    }
    fn due(&self) -> bool {
        self.due
    }
    fn sweep_holding(&mut self, held: &[TermId]) {
        self.sweep_keeping(held);
    }
}

/// Events of several streams merged into one sequence, each event knowing its stream.
pub trait Streams: Feed {
    /// The stream (its place among those given) event `k` is of (`has(k)` was true).
    fn stream(&self, k: usize) -> usize;
    /// How many streams are merged.
    fn count(&self) -> usize;
}

/// Several whole files' events (one dictionary), merged as [`Merged`] merges them.
pub struct WholeMerge<'a> {
    streams: Vec<&'a Events>,
    terms: &'a Terms,
    /// (stream, its event) in the merged order
    order: Vec<(usize, usize)>,
}

impl<'a> WholeMerge<'a> {
    pub fn new(streams: Vec<&'a Events>, terms: &'a Terms) -> Self {
        let mut keyed: Vec<(i64, usize, usize)> = Vec::new();
        for (i, ev) in streams.iter().enumerate() {
            keyed.extend(ev.times.iter().enumerate().map(|(k, &t)| (t, i, k)));
        }
        // (each stream's times do not go back: its events keep their order among equals)
        keyed.sort_unstable();
        let order = keyed.into_iter().map(|(_, i, k)| (i, k)).collect();
        Self {
            streams,
            terms,
            order,
        }
    }
}

impl Feed for WholeMerge<'_> {
    fn has(&mut self, k: usize) -> Result<bool, Refused> {
        Ok(k < self.order.len())
    }
    fn time(&self, k: usize) -> i64 {
        let (i, e) = self.order[k];
        self.streams[i].times[e]
    }
    fn triples_of(&self, k: usize) -> &[[TermId; 3]] {
        let (i, e) = self.order[k];
        self.streams[i].triples_of(e)
    }
    fn release(&mut self, _below: usize) {}
    fn terms(&self) -> &Terms {
        self.terms
    }
    fn generation(&self) -> u64 {
        0
    }
    fn whole(&self) -> bool {
        true
    }
}

impl Streams for WholeMerge<'_> {
    fn stream(&self, k: usize) -> usize {
        self.order[k].0
    }
    fn count(&self) -> usize {
        self.streams.len()
    }
}

/// Several stream files, one for each stream, read in parts into one dictionary and merged
/// as rsep.stream.source's merge_streams merges them: by time, events of equal time in the
/// order of their streams' places among those given, each stream's in its own order. Each
/// file is read (accepted, refused, its records bounded, its literals' stored forms asked)
/// as a [`Source`] alone reads it; the dictionary is shared, swept over every file's held
/// events.
pub struct Merged {
    sources: Vec<Source>,
    paths: Vec<String>,
    /// the dictionary of all of them (each source's own stays empty but while it reads)
    terms: Terms,
    pinned: Vec<TermId>,
    /// (stream, its event) of the merged events from `base` on
    order: std::collections::VecDeque<(usize, usize)>,
    base: usize,
    /// per stream: its next event to merge, its events let go of, whether it ended
    next: Vec<usize>,
    released: Vec<usize>,
    ended: Vec<bool>,
    /// the stream whose reading rsep's own reader gave up (read again by oxttl)
    slow: Option<usize>,
    holding: bool,
    generation: u64,
    sweeps: u64,
    peak_terms: usize,
}

impl Merged {
    /// The files at `paths` (in the streams' order), nothing read yet (as [`Source::open`]).
    pub fn open(
        paths: &[String],
        formats: &[Format],
        points: Vec<String>,
        max_record: usize,
        opts: Options,
    ) -> Result<Self, String> {
        let mut sources = Vec::with_capacity(paths.len());
        for (path, &format) in paths.iter().zip(formats) {
            let opts = Options { format, ..opts };
            let mut s = Source::open(path, points.clone(), max_record, opts)?;
            // (the sweeps are this merge's, over every file's events)
            s.holding = true;
            sources.push(s);
        }
        let n = sources.len();
        Ok(Self {
            sources,
            paths: paths.to_vec(),
            terms: Terms::new(),
            pinned: Vec::new(),
            order: std::collections::VecDeque::new(),
            base: 0,
            next: vec![0; n],
            released: vec![0; n],
            ended: vec![false; n],
            slow: None,
            holding: false,
            generation: 0,
            sweeps: 0,
            peak_terms: 0,
        })
    }

    /// As [`Source::set_forms`], for every file (`forms` makes each one's asker).
    pub fn set_forms(&mut self, mut forms: impl FnMut() -> Box<Forms>, refuse: bool) {
        for s in &mut self.sources {
            s.set_forms(forms(), refuse);
        }
    }

    /// As [`Source::pin`].
    pub fn pin(&mut self, term: oxrdf::TermRef<'_>) -> TermId {
        let id = self.terms.intern_ref(term).0;
        self.pinned.push(id);
        id
    }

    /// Stream `i`'s [`Source::has`], reading into the shared dictionary.
    fn source_has(&mut self, i: usize, k: usize) -> Result<bool, Refused> {
        let s = &mut self.sources[i];
        std::mem::swap(&mut self.terms, &mut s.terms);
        let got = s.has(k);
        std::mem::swap(&mut self.terms, &mut s.terms);
        self.peak_terms = self.peak_terms.max(self.terms.len());
        got.map_err(|Refused(why)| Refused(format!("{}: {why}", self.paths[i])))
    }

    /// The events merged so far.
    pub fn events(&self) -> usize {
        self.sources.iter().map(Source::events).sum()
    }

    pub fn triples(&self) -> u64 {
        self.sources.iter().map(Source::triples).sum()
    }

    /// (sweeps, the most terms held at once, seconds reading).
    pub fn stats(&self) -> (u64, usize, f64) {
        let read: f64 = self.sources.iter().map(|s| s.stats().2).sum();
        (self.sweeps, self.peak_terms.max(self.terms.len()), read)
    }

    /// As [`Source::slower`], of any file.
    pub fn slower(&mut self) -> Option<String> {
        for (i, s) in self.sources.iter_mut().enumerate() {
            if let Some(why) = s.slower() {
                self.slow = Some(i);
                return Some(format!("{}: {why}", self.paths[i]));
            }
        }
        None
    }

    /// Every file read again from its start: the one rsep's own reader gave up by oxttl, the
    /// others as they were read (the pinned terms keep their ids).
    pub fn restart(&mut self) -> Result<(), String> {
        for (i, s) in self.sources.iter_mut().enumerate() {
            s.rewind(self.slow != Some(i))?;
        }
        self.slow = None;
        self.order.clear();
        self.base = 0;
        self.next.iter_mut().for_each(|n| *n = 0);
        self.released.iter_mut().for_each(|n| *n = 0);
        self.ended.iter_mut().for_each(|e| *e = false);
        self.sweep_keeping(&[]);
        Ok(())
    }

    fn sweep_keeping(&mut self, held: &[TermId]) {
        for s in &mut self.sources {
            s.drop_released();
        }
        let mut live = vec![0u64; self.terms.slots().div_ceil(64)];
        for &id in self.pinned.iter().chain(held) {
            set(&mut live, id);
        }
        for s in &self.sources {
            s.mark(&mut live);
        }
        self.terms.sweep(&live);
        for s in &mut self.sources {
            s.swept(&live, self.terms.len());
        }
        self.generation += 1;
        self.sweeps += 1;
    }
}

impl Feed for Merged {
    fn has(&mut self, k: usize) -> Result<bool, Refused> {
        while self.base + self.order.len() <= k {
            // the earliest next event, the first stream's among equal times
            let mut best: Option<(i64, usize)> = None;
            for i in 0..self.sources.len() {
                if self.ended[i] {
                    continue;
                }
                if !self.source_has(i, self.next[i])? {
                    self.ended[i] = true;
                    continue;
                }
                let t = self.sources[i].time(self.next[i]);
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, i));
                }
            }
            let Some((_, i)) = best else {
                return Ok(false);
            };
            self.order.push_back((i, self.next[i]));
            self.next[i] += 1;
        }
        if !self.holding && self.due() {
            self.sweep_keeping(&[]);
        }
        Ok(true)
    }
    fn time(&self, k: usize) -> i64 {
        let (i, e) = self.order[k - self.base];
        self.sources[i].time(e)
    }
    fn triples_of(&self, k: usize) -> &[[TermId; 3]] {
        let (i, e) = self.order[k - self.base];
        self.sources[i].triples_of(e)
    }
    fn release(&mut self, below: usize) {
        while self.base < below {
            let Some((i, _)) = self.order.pop_front() else {
                break;
            };
            self.released[i] += 1;
            self.base += 1;
        }
        for (s, &r) in self.sources.iter_mut().zip(&self.released) {
            s.release(r);
        }
    }
    fn terms(&self) -> &Terms {
        &self.terms
    }
    fn generation(&self) -> u64 {
        self.generation
    }
    fn whole(&self) -> bool {
        false
    }
    fn hold(&mut self) {
        self.holding = true;
    }
    fn due(&self) -> bool {
        self.sources.iter().any(|s| s.due)
    }
    fn sweep_holding(&mut self, held: &[TermId]) {
        self.sweep_keeping(held);
    }
}

impl Streams for Merged {
    fn stream(&self, k: usize) -> usize {
        self.order[k - self.base].0
    }
    fn count(&self) -> usize {
        self.sources.len()
    }
}

impl Streams for Whole<'_> {
    fn stream(&self, _k: usize) -> usize {
        0
    }
    fn count(&self) -> usize {
        1
    }
}

impl Streams for Source {
    fn stream(&self, _k: usize) -> usize {
        0
    }
    fn count(&self) -> usize {
        1
    }
}

/// What a [`Source`] reads: a file, or standard input (not a regular file: read once),
/// each byte read from it kept in a spool file (unlinked once made) so that a reading from
/// the start reads it again, and so that the caller can hand what was read to today's path
/// ([`Source::spool`]).
enum Input {
    File(std::fs::File),
    Spooled {
        stdin: std::fs::File,
        spool: std::fs::File,
        /// the bytes spooled; `at`: the reading's place
        len: u64,
        at: u64,
    },
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Input::File(f) => f.read(buf),
            Input::Spooled {
                stdin,
                spool,
                len,
                at,
            } => {
                if *at < *len {
                    let room = buf
                        .len()
                        .min(usize::try_from(*len - *at).unwrap_or(usize::MAX));
                    let n = spool.read_at(&mut buf[..room], *at)?;
                    *at += n as u64;
                    return Ok(n);
                }
                let n = stdin.read(buf)?;
                spool.write_all_at(&buf[..n], *len)?;
                *len += n as u64;
                *at = *len;
                Ok(n)
            }
        }
    }
}

impl Input {
    /// Whether the next read waits on standard input (its spool read to its end).
    fn live(&self) -> bool {
        matches!(self, Input::Spooled { len, at, .. } if at >= len)
    }

    /// One read of at most `step` bytes onto `buf`'s end: a pipe gives what it has.
    fn read_once(&mut self, step: usize, buf: &mut Vec<u8>) -> std::io::Result<usize> {
        let at = buf.len();
        buf.resize(at + step, 0);
        let got = loop {
            match self.read(&mut buf[at..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                got => break got,
            }
        };
        buf.truncate(at + *got.as_ref().unwrap_or(&0));
        got
    }

    fn rewind(&mut self) -> std::io::Result<()> {
        match self {
            Input::File(f) => f.seek(std::io::SeekFrom::Start(0)).map(|_| ()),
            Input::Spooled { at, .. } => {
                *at = 0;
                Ok(())
            }
        }
    }
}

/// A stream file's events as an operator asks for them.
/// Called before the reading reads on (and may wait, on a pipe): what the operator wrote of
/// the events given so far can go out then (py.rs's write-through), for it is final: no
/// row of theirs depends on what comes later.
pub type Wait = Box<dyn FnMut() -> std::io::Result<()> + Send + Sync>;

pub struct Source {
    file: Input,
    wait: Option<Wait>,
    /// the last read was of standard input (or the spool's last): what it gave is taken
    short: bool,
    /// the last chunk given ended the document
    ended: bool,
    points: Vec<String>,
    max_record: usize,
    small: bool,
    opts: Options,
    fast: bool,
    terms: Terms,
    pinned: Vec<TermId>,
    reader: Reader,
    declared: Declared,
    parser: Parser,
    /// an N-Quads file's lines read by rsep's own reader (with `fast`)
    lines: crate::nquads::Lines,
    /// bytes read from the file and not yet in a chunk; `pos`: the file offset after the
    /// chunks given out
    pending: Vec<u8>,
    pos: usize,
    eof: bool,
    /// rsep's own reader: the chunks' text after its last statement read, from `carry_at`
    carry: Vec<u8>,
    carry_at: usize,
    done: bool,
    /// why the file, read by rsep's own reader, goes to oxttl's reading
    slower: Option<String>,
    records: usize,
    forms: Option<Box<Forms>>,
    /// a literal whose stored form differs is refused (the caller does not restore)
    refuse_changed: bool,
    /// the literals whose stored form was asked (a bit an id), and those that differ
    asked: Vec<u64>,
    restored: hashbrown::HashMap<TermId, TermId>,
    released: usize,
    triples_before: u64,
    generation: u64,
    sweeps: u64,
    next_sweep: usize,
    /// the operator sweeps ([`Feed::hold`]); `due`: a sweep it has not made yet is due
    holding: bool,
    due: bool,
    peak_terms: usize,
    read_time: Duration,
}

fn bit(bits: &[u64], id: TermId) -> bool {
    bits.get(id as usize / 64)
        .is_some_and(|w| w & (1 << (id % 64)) != 0)
}

fn set(bits: &mut Vec<u64>, id: TermId) {
    let w = id as usize / 64;
    if w >= bits.len() {
        bits.resize(w + 1, 0);
    }
    bits[w] |= 1 << (id % 64);
}

/// Where rsep's own reader stops in `b`: after the last line ending in `}` (a graph
/// block's end, blanks after it aside), or 0.
fn boundary(b: &[u8]) -> usize {
    let mut end = b.len();
    while end > 0 {
        let nl = end - 1;
        if b[nl] != b'\n' {
            end = memchr::memrchr(b'\n', &b[..end]).map_or(0, |i| i + 1);
            continue;
        }
        let start = memchr::memrchr(b'\n', &b[..nl]).map_or(0, |i| i + 1);
        let line = &b[start..nl];
        let trimmed = line
            .iter()
            .rposition(|&c| !matches!(c, b' ' | b'\t' | b'\r'))
            .map(|i| &line[..=i]);
        if trimmed.is_some_and(|l| l.ends_with(b"}")) {
            return end;
        }
        end = start;
    }
    0
}

impl Source {
    /// The file at `path`, nothing read yet: `points` the point-time predicates' IRIs,
    /// `max_record` the record limit (as [`crate::stream::read_events`] has them).
    pub fn open(
        path: &str,
        points: Vec<String>,
        max_record: usize,
        opts: Options,
    ) -> Result<Self, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
        let meta = file.metadata().map_err(|e| format!("{path}: {e}"))?;
        if !meta.is_file() {
            // (read once: a late refusal could not run today's path over what was read)
            return Err(format!("{path}: not a regular file"));
        }
        let size = Some(meta.len());
        Self::reading(Input::File(file), size, points, max_record, opts)
    }

    /// Standard input (a pipe, not a regular file), nothing read yet: what is read of it is
    /// kept in a spool file made in the directory `spool_dir` (and unlinked at once).
    pub fn open_stdin(
        spool_dir: &str,
        points: Vec<String>,
        max_record: usize,
        opts: Options,
    ) -> Result<Self, String> {
        use std::os::fd::AsFd;
        let stdin = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| format!("standard input: {e}"))?;
        let name = std::path::Path::new(spool_dir).join(format!(
            ".rsep-stdin-{}-{:x}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let spool = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&name)
            .map_err(|e| format!("{}: {e}", name.display()))?;
        std::fs::remove_file(&name).map_err(|e| format!("{}: {e}", name.display()))?;
        let input = Input::Spooled {
            stdin: stdin.into(),
            spool,
            len: 0,
            at: 0,
        };
        Self::reading(input, None, points, max_record, opts)
    }

    /// A file descriptor (the caller's) of the spool of standard input: the bytes read of it,
    /// from its start; None for a file.
    pub fn spool(&self) -> Option<std::os::fd::OwnedFd> {
        match &self.file {
            Input::File(_) => None,
            Input::Spooled { spool, .. } => spool.try_clone().ok().map(Into::into),
        }
    }

    fn reading(
        file: Input,
        size: Option<u64>,
        points: Vec<String>,
        max_record: usize,
        mut opts: Options,
    ) -> Result<Self, String> {
        crate::nquads::stream_format(opts.format)?;
        // (the size of standard input is not known: its records are bounded by chunks; an
        // N-Quads file's are not bounded at all)
        let small = !crate::nquads::bounded(opts.format)
            || size.is_some_and(|size| usize::try_from(size).is_ok_and(|s| s <= max_record));
        if !small {
            // the record bound is proven on chunks of CHUNK bytes
            opts.chunk = CHUNK;
        }
        let reader = Reader::new(&points, Vec::new(), false);
        Ok(Self {
            file,
            wait: None,
            short: false,
            ended: false,
            points,
            max_record,
            small,
            opts,
            fast: opts.fast,
            terms: Terms::new(),
            pinned: Vec::new(),
            reader,
            declared: Declared::default(),
            parser: Parser::new(opts.format),
            lines: crate::nquads::Lines::default(),
            pending: Vec::new(),
            pos: 0,
            eof: false,
            carry: Vec::new(),
            carry_at: 0,
            done: false,
            slower: None,
            records: 0,
            forms: None,
            refuse_changed: false,
            asked: Vec::new(),
            restored: hashbrown::HashMap::new(),
            released: 0,
            triples_before: 0,
            generation: 0,
            sweeps: 0,
            next_sweep: opts.sweep,
            holding: false,
            due: false,
            peak_terms: 0,
            read_time: Duration::ZERO,
        })
    }

    /// The literals whose form pyoxigraph's store may change are asked of `forms` as they
    /// come; one that changes is refused (`refuse`) or replaced by its stored form.
    pub fn set_forms(&mut self, forms: Box<Forms>, refuse: bool) {
        self.forms = Some(forms);
        self.refuse_changed = refuse;
    }

    /// What is called before each read ([`Wait`]).
    pub fn set_wait(&mut self, wait: Option<Wait>) {
        self.wait = wait;
    }

    /// The id of a term the caller refers to (a query's constant): never swept.
    pub fn pin(&mut self, term: oxrdf::TermRef<'_>) -> TermId {
        let id = self.terms.intern_ref(term).0;
        self.pinned.push(id);
        id
    }

    pub fn terms(&self) -> &Terms {
        &self.terms
    }

    /// Changes whenever ids may have been given to other terms (a sweep, a new reading).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether event `k` is there (reading on as far as needed); a refusal of the file.
    pub fn has(&mut self, k: usize) -> Result<bool, Refused> {
        while k >= self.complete() && !self.done {
            let t0 = Instant::now();
            let got = self.pull();
            self.read_time += t0.elapsed();
            if let Err(why) = got {
                self.done = true;
                return Err(Refused(format!(
                    "the native reader does not take the file: {why}"
                )));
            }
        }
        Ok(k < self.complete())
    }

    /// Event `k`'s time (`has(k)` was true, and `k` not let go of).
    pub fn time(&self, k: usize) -> i64 {
        self.reader.ev.times[k - self.reader.base]
    }

    /// Event `k`'s triples.
    pub fn triples_of(&self, k: usize) -> &[[TermId; 3]] {
        self.reader.ev.triples_of(k - self.reader.base)
    }

    /// The caller is done with the events before `below`.
    pub fn release(&mut self, below: usize) {
        self.released = self.released.max(below);
        let held = self.released.saturating_sub(self.reader.base);
        if held >= 1024 && 2 * held >= self.reader.ev.len() {
            self.drop_released();
        }
    }

    fn drop_released(&mut self) {
        let before = self.reader.ev.triples.len();
        self.reader.drop_before(self.released);
        self.triples_before += (before - self.reader.ev.triples.len()) as u64;
    }

    /// The events read (all of them once the file is read through).
    pub fn events(&self) -> usize {
        self.reader.read()
    }

    /// Their triples.
    pub fn triples(&self) -> u64 {
        self.triples_before + self.reader.ev.triples.len() as u64
    }

    /// (sweeps, the most terms held at once, seconds reading).
    pub fn stats(&self) -> (u64, usize, f64) {
        (
            self.sweeps,
            self.peak_terms.max(self.terms.len()),
            self.read_time.as_secs_f64(),
        )
    }

    /// Why rsep's own reader gave the file up, once: the caller throws away what it wrote
    /// and runs again, on [`Source::restart`]'s reading by oxttl from the start.
    pub fn slower(&mut self) -> Option<String> {
        self.slower.take()
    }

    /// Read again from the file's start, by oxttl (the pinned terms keep their ids).
    pub fn restart(&mut self) -> Result<(), String> {
        self.rewind(false)?;
        self.sweep();
        Ok(())
    }

    /// Back to the file's start, nothing read (by rsep's own reader first, if `fast` and
    /// the reading was); the dictionary not swept.
    fn rewind(&mut self, fast: bool) -> Result<(), String> {
        self.file.rewind().map_err(|e| e.to_string())?;
        self.fast = fast && self.fast;
        self.reader = Reader::new(&self.points, Vec::new(), false);
        self.declared = Declared::default();
        self.parser = Parser::new(self.opts.format);
        self.lines = crate::nquads::Lines::default();
        self.pending.clear();
        self.pos = 0;
        self.eof = false;
        self.short = false;
        self.ended = false;
        self.carry.clear();
        self.carry_at = 0;
        self.done = false;
        self.records = 0;
        self.released = 0;
        self.triples_before = 0;
        Ok(())
    }

    /// The events an operator may have: all read but the last while its graph may go on.
    fn complete(&self) -> usize {
        self.reader.read() - usize::from(!self.done && self.reader.open())
    }

    /// Read on from the file, `step` bytes at most (into the room past `pending`'s end,
    /// never zeroed first); false at its end.
    fn fill(&mut self, step: usize) -> Result<bool, String> {
        // (a file read through its own reader: std reads a File into the room as it is, where
        // a reader of ours has that room zeroed first at every read)
        let live = self.file.live();
        if let Some(wait) = self.wait.as_mut() {
            wait().map_err(|e| e.to_string())?;
        }
        let got = match &mut self.file {
            Input::File(f) => f.take(step as u64).read_to_end(&mut self.pending),
            // standard input (or its spool) a read at a time: a live pipe's events are taken
            // as they come, not once a whole chunk of them is there
            input => input.read_once(step, &mut self.pending),
        };
        let n = got.map_err(|e| e.to_string())?;
        self.eof = n == 0;
        // (each read of a pipe, or the spool's last, ends a chunk at its last line: the next
        // read may wait for as long as the pipe's writer pauses)
        self.short = n > 0 && (live || self.file.live());
        Ok(n > 0)
    }

    /// The next chunk's end in `pending`: [`Options::chunk`] bytes, then to the line's end
    /// (the file's end); None past the file's end.
    fn chunk(&mut self) -> Result<Option<usize>, String> {
        let want = self.opts.chunk;
        // read a little at a time: what follows the chunk is moved to `pending`'s start
        let step = want.clamp(1 << 12, 1 << 16);
        let end = loop {
            if self.pending.len() > want {
                if let Some(nl) = memchr::memchr(b'\n', &self.pending[want..]) {
                    break want + nl + 1;
                }
            }
            if self.short {
                // a pipe's whole lines so far are a chunk (a smaller chunk only makes the
                // record bound tighter)
                if let Some(nl) = memchr::memrchr(b'\n', &self.pending) {
                    break nl + 1;
                }
            }
            if self.eof || !self.fill(step)? {
                break self.pending.len();
            }
        };
        if end == 0 && self.pos > 0 && self.ended {
            return Ok(None);
        }
        if self.pending.len() == end && !self.eof && !self.file.live() {
            // whether this chunk is the last one: its reading ends the document (a pipe is
            // not waited on for that: its events are read as they come, and an empty last
            // chunk ends the document at the pipe's end)
            self.fill(step)?;
        }
        Ok(Some(end))
    }

    /// Read one more chunk into events.
    fn pull(&mut self) -> Result<(), String> {
        let start = self.pos;
        let Some(end) = self.chunk()? else {
            self.done = true;
            return Ok(());
        };
        let last = self.eof && self.pending.len() == end;
        self.ended = last;
        let piece = &self.pending[..end];
        if std::str::from_utf8(piece).is_err() {
            return Err("the file is not UTF-8 throughout".into());
        }
        if crate::nquads::bounded(self.opts.format) && has_long_string(piece) {
            return Err("the file holds a long (triple-quoted) string".into());
        }
        let nquads = self.opts.format == Format::NQuads;
        if self.fast {
            if self.carry.is_empty() {
                self.carry_at = start;
            }
            self.carry.extend_from_slice(piece);
        } else {
            self.parser.extend_from_slice(piece);
        }
        self.pending.drain(..end);
        self.pos += end;
        if !self.small && self.max_record < 8 * CHUNK {
            return Err(format!(
                "the record limit ({}) is too small to bound records by chunks",
                self.max_record
            ));
        }
        self.reader.cuts.push(self.pos);
        self.reader.whole = last;
        let fresh = self.reader.ev.triples.len();
        if nquads && self.fast {
            // (whole lines: read at once, nothing carried to the next chunk)
            let ci = (self.reader.cuts.len() - 1) as u32;
            let text = std::str::from_utf8(&self.carry).expect("UTF-8, checked");
            self.lines
                .read(text, &mut self.terms, &mut self.reader, ci)?;
            self.carry.clear();
            if last {
                self.reader.end()?;
            }
        } else if self.fast {
            let upto = if last {
                self.carry.len()
            } else {
                boundary(&self.carry)
            };
            if upto > 0 {
                let text = std::str::from_utf8(&self.carry[..upto]).expect("UTF-8, cut at a line");
                self.reader.offset = self.carry_at;
                let got = read_on(text, &mut self.terms, &mut self.reader, &mut self.declared);
                if let Err(e) = got {
                    return self.give_up(format!("{e:?}"));
                }
                self.carry.drain(..upto);
                self.carry_at += upto;
            }
            if last {
                if let Err(e) = self.reader.end() {
                    return self.give_up(e);
                }
            }
        } else {
            let ci = (self.reader.cuts.len() - 1) as u32;
            if last {
                self.parser.end();
            }
            while let Some(q) = self.parser.parse_next() {
                let q = q.map_err(|e| {
                    let at = e.location().start;
                    format!(
                        "a syntax error at line {} column {}",
                        at.line + 1,
                        at.column + 1
                    )
                })?;
                self.reader.take(q, &mut self.terms, ci)?;
            }
            if last {
                self.reader.end()?;
            }
        }
        if !self.small {
            let end = last.then_some(self.pos);
            match self
                .reader
                .check_records(self.records, end, self.max_record)
            {
                Ok(next) => self.records = next,
                Err(e) if self.fast => return self.give_up(e),
                Err(e) => return Err(e),
            }
        }
        self.stored_forms(fresh)?;
        if last {
            self.done = true;
        }
        self.peak_terms = self.peak_terms.max(self.terms.len());
        if self.terms.len() >= self.next_sweep {
            if self.holding {
                self.due = true;
            } else {
                self.sweep();
            }
        }
        Ok(())
    }

    /// rsep's own reader gave up (or refused): oxttl's reading decides, from the start.
    fn give_up(&mut self, why: String) -> Result<(), String> {
        self.slower = Some(why.clone());
        Err(why)
    }

    /// The stored forms of the literals of the triples from `fresh` on, asked once each.
    fn stored_forms(&mut self, fresh: usize) -> Result<(), String> {
        let Some(forms) = self.forms.as_mut() else {
            return Ok(());
        };
        let mut ask = Vec::new();
        let mut ids = Vec::new();
        for t in &self.reader.ev.triples[fresh..] {
            let o = t[2];
            if bit(&self.asked, o) {
                continue;
            }
            set(&mut self.asked, o);
            if let Some(term) = self.terms.term(o) {
                if !stable_literal(term) {
                    ask.push(term.to_string());
                    ids.push(o);
                }
            }
        }
        if !ask.is_empty() {
            let changed = forms(ask)?;
            if let Some((from, _)) = changed.first() {
                if self.refuse_changed {
                    return Err(format!(
                        "a literal pyoxigraph's store reads back in another form: {from}"
                    ));
                }
            }
            for (from, to) in &changed {
                let parse = |s: &str| {
                    s.parse::<oxrdf::Term>()
                        .map_err(|e| format!("not an N-Triples term: {s}: {e}"))
                };
                let (a, b) = (parse(from)?, parse(to)?);
                if let Some(a) = self.terms.get(&a) {
                    let b = self.terms.intern(b);
                    self.restored.insert(a, b);
                }
            }
        }
        if !self.restored.is_empty() {
            for t in &mut self.reader.ev.triples[fresh..] {
                if let Some(&to) = self.restored.get(&t[2]) {
                    t[2] = to;
                }
            }
        }
        Ok(())
    }

    /// Free every term nothing held refers to.
    fn sweep(&mut self) {
        self.sweep_keeping(&[]);
    }

    /// [`Source::sweep`], the terms of `held` kept too (the operator's own).
    fn sweep_keeping(&mut self, held: &[TermId]) {
        self.drop_released();
        let mut live = vec![0u64; self.terms.slots().div_ceil(64)];
        for &id in self.pinned.iter().chain(held) {
            set(&mut live, id);
        }
        self.mark(&mut live);
        self.terms.sweep(&live);
        self.swept(&live, self.terms.len());
    }

    /// Set the bits of the ids the events still held refer to (and the graph being read).
    fn mark(&self, live: &mut Vec<u64>) {
        for t in &self.reader.ev.triples {
            for &id in t {
                set(live, id);
            }
        }
        if let Some(g) = self.reader.current() {
            set(live, g);
        }
    }

    /// The dictionary was swept keeping `live` (it holds `len` terms now): what this
    /// reading keeps of ids forgets the others.
    fn swept(&mut self, live: &[u64], len: usize) {
        for (w, l) in self
            .reader
            .seen
            .iter_mut()
            .zip(live.iter().chain(std::iter::repeat(&0)))
        {
            *w &= l;
        }
        for (w, l) in self
            .asked
            .iter_mut()
            .zip(live.iter().chain(std::iter::repeat(&0)))
        {
            *w &= l;
        }
        // a literal as written is not held once replaced: asked again if it comes again
        self.restored.clear();
        self.generation += 1;
        self.sweeps += 1;
        self.due = false;
        // (a threshold of 0: a sweep after every chunk, for the tests)
        self.next_sweep = if self.opts.sweep == 0 {
            0
        } else {
            self.opts.sweep.max(2 * len)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::read_events;

    const PROV: &str = "http://www.w3.org/ns/prov#generatedAtTime";

    fn file(doc: &str) -> tempfile_path::Path {
        tempfile_path::Path::new(doc)
    }

    mod tempfile_path {
        pub struct Path(pub std::path::PathBuf);
        impl Path {
            pub fn new(doc: &str) -> Self {
                use std::sync::atomic::{AtomicUsize, Ordering};
                static N: AtomicUsize = AtomicUsize::new(0);
                let p = std::env::temp_dir().join(format!(
                    "rsep-source-{}-{}.trig",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::write(&p, doc).unwrap();
                Self(p)
            }
            pub fn as_str(&self) -> &str {
                self.0.to_str().unwrap()
            }
        }
        impl Drop for Path {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }

    /// Every event as (time, its triples' terms), read in parts and let go of at once.
    fn parts(doc: &str, opts: Options) -> Result<Vec<(i64, Vec<String>)>, String> {
        parts_within(doc, opts, 1 << 26)
    }

    fn parts_within(
        doc: &str,
        opts: Options,
        max_record: usize,
    ) -> Result<Vec<(i64, Vec<String>)>, String> {
        let f = file(doc);
        let mut src = Source::open(f.as_str(), vec![PROV.into()], max_record, opts)?;
        let mut out = Vec::new();
        let mut k = 0;
        loop {
            match src.has(k) {
                Ok(true) => {}
                Ok(false) => break,
                Err(Refused(why)) => {
                    if src.slower().is_some() {
                        src.restart()?;
                        out.clear();
                        k = 0;
                        continue;
                    }
                    return Err(why);
                }
            }
            let show = |id| src.terms().term(id).unwrap().to_string();
            let ts = src
                .triples_of(k)
                .iter()
                .map(|t| format!("{} {} {}", show(t[0]), show(t[1]), show(t[2])))
                .collect();
            out.push((src.time(k), ts));
            k += 1;
            src.release(k);
        }
        Ok(out)
    }

    fn whole(doc: &str) -> Result<Vec<(i64, Vec<String>)>, String> {
        whole_within(doc, 1 << 26)
    }

    fn whole_within(doc: &str, max_record: usize) -> Result<Vec<(i64, Vec<String>)>, String> {
        let mut terms = Terms::new();
        let ev = read_events(doc.as_bytes(), &mut terms, &[PROV.into()], max_record)?;
        let show = |id| terms.term(id).unwrap().to_string();
        Ok((0..ev.len())
            .map(|k| {
                let ts = ev
                    .triples_of(k)
                    .iter()
                    .map(|t| format!("{} {} {}", show(t[0]), show(t[1]), show(t[2])))
                    .collect();
                (ev.times[k], ts)
            })
            .collect())
    }

    fn tiny(fast: bool) -> Options {
        Options {
            chunk: 7,
            sweep: 0,
            fast,
            format: Format::TriG,
        }
    }

    #[test]
    fn parts_give_the_whole_files_events() {
        let t = "<http://www.w3.org/ns/prov#generatedAtTime>";
        let mut doc = String::from("@prefix : <http://e/> .\n");
        for k in 0..200 {
            doc += &format!(
                ":g{k} {t} {} .\n:g{k} {{ :s{} :p \"v{k}\" .\n :s :q {k} }}\n",
                k / 3,
                k % 7
            );
            if k % 50 == 7 {
                // the same graph's second block goes on its event; a `}` in a comment
                doc += &format!(":g{k} {{ :x :p :y }} # }}\n");
            }
        }
        let want = whole(&doc).unwrap();
        assert_eq!(want.len(), 200);
        for fast in [true, false] {
            assert_eq!(parts(&doc, tiny(fast)).unwrap(), want);
            assert_eq!(
                parts(
                    &doc,
                    Options {
                        fast,
                        ..Options::default()
                    }
                )
                .unwrap(),
                want
            );
        }
        // a `}` line inside a block: rsep's reader fails on the part, oxttl reads it all
        let doc2 = doc.replace(":s :q 7 }", ":s :q 7 . # }\n}");
        assert_eq!(parts(&doc2, tiny(true)).unwrap(), whole(&doc2).unwrap());
    }

    #[test]
    fn standard_input_is_spooled_and_read_again_from_its_start() {
        // (a file stands for the pipe: read once, through the spool)
        let t = "<http://www.w3.org/ns/prov#generatedAtTime>";
        let mut doc = String::new();
        for k in 0..30_000 {
            doc += &format!("<g:{k}> {t} {k} .\n<g:{k}> {{ <s:s> <p:p> \"v{k}\" }}\n");
        }
        // the first read (a pipe's chunk: its whole lines) ending in a `}` line inside a
        // block (a comment): rsep's reader gives the input up, oxttl reads it again from its
        // start (a comment line first, padded so that the first read's last line is that
        // one: `# }`'s line end at byte READ - 1)
        const READ: usize = 1 << 16;
        let at = memchr::memrchr(b'\n', &doc.as_bytes()[..READ - 100]).unwrap();
        assert!(doc[..at].ends_with('}'));
        let pad = READ - 5 - at;
        let doc = format!(
            "#{}\n{} # }}\n}}{}",
            " ".repeat(pad),
            &doc[..at - 2],
            &doc[at..]
        );
        let want = whole(&doc).unwrap();
        let f = file(&doc);
        let spool = file("");
        let input = Input::Spooled {
            stdin: std::fs::File::open(f.as_str()).unwrap(),
            spool: std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(spool.as_str())
                .unwrap(),
            len: 0,
            at: 0,
        };
        let opts = Options::default();
        let mut src = Source::reading(input, None, vec![PROV.into()], 1 << 26, opts).unwrap();
        let mut got = Vec::new();
        let mut k = 0;
        let mut restarts = 0;
        loop {
            match src.has(k) {
                Ok(true) => {}
                Ok(false) => break,
                Err(Refused(why)) => {
                    assert!(src.slower().is_some(), "{why}");
                    src.restart().unwrap();
                    restarts += 1;
                    (got, k) = (Vec::new(), 0);
                    continue;
                }
            }
            got.push(src.time(k));
            k += 1;
            src.release(k);
        }
        assert_eq!(restarts, 1);
        assert_eq!(got, want.iter().map(|e| e.0).collect::<Vec<_>>());
        // the spool holds the input whole, read from its start
        let mut held = String::new();
        let mut fd = std::fs::File::from(src.spool().unwrap());
        fd.read_to_string(&mut held).unwrap();
        assert_eq!(held, doc);
    }

    #[test]
    fn a_file_over_the_record_limit_has_its_records_bounded_as_read_whole() {
        // over 8 MiB, the record limit 8 chunks: each event's record bound is checked,
        // its next event's time in a chunk read later (rsep's reader's lookahead)
        let t = "<http://www.w3.org/ns/prov#generatedAtTime>";
        let mut doc = String::new();
        let mut k = 0;
        while doc.len() < 9 * CHUNK {
            doc += &format!("<g:{k}> {t} {k} .\n<g:{k}> {{ <s:s> <p:p> \"v{k}\" }}\n");
            k += 1;
        }
        let want = whole_within(&doc, 8 * CHUNK).unwrap();
        for fast in [true, false] {
            let opts = Options {
                fast,
                ..Options::default()
            };
            assert_eq!(parts_within(&doc, opts, 8 * CHUNK).unwrap(), want);
            let err = parts_within(&doc, opts, 2 * CHUNK).unwrap_err();
            assert!(err.contains("too small"), "{err}");
        }
    }

    #[test]
    fn a_graph_name_again_once_forgotten_is_taken() {
        let t = "<http://www.w3.org/ns/prov#generatedAtTime>";
        let doc = format!(
            "<g:0> {t} 1 .\n<g:0> {{ <s:s> <p:p> 1 }}\n<g:1> {t} 2 .\n<g:1> {{ <s:s> <p:p> 2 }}\n\
             <g:0> {t} 3 .\n<g:0> {{ <s:s> <p:p> 3 }}\n"
        );
        // held, the name given again is refused (as the whole file's reading refuses it)
        let held = Options {
            chunk: 7,
            sweep: 1 << 20,
            fast: true,
            format: Format::TriG,
        };
        assert!(parts(&doc, held)
            .unwrap_err()
            .contains("a graph name given twice"));
        assert_eq!(parts(&doc, tiny(true)).unwrap().len(), 3);
    }

    #[test]
    fn refusals_are_the_whole_files() {
        let t = "<http://www.w3.org/ns/prov#generatedAtTime>";
        for (doc, why) in [
            (format!("<g:0> {t} 2 .\n<g:0> {{ <s:s> <p:p> 1 }}\n<g:1> {t} 1 .\n<g:1> {{ <s:s> <p:p> 1 }}\n"), "a time before"),
            (format!("<g:0> {t} 1 .\n<g:0> {{ <s:s> <p:p> }}\n"), "a syntax error"),
            (format!("<g:0> {t} 1 .\n<g:0> {{ }}\n"), "the last time"),
            (format!("<g:0> {t} 1 .\n<g:0> {{ <s:s> <p:p> \"\"\"x\"\"\" }}\n"), "long"),
        ] {
            for fast in [true, false] {
                let got = parts(&doc, tiny(fast)).unwrap_err();
                assert!(got.contains(why), "{doc:?}: {got:?}");
            }
        }
    }

    #[test]
    fn an_empty_window_skipped_keeps_the_events_the_last_evaluation_is_of() {
        // DSTREAM, non-empty windows: the close at 3 is skipped, and the close at 4 deletes
        // the close at 2's row: its terms must outlive a sweep after every chunk
        use crate::select::{run, run_on, R2s, Slot, Spec};
        let t = "<http://www.w3.org/ns/prov#generatedAtTime>";
        let doc = format!(
            "<http://g/0> {t} 2 .\n<http://g/0> {{ <http://e/a> <http://e/p> \"v0\" . }}\n\
             <http://g/1> {t} 4 .\n<http://g/1> {{ <http://e/a> <http://e/p> \"v1\" . }}\n\
             <http://g/2> {t} 4 .\n<http://g/2> {{ <http://e/a> <http://e/p> <http://e/a> . }}\n\
             <http://g/3> {t} 7 .\n<http://g/3> {{ <http://e/b> <http://e/p> \"v3\" . }}\n"
        );
        for r2s in [R2s::DStream, R2s::IStream] {
            let spec = Spec {
                range: 1,
                step: 1,
                offset: 0,
                origin: 0,
                right_closed: true,
                non_empty: true,
                r2s,
                pattern: [Slot::Var(0), Slot::Var(1), Slot::Var(2)],
                loose: [None; 3],
                project: vec![("o".into(), Some(2))],
                max_window_triples: 1 << 20,
                max_results: 1 << 20,
                tsv: false,
            };
            let mut terms = Terms::new();
            let ev = read_events(doc.as_bytes(), &mut terms, &[PROV.into()], 1 << 26).unwrap();
            let mut want = Vec::new();
            run(&spec, &ev, &terms, &mut want).unwrap().unwrap();
            for fast in [true, false] {
                let f = file(&doc);
                let mut src =
                    Source::open(f.as_str(), vec![PROV.into()], 1 << 26, tiny(fast)).unwrap();
                let mut got = Vec::new();
                run_on(&spec, &mut src, &mut got).unwrap().unwrap();
                assert_eq!(
                    String::from_utf8(got).unwrap(),
                    String::from_utf8(want.clone()).unwrap()
                );
            }
        }
    }

    /// Every merged event as (stream, time, its triples' terms), the files read in parts,
    /// each event let go of at once (and the dictionary swept after every chunk).
    fn merged_parts(
        docs: &[String],
        opts: Options,
    ) -> Result<Vec<(usize, i64, Vec<String>)>, String> {
        let files: Vec<_> = docs.iter().map(|d| file(d)).collect();
        let paths: Vec<String> = files.iter().map(|f| f.as_str().to_owned()).collect();
        let mut src = Merged::open(
            &paths,
            &vec![Format::TriG; paths.len()],
            vec![PROV.into()],
            1 << 26,
            opts,
        )?;
        let pinned = src.pin(
            oxrdf::NamedNode::new_unchecked("http://e/pinned")
                .as_ref()
                .into(),
        );
        let mut out = Vec::new();
        let mut k = 0;
        loop {
            match src.has(k) {
                Ok(true) => {}
                Ok(false) => break,
                Err(Refused(why)) => {
                    if src.slower().is_some() {
                        src.restart()?;
                        out.clear();
                        k = 0;
                        continue;
                    }
                    return Err(why);
                }
            }
            let show = |id| src.terms().term(id).unwrap().to_string();
            let ts = src
                .triples_of(k)
                .iter()
                .map(|t| format!("{} {} {}", show(t[0]), show(t[1]), show(t[2])))
                .collect();
            out.push((src.stream(k), src.time(k), ts));
            k += 1;
            src.release(k);
        }
        assert_eq!(
            src.terms().term(pinned).unwrap().to_string(),
            "<http://e/pinned>"
        );
        assert_eq!(src.events(), out.len());
        Ok(out)
    }

    fn merged_whole(docs: &[String]) -> Result<Vec<(usize, i64, Vec<String>)>, String> {
        let mut terms = Terms::new();
        let mut evs = Vec::new();
        for d in docs {
            evs.push(read_events(
                d.as_bytes(),
                &mut terms,
                &[PROV.into()],
                1 << 26,
            )?);
        }
        let mut m = WholeMerge::new(evs.iter().collect(), &terms);
        let show = |id| terms.term(id).unwrap().to_string();
        let mut out = Vec::new();
        let mut k = 0;
        while m.has(k).unwrap() {
            let ts = m
                .triples_of(k)
                .iter()
                .map(|t| format!("{} {} {}", show(t[0]), show(t[1]), show(t[2])))
                .collect();
            out.push((m.stream(k), m.time(k), ts));
            k += 1;
        }
        Ok(out)
    }

    /// Stream `name`'s file: `n` events, times from `times`, shared terms across files.
    fn stream_doc(name: &str, times: &[i64]) -> String {
        let t = "<http://www.w3.org/ns/prov#generatedAtTime>";
        let mut doc = String::from("@prefix : <http://e/> .\n");
        for (k, time) in times.iter().enumerate() {
            doc += &format!(
                ":{name}{k} {t} {time} .\n:{name}{k} {{ :s{} :p \"v{}\" .\n :s :q {k} }}\n",
                k % 5,
                time % 4
            );
            if k % 9 == 4 {
                // the same graph's second block goes on its event
                doc += &format!(":{name}{k} {{ :x :p :{name} }}\n");
            }
        }
        doc
    }

    #[test]
    fn merged_files_give_the_merge_of_the_whole_files() {
        // equal times across the files (the first file's first), a file ending first, one
        // with no events, one file alone
        let a: Vec<i64> = (0..60).map(|k| k / 2).collect();
        let b: Vec<i64> = (0..45).map(|k| 1 + (2 * k) / 3).collect();
        let c: Vec<i64> = (0..20).map(|k| 3 * k).collect();
        let sets = [
            vec![
                stream_doc("a", &a),
                stream_doc("b", &b),
                stream_doc("c", &c),
            ],
            vec![stream_doc("c", &c), stream_doc("a", &a)],
            vec![stream_doc("b", &b), String::new(), stream_doc("a", &a)],
            vec![stream_doc("a", &a)],
        ];
        for docs in &sets {
            let want = merged_whole(docs).unwrap();
            assert_eq!(
                want.len(),
                docs.iter()
                    .map(|d| d.matches("{ :s").count())
                    .sum::<usize>()
            );
            for fast in [true, false] {
                assert_eq!(&merged_parts(docs, tiny(fast)).unwrap(), &want);
                let opts = Options {
                    fast,
                    ..Options::default()
                };
                assert_eq!(&merged_parts(docs, opts).unwrap(), &want);
            }
        }
        // a `}` line inside a block of the second file: rsep's reader gives that file up,
        // every file is read again, that one by oxttl
        let docs = [
            stream_doc("a", &a),
            stream_doc("b", &b).replace(":s :q 7 }", ":s :q 7 . # }\n}"),
        ];
        assert_eq!(
            merged_parts(&docs, tiny(true)).unwrap(),
            merged_whole(&docs).unwrap()
        );
    }

    #[test]
    fn a_merged_files_refusal_is_its_own_and_names_it() {
        let t = "<http://www.w3.org/ns/prov#generatedAtTime>";
        let good = stream_doc("a", &[1, 2, 3, 4]);
        let back = format!(
            "<g:0> {t} 2 .\n<g:0> {{ <s:s> <p:p> 1 }}\n<g:1> {t} 1 .\n<g:1> {{ <s:s> <p:p> 1 }}\n"
        );
        for fast in [true, false] {
            let got = merged_parts(&[good.clone(), back.clone()], tiny(fast)).unwrap_err();
            assert!(
                got.contains("a time before") && got.contains("rsep-source-"),
                "{got}"
            );
        }
    }

    #[test]
    fn a_merge_holding_sweeps_only_when_asked_keeping_what_it_is_given() {
        let docs: Vec<String> = (0..2)
            .map(|i| {
                let t = "<http://www.w3.org/ns/prov#generatedAtTime>";
                let mut doc = String::new();
                for k in 0..3000 {
                    doc += &format!(
                        "<g:{i}-{k}> {t} {k} .\n<g:{i}-{k}> {{ <s:s> <p:p> \"v{i}-{k}\" }}\n"
                    );
                }
                doc
            })
            .collect();
        let files: Vec<_> = docs.iter().map(|d| file(d)).collect();
        let paths: Vec<String> = files.iter().map(|f| f.as_str().to_owned()).collect();
        let opts = Options {
            chunk: 512,
            sweep: 64,
            fast: true,
            ..Options::default()
        };
        let mut src = Merged::open(
            &paths,
            &vec![Format::TriG; paths.len()],
            vec![PROV.into()],
            1 << 26,
            opts,
        )
        .unwrap();
        src.hold();
        // the first event's object kept past its release, as an operator's state
        assert!(src.has(0).unwrap());
        let kept = src.triples_of(0)[0][2];
        let mut k = 0;
        let mut gen = src.generation();
        while src.has(k).unwrap() {
            assert_eq!(src.time(k), (k / 2) as i64);
            assert_eq!(src.stream(k), k % 2);
            assert_eq!(src.generation(), gen, "swept while reading on");
            k += 1;
            src.release(k);
            if src.due() {
                src.sweep_holding(&[kept]);
                gen = src.generation();
            }
        }
        assert_eq!(k, 6000);
        let (sweeps, peak, _) = src.stats();
        assert!(sweeps > 10, "{sweeps}");
        assert!(peak < 3000, "{peak}");
        assert_eq!(src.terms().term(kept).unwrap().to_string(), "\"v0-0\"");
    }

    #[test]
    fn sweeps_keep_the_dictionary_bounded() {
        let t = "<http://www.w3.org/ns/prov#generatedAtTime>";
        let mut doc = String::new();
        for k in 0..20_000 {
            doc += &format!("<g:{k}> {t} {k} .\n<g:{k}> {{ <s:s> <p:p> \"v{k}\" }}\n");
        }
        let f = file(&doc);
        let opts = Options {
            chunk: 4096,
            sweep: 256,
            fast: true,
            format: Format::TriG,
        };
        let mut src = Source::open(f.as_str(), vec![PROV.into()], 1 << 26, opts).unwrap();
        let mut k = 0;
        while src.has(k).unwrap() {
            assert_eq!(src.time(k), k as i64);
            k += 1;
            src.release(k.saturating_sub(10));
        }
        let (sweeps, peak, _) = src.stats();
        assert_eq!(k, 20_000);
        assert!(sweeps > 10, "{sweeps}");
        // the events held (let go of by 1024 at least) and their terms, twice over at most:
        // 40,000 terms unswept
        assert!(peak < 10_000, "{peak}");
    }
}
