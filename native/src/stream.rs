//! rsep's stream files (TriG, one named graph an event, its time a triple about the graph in
//! the default graph) read into events of ids, for the shape the native path takes.
//!
//! rsep's Python reader (rsep/stream/files.py, assembly.py) accepts far more than this shape,
//! and rejects records with located errors, dead-letter records and lateness rules. This
//! reader promises to give exactly the events that reader gives only for the files whose
//! every statement is of the common shape, so it *refuses* (with a reason) any file holding
//! anything else, and the caller then runs today's path on it, which decides as it always did:
//!
//! - the whole file is UTF-8 and parses without one syntax error;
//! - the quads alternate: one default-graph quad `<g> <P> "n"^^xsd:integer` (P one of the
//!   point-time predicates, n ASCII digits), then one or more quads of graph `<g>` (a named
//!   node never seen before), and so on to the end;
//! - no blank node anywhere (rsep renames them per event), times never go back (a late
//!   event is rejected there), and no record can be over the record size limit.

use crate::dictionary::{TermId, Terms};
use crate::nquads::Parser;
use crate::reader::Format;
use oxrdf::vocab::xsd;
use oxrdf::{GraphName, NamedNodeRef, NamedOrBlankNode, Quad, Term, TermRef};

/// How much text the parser is fed at once: cut at the line end after this many bytes, so
/// that each quad is known to come out of a chunk (or the next: one token of lookahead).
pub const CHUNK: usize = 1 << 20;

/// The digits of a time rsep reads as an integer without a second look (stream/time.py's
/// MAX_DIGITS is 1000; an i64 holds 18 digits whatever they are).
const MAX_TIME_DIGITS: usize = 18;

/// A stream file's events: each one's time and the ids of its triples (subject, predicate,
/// object), in file order.
#[derive(Default, Debug)]
pub struct Events {
    pub times: Vec<i64>,
    /// event k's triples are `triples[offsets[k]..offsets[k + 1]]`
    pub offsets: Vec<u32>,
    pub triples: Vec<[TermId; 3]>,
}

impl Events {
    pub fn len(&self) -> usize {
        self.times.len()
    }

    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    pub fn triples_of(&self, k: usize) -> &[[TermId; 3]] {
        &self.triples[self.offsets[k] as usize..self.offsets[k + 1] as usize]
    }
}

#[derive(Clone, Copy)]
enum State {
    Start,
    /// a time read for this graph (its id), no triple of it yet
    Timed(TermId),
    /// in the triples of this graph
    Content(TermId),
}

/// Read `data` into events of `terms`' ids, or say why this reader does not take it.
/// `points`: the point-time predicates' IRIs; `max_record`: the record size limit in
/// characters (a record over it is rejected by rsep's reader).
///
/// The file is read by rsep's own TriG reader ([`crate::trig`]) where it keeps to that
/// reader's subset, else by oxttl; the two give the same events, the same ids in the same
/// order, and any refusal is oxttl's reading's.
pub fn read_events(
    data: &[u8],
    terms: &mut Terms,
    points: &[String],
    max_record: usize,
) -> Result<Events, String> {
    read_events_with(data, terms, points, max_record, true)
}

/// [`read_events`], with rsep's own TriG reader tried first or not (`fast`): the tests
/// and the benchmarks compare the two.
pub fn read_events_with(
    data: &[u8],
    terms: &mut Terms,
    points: &[String],
    max_record: usize,
    fast: bool,
) -> Result<Events, String> {
    read_events_as(data, Format::TriG, terms, points, max_record, fast)
}

/// [`read_events_with`] of a file in `format`: TriG, or N-Quads (read by oxttl, with no
/// record bound: [`crate::nquads`]).
pub fn read_events_as(
    data: &[u8],
    format: Format,
    terms: &mut Terms,
    points: &[String],
    max_record: usize,
    fast: bool,
) -> Result<Events, String> {
    let format = crate::nquads::stream_format(format)?;
    let Ok(text) = std::str::from_utf8(data) else {
        return Err("the file is not UTF-8 throughout".into());
    };
    let bounded = crate::nquads::bounded(format);
    if bounded && has_long_string(data) {
        // a long string's token spans lines: the record bound below needs one-line tokens
        return Err("the file holds a long (triple-quoted) string".into());
    }
    let cuts = chunk_ends(data);
    let small = !bounded || data.len() <= max_record;
    if !small && max_record < 8 * CHUNK {
        return Err(format!(
            "the record limit ({max_record}) is too small to bound records by chunks"
        ));
    }
    let mark = terms.len();
    // a stream file's terms are mostly new ones (each observation's IRIs and values): the
    // dictionary grown once, at about one term per 100 bytes of the file and their text at
    // most the file's, not by doubling (room reserved and not used is never touched)
    terms.reserve(data.len() / 100, data.len());
    if fast && format == Format::TriG {
        let mut r = Reader::new(points, cuts.clone(), true);
        if crate::trig::read(text, terms, &mut r).is_ok() {
            if let Ok(ev) = r.finish(small, data.len(), max_record) {
                return Ok(ev);
            }
        }
        // outside the subset, or refused: oxttl's reading decides, from a clean dictionary
        terms.truncate(mark);
    }
    let mut r = Reader::new(points, cuts.clone(), true);
    if fast && format == Format::NQuads {
        // rsep's own reader line by line, oxttl where it does not take a line (a chunk's
        // rest): the quads and refusals of oxttl's reading alone ([`crate::nquads::Lines`])
        let mut lines = crate::nquads::Lines::default();
        let mut start = 0;
        for (ci, &end) in cuts.iter().enumerate() {
            lines.read(&text[start..end], terms, &mut r, ci as u32)?;
            start = end;
        }
        return r.finish(small, data.len(), max_record);
    }
    let mut parser = Parser::new(format);
    let mut start = 0;
    for (ci, &end) in cuts.iter().enumerate() {
        parser.extend_from_slice(&data[start..end]);
        start = end;
        if ci + 1 == cuts.len() {
            parser.end();
        }
        while let Some(q) = parser.parse_next() {
            let q = q.map_err(|e| {
                let at = e.location().start;
                format!(
                    "a syntax error at line {} column {}",
                    at.line + 1,
                    at.column + 1
                )
            })?;
            r.take(q, terms, ci as u32)?;
        }
    }
    r.finish(small, data.len(), max_record)
}

/// The longest term (an IRI, a literal's lexical form) the native reader takes.
pub(crate) const MAX_TERM_BYTES: usize = 1 << 20;

fn term_len(t: TermRef<'_>) -> usize {
    match t {
        TermRef::NamedNode(n) => n.as_str().len(),
        TermRef::Literal(l) => l.value().len(),
        #[allow(unreachable_patterns)]
        _ => 0,
    }
}

/// The events as the quads come, from either reader, and the chunks each event's quads
/// came out of (for the record bound).
///
/// A file read in parts (native/src/source.rs) keeps only the events not yet let go of:
/// `ev` holds events `base..`, the chunks' records events `cbase..`.
pub(crate) struct Reader {
    points: Vec<String>,
    /// the last event's time (its event may have been let go of)
    last_time: Option<i64>,
    pub(crate) ev: Events,
    /// the absolute index of `ev`'s first event
    pub(crate) base: usize,
    /// the graph names given, a bit an id (a graph name whose term a sweep freed is known
    /// no more: rsep's reader takes a graph name again once its event is complete, so
    /// only the ones still referred to need the check)
    pub(crate) seen: Vec<u64>,
    state: State,
    // per event from `cbase`, the chunk its time quad came out of and the one its last
    // triple came out of
    time_chunk: Vec<u32>,
    last_chunk: Vec<u32>,
    cbase: usize,
    /// rsep's own reader: the chunk holding the byte offset last asked about
    cursor: usize,
    /// the chunks' ends known so far; `whole`: all of them (the last is the file's end)
    pub(crate) cuts: Vec<usize>,
    pub(crate) whole: bool,
    /// where the part rsep's own reader is given starts in the file
    pub(crate) offset: usize,
}

impl Reader {
    pub(crate) fn new(points: &[String], cuts: Vec<usize>, whole: bool) -> Self {
        let mut ev = Events::default();
        ev.offsets.push(0);
        Self {
            points: points.to_vec(),
            last_time: None,
            ev,
            base: 0,
            seen: Vec::new(),
            state: State::Start,
            time_chunk: Vec::new(),
            last_chunk: Vec::new(),
            cbase: 0,
            cursor: 0,
            cuts,
            whole,
            offset: 0,
        }
    }

    /// The id of the graph whose event is being read, if any (a sweep keeps it).
    pub(crate) fn current(&self) -> Option<TermId> {
        match self.state {
            State::Start => None,
            State::Timed(g) | State::Content(g) => Some(g),
        }
    }

    /// Whether the last event read may yet get more triples (no later time came).
    pub(crate) fn open(&self) -> bool {
        !matches!(self.state, State::Start)
    }

    /// How many events were read (from the file's start).
    pub(crate) fn read(&self) -> usize {
        self.base + self.ev.len()
    }

    /// Let go of the events before the absolute index `below`.
    pub(crate) fn drop_before(&mut self, below: usize) {
        let m = below.saturating_sub(self.base).min(self.ev.len());
        if m == 0 {
            return;
        }
        let ev = &mut self.ev;
        let cut = ev.offsets[m];
        ev.times.drain(..m);
        ev.triples.drain(..cut as usize);
        ev.offsets.drain(..m);
        for o in &mut ev.offsets {
            *o -= cut;
        }
        self.base += m;
    }

    /// Let go of the chunks' records of the events before `below` (checked, and not the
    /// event before one still to check).
    fn drop_records_before(&mut self, below: usize) {
        let m = below.saturating_sub(self.cbase).min(self.time_chunk.len());
        let m = m.min(self.last_chunk.len());
        self.time_chunk.drain(..m);
        self.last_chunk.drain(..m);
        self.cbase += m;
    }

    /// The record bound of event `k` (absolute), whose next event's time came (or the
    /// last, at the file's end `len`): its record, from the chunk before the one the event
    /// before it ended in to the chunk the next event's time came out of, is within the
    /// record limit.
    pub(crate) fn check_record(
        &self,
        k: usize,
        len: usize,
        max_record: usize,
    ) -> Result<(), String> {
        let cuts = &self.cuts;
        let chunk_start = |c: u32| if c == 0 { 0 } else { cuts[c as usize - 1] };
        let at = |v: &Vec<u32>, i: usize| v[i - self.cbase];
        let lo = if k == 0 {
            0
        } else {
            chunk_start(at(&self.last_chunk, k - 1).saturating_sub(1))
        };
        let hi = if k + 1 < self.read() {
            cuts[at(&self.time_chunk, k + 1) as usize]
        } else {
            len
        };
        if hi - lo > max_record {
            return Err(format!(
                "event {k}'s record cannot be shown within the record limit"
            ));
        }
        Ok(())
    }

    /// [`Reader::check_record`] of the events from `from` whose next event's time came
    /// (all of them at the file's end, `len` known), the records no later check needs let
    /// go of; the first event not checked.
    pub(crate) fn check_records(
        &mut self,
        from: usize,
        end: Option<usize>,
        max_record: usize,
    ) -> Result<usize, String> {
        let upto = match end {
            Some(_) => self.read(),
            None => self.read().saturating_sub(1),
        };
        let mut upto = upto.max(from);
        for k in from..upto {
            // (the next event's time said to come out of a chunk not read yet: later)
            if k + 1 < self.read()
                && self.time_chunk[k + 1 - self.cbase] as usize >= self.cuts.len()
            {
                upto = k;
                break;
            }
            self.check_record(k, end.unwrap_or(0), max_record)?;
        }
        self.drop_records_before(upto.saturating_sub(1));
        Ok(upto)
    }

    /// A quad as oxttl gives it, which came out of chunk `ci`.
    pub(crate) fn take(&mut self, q: Quad, terms: &mut Terms, ci: u32) -> Result<(), String> {
        let subject = match q.subject {
            NamedOrBlankNode::NamedNode(n) => n,
            NamedOrBlankNode::BlankNode(_) => return Err("a blank node".into()),
        };
        match q.graph_name {
            GraphName::DefaultGraph => {
                let g = terms.intern_ref(subject.as_ref().into()).0;
                self.time(g, q.predicate.as_str(), q.object.as_ref(), ci)
            }
            GraphName::NamedNode(graph) => {
                // the graph is the one whose time came last: compared with that term's
                // text, not looked up (one hash less a quad)
                let g = match self.state {
                    State::Timed(cur) | State::Content(cur)
                        if is_iri(terms.term(cur), graph.as_str()) =>
                    {
                        cur
                    }
                    _ => return Err("a graph not right after its own time".into()),
                };
                let o = match q.object {
                    Term::BlankNode(_) => return Err("a blank node".into()),
                    #[allow(unreachable_patterns)]
                    Term::NamedNode(_) | Term::Literal(_) => q.object,
                    #[allow(unreachable_patterns)]
                    _ => return Err("a triple term".into()),
                };
                // pyoxigraph refuses a term over 16 MiB (today's path dead-letters its
                // record): well below that, the file goes to today's path rather than differ
                if subject.as_str().len() > MAX_TERM_BYTES
                    || q.predicate.as_str().len() > MAX_TERM_BYTES
                    || term_len(o.as_ref()) > MAX_TERM_BYTES
                {
                    return Err(format!("a term over {MAX_TERM_BYTES} bytes"));
                }
                // a subject is most often the last triple's (`;` in Turtle): its id
                // without a lookup
                let s = match self.ev.triples.last() {
                    Some(&[last, _, _]) if is_iri(terms.term(last), subject.as_str()) => last,
                    _ => terms.intern(subject.into()),
                };
                let p = terms.intern(q.predicate.into());
                let o = terms.intern(o);
                self.content(g, [s, p, o], ci)
            }
            GraphName::BlankNode(_) => Err("a blank node as a graph name".into()),
        }
    }

    /// A default-graph quad: an event's time, `g` its graph's name (its id).
    pub(crate) fn time(
        &mut self,
        g: TermId,
        predicate: &str,
        object: TermRef<'_>,
        ci: u32,
    ) -> Result<(), String> {
        if let State::Timed(_) = self.state {
            return Err(
                "two times in a row (an empty graph block, or a time after its graph)".into(),
            );
        }
        if !self.points.iter().any(|p| p.as_str() == predicate) {
            return Err(format!(
                "a default-graph triple whose predicate <{predicate}> is not a point-time predicate"
            ));
        }
        let TermRef::Literal(lit) = object else {
            return Err("a time that is not a literal".into());
        };
        let lex = lit.value();
        if lit.datatype() != xsd::INTEGER
            || lex.is_empty()
            || lex.len() > MAX_TIME_DIGITS
            || !lex.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(format!("a time not of ASCII digits: {lit}"));
        }
        let t: i64 = lex.parse().map_err(|_| "a time out of range")?;
        let ev = &mut self.ev;
        if self.last_time.is_some_and(|last| t < last) {
            return Err("a time before an earlier event's".into());
        }
        self.last_time = Some(t);
        let (word, bit) = (g as usize / 64, 1u64 << (g % 64));
        if word >= self.seen.len() {
            self.seen.resize(word + 1, 0);
        }
        if self.seen[word] & bit != 0 {
            return Err("a graph name given twice".into());
        }
        self.seen[word] |= bit;
        ev.times.push(t);
        ev.offsets
            .push(*ev.offsets.last().expect("offsets start at 0"));
        self.state = State::Timed(g);
        self.time_chunk.push(ci);
        Ok(())
    }

    /// A triple of graph `g` (the current one), its terms' ids (their lengths checked).
    pub(crate) fn content(
        &mut self,
        g: TermId,
        [s, p, o]: [TermId; 3],
        ci: u32,
    ) -> Result<(), String> {
        let ev = &mut self.ev;
        ev.triples.push([s, p, o]);
        let last = ev.offsets.last_mut().expect("an event");
        *last = u32::try_from(ev.triples.len()).map_err(|_| "over 2^32 triples")?;
        self.state = State::Content(g);
        if self.cbase + self.last_chunk.len() < self.base + ev.len() {
            self.last_chunk.push(ci);
        } else {
            *self.last_chunk.last_mut().expect("an event") = ci;
        }
        Ok(())
    }

    /// The chunk holding byte `at` (the offsets asked about never go back).
    fn chunk_of(&mut self, at: usize) -> u32 {
        while self.cursor + 1 < self.cuts.len() && self.cuts[self.cursor] <= at {
            self.cursor += 1;
        }
        self.cursor as u32
    }

    /// The events, once the document is read; or why not: a time with no graph after it,
    /// or a record that may be over the limit.
    fn finish(mut self, small: bool, len: usize, max_record: usize) -> Result<Events, String> {
        self.end()?;
        if !small {
            self.check_records(0, Some(len), max_record)?;
        }
        Ok(self.ev)
    }

    /// The document's end: the last time given must have its graph.
    pub(crate) fn end(&mut self) -> Result<(), String> {
        if let State::Timed(_) = self.state {
            return Err("the last time given has no graph after it".into());
        }
        self.state = State::Start;
        Ok(())
    }
}

/// rsep's own reader's quads. The chunk a quad is said to come out of is the one oxttl's
/// reading could give it at the most for a time (the chunk after the one holding the
/// statement's last token: one token of lookahead) and at the least for a triple (the chunk
/// holding its object's start), so the record bound is never weaker than oxttl's reading's.
impl crate::trig::Sink for Reader {
    fn default_triple(
        &mut self,
        (g, s): (TermId, NamedNodeRef<'_>),
        p: NamedNodeRef<'_>,
        o: TermRef<'_>,
        end: usize,
    ) -> Result<(), String> {
        if s.as_str().len() > MAX_TERM_BYTES {
            // a graph's name may be a subject in its graph, whose length is checked only
            // where it is new there
            return Err(format!("a term over {MAX_TERM_BYTES} bytes"));
        }
        // the chunk after the last one is not there (the file's end known) or not read yet
        let last = if self.whole {
            (self.cuts.len() - 1) as u32
        } else {
            u32::MAX
        };
        let ci = (self.chunk_of(self.offset + end) + 1).min(last);
        self.time(g, p.as_str(), o, ci)
    }

    fn fresh(&mut self, term: TermRef<'_>) -> Result<(), String> {
        if term_len(term) > MAX_TERM_BYTES {
            return Err(format!("a term over {MAX_TERM_BYTES} bytes"));
        }
        Ok(())
    }

    fn graph(&mut self, label: TermId) -> Result<(), String> {
        match self.state {
            State::Timed(cur) | State::Content(cur) if label == cur => Ok(()),
            _ => Err("a graph not right after its own time".into()),
        }
    }

    fn triple(
        &mut self,
        _terms: &Terms,
        g: TermId,
        s: TermId,
        p: TermId,
        o: TermId,
        at: usize,
    ) -> Result<(), String> {
        let ci = self.chunk_of(self.offset + at);
        self.content(g, [s, p, o], ci)
    }
}

/// Whether `term` is the IRI `iri`.
pub(crate) fn is_iri(term: Option<TermRef<'_>>, iri: &str) -> bool {
    matches!(term, Some(TermRef::NamedNode(n)) if n.as_str() == iri)
}

pub(crate) fn has_long_string(data: &[u8]) -> bool {
    memchr::memchr2_iter(b'"', b'\'', data)
        .any(|i| data.get(i + 1) == Some(&data[i]) && data.get(i + 2) == Some(&data[i]))
}

/// The ends of the chunks the parser is fed: past [`CHUNK`] bytes, at the next line end.
fn chunk_ends(data: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let want = (at + CHUNK).min(data.len());
        let end = match data[want..].iter().position(|&b| b == b'\n') {
            Some(nl) => want + nl + 1,
            None => data.len(),
        };
        out.push(end);
        at = end;
    }
    if out.is_empty() {
        out.push(0);
    }
    out
}

/// Whether a literal reads back from pyoxigraph's store as it was written without asking
/// (rsep.sparql.matcher.Canon's own shortcut): a plain or language-tagged string, an
/// xsd:integer or xsd:decimal in canonical form. Any other literal's form is checked by
/// the caller against pyoxigraph (its store canonicalises numbers, booleans, dates).
pub fn stable_literal(t: TermRef<'_>) -> bool {
    let TermRef::Literal(l) = t else {
        return true;
    };
    let dt = l.datatype();
    let v = l.value();
    if dt == xsd::STRING || l.language().is_some() {
        return true;
    }
    if dt == xsd::INTEGER {
        let d = v.strip_prefix('-').unwrap_or(v);
        return !d.is_empty()
            && d.bytes().all(|b| b.is_ascii_digit())
            && (!d.starts_with('0') || v == "0");
    }
    if dt == xsd::DECIMAL {
        // -?(0|[1-9][0-9]*)\.[0-9]*[1-9]
        let d = v.strip_prefix('-').unwrap_or(v);
        let Some((int, frac)) = d.split_once('.') else {
            return false;
        };
        return !int.is_empty()
            && int.bytes().all(|b| b.is_ascii_digit())
            && (int == "0" || !int.starts_with('0'))
            && frac.bytes().all(|b| b.is_ascii_digit())
            && frac.ends_with(|c: char| c != '0');
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROV: &str = "http://www.w3.org/ns/prov#generatedAtTime";

    fn read(doc: &str) -> Result<(Events, Terms), String> {
        let mut terms = Terms::new();
        read_events(doc.as_bytes(), &mut terms, &[PROV.to_owned()], 1 << 26).map(|e| (e, terms))
    }

    #[test]
    fn events_of_the_common_shape() {
        let doc = "@prefix : <http://e/> .\n\
            :g0 <http://www.w3.org/ns/prov#generatedAtTime> 3 .\n:g0 { :a :p \"x\" . :a :p \"x\" . }\n\
            :g1 <http://www.w3.org/ns/prov#generatedAtTime> 3 .\n:g1 { :b :p :c }\n";
        let (ev, terms) = read(doc).unwrap();
        assert_eq!(ev.times, [3, 3]);
        assert_eq!(ev.offsets, [0, 2, 3]);
        assert_eq!(ev.triples_of(0)[0], ev.triples_of(0)[1]);
        let show = |id| terms.term(id).unwrap().to_string();
        assert_eq!(show(ev.triples_of(1)[0][2]), "<http://e/c>");
    }

    #[test]
    fn other_shapes_are_refused() {
        let t = "<http://www.w3.org/ns/prov#generatedAtTime>";
        for (doc, why) in [
            (format!("<g:0> {t} 1 .\n<g:0> {{ _:b <p:p> 1 }}\n"), "a blank node"),
            (format!("<g:0> {t} 1 .\n<g:0> {{ <s:s> <p:p> }}\n"), "a syntax error"),
            (format!("<g:0> {t} 2 .\n<g:0> {{ <s:s> <p:p> 1 }}\n<g:1> {t} 1 .\n<g:1> {{ <s:s> <p:p> 1 }}\n"), "a time before"),
            (format!("<g:0> {t} 1 .\n<g:0> {{ <s:s> <p:p> 1 }}\n<g:0> {t} 1 .\n<g:0> {{ <s:s> <p:p> 1 }}\n"), "a graph name given twice"),
            (format!("<g:0> {{ <s:s> <p:p> 1 }}\n<g:0> {t} 1 .\n"), "a graph not right after"),
            (format!("<g:0> {t} \"1\" .\n<g:0> {{ <s:s> <p:p> 1 }}\n"), "a time not of ASCII digits"),
            (format!("<g:0> {t} 1 .\n<g:0> {{ }}\n"), "the last time"),
            ("<g:0> <p:q> 1 .\n<g:0> { <s:s> <p:p> 1 }\n".to_owned(), "not a point-time"),
            (format!("<g:0> {t} 1 .\n<g:0> {{ <s:s> <p:p> \"\"\"x\"\"\" }}\n"), "long"),
        ] {
            let got = read(&doc).err().unwrap_or_default();
            assert!(got.contains(why), "{doc:?}: {got:?}");
        }
        let mut terms = Terms::new();
        assert!(read_events(b"\xff", &mut terms, &[], 10).is_err());
    }

    #[test]
    fn a_record_bound_over_the_limit_is_refused() {
        let t = "<http://www.w3.org/ns/prov#generatedAtTime>";
        let mut doc = format!("<g:0> {t} 1 .\n<g:0> {{ <s:s> <p:p> 1 }}\n");
        // 3 MiB of comment lines inside the next graph's block
        doc += &format!("<g:1> {t} 2 .\n<g:1> {{ <s:s> <p:p> 2 .\n");
        for _ in 0..(3 << 20) / 64 {
            doc += &format!("# {}\n", "x".repeat(61));
        }
        doc += "}\n";
        let mut terms = Terms::new();
        let p = [PROV.to_owned()];
        assert!(read_events(doc.as_bytes(), &mut terms, &p, 8 * CHUNK).is_ok());
        let err = read_events(doc.as_bytes(), &mut terms, &p, 2 * CHUNK).unwrap_err();
        assert!(err.contains("too small"), "{err}");
    }

    #[test]
    fn stable_literals() {
        use oxrdf::LiteralRef;
        fn lit<'a>(v: &'a str, dt: oxrdf::NamedNodeRef<'a>) -> TermRef<'a> {
            LiteralRef::new_typed_literal(v, dt).into()
        }
        assert!(stable_literal(lit("12", xsd::INTEGER)));
        assert!(!stable_literal(lit("012", xsd::INTEGER)));
        assert!(stable_literal(lit("0", xsd::INTEGER)));
        assert!(stable_literal(lit("-1.5", xsd::DECIMAL)));
        assert!(!stable_literal(lit("1.50", xsd::DECIMAL)));
        assert!(!stable_literal(lit("1.0", xsd::DECIMAL)));
        assert!(!stable_literal(lit("1e3", xsd::DOUBLE)));
        assert!(stable_literal(LiteralRef::new_simple_literal("x").into()));
    }
}
