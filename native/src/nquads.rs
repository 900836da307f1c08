//! The syntaxes of rsep's stream files as the native readers take them: TriG (rsep's own
//! reader first, [`crate::trig`], else oxttl's) and N-Quads (oxttl's), one parser of oxttl
//! behind one interface, fed the same chunks whichever the syntax.
//!
//! rsep's Python reader (rsep/stream/files.py) reads a file named `.nq` or `.nquads` as
//! N-Quads and any other (N-Triples included: a subset of TriG) as TriG; so does the caller
//! of these readers (rsep/stream/native.py), which refuses a file whose syntax was given
//! otherwise. An N-Quads file is read as a TriG one is, with two rules fewer, both of
//! today's TriG reading only: N-Quads has no long (triple-quoted) strings, and today's
//! N-Quads reading takes a line whatever its length (no record limit: it reads each chunk
//! on to the end of its last line), so no record bound is checked on it either.

use crate::dictionary::Terms;
use crate::reader::Format;
use crate::stream::{is_iri, Reader, MAX_TERM_BYTES};
use crate::trig::plainly_valid;
use oxrdf::vocab::rdf;
use oxrdf::{LiteralRef, NamedNodeRef, Quad, TermRef};
use oxttl::nquads::LowLevelNQuadsParser;
use oxttl::trig::LowLevelTriGParser;
use oxttl::{NQuadsParser, TriGParser, TurtleSyntaxError};

/// The syntaxes the native stream readers take, or why not another.
pub fn stream_format(format: Format) -> Result<Format, String> {
    match format {
        Format::TriG | Format::NQuads => Ok(format),
        other => Err(format!(
            "a stream file in {other:?} (TriG and N-Quads are read)"
        )),
    }
}

/// The name of a stream file's syntax as rsep/stream/files.py gives it (`trig`, `nquads`).
pub fn from_name(name: &str) -> Result<Format, String> {
    Format::from_name(name)
        .ok_or_else(|| format!("an unknown syntax: {name}"))
        .and_then(stream_format)
}

/// oxttl's parser of a stream file's syntax, fed in parts.
pub(crate) enum Parser {
    TriG(LowLevelTriGParser),
    NQuads(LowLevelNQuadsParser),
}

impl Parser {
    /// A parser of `format` (TriG or N-Quads: [`stream_format`]; any other reads as TriG).
    pub(crate) fn new(format: Format) -> Self {
        match format {
            Format::NQuads => Self::NQuads(NQuadsParser::new().low_level()),
            _ => Self::TriG(TriGParser::new().low_level()),
        }
    }

    pub(crate) fn extend_from_slice(&mut self, data: &[u8]) {
        match self {
            Self::TriG(p) => p.extend_from_slice(data),
            Self::NQuads(p) => p.extend_from_slice(data),
        }
    }

    /// No more text: the document ends.
    pub(crate) fn end(&mut self) {
        match self {
            Self::TriG(p) => p.end(),
            Self::NQuads(p) => p.end(),
        }
    }

    pub(crate) fn parse_next(&mut self) -> Option<Result<Quad, TurtleSyntaxError>> {
        match self {
            Self::TriG(p) => p.parse_next(),
            Self::NQuads(p) => p.parse_next(),
        }
    }
}

/// Whether the record bound is checked on a file of `format` (of TriG only: above).
pub(crate) fn bounded(format: Format) -> bool {
    format != Format::NQuads
}

/// An N-Quads file read a chunk at a time (each a whole number of lines: a chunk ends at a
/// line's end or the file's): each line by rsep's own reader where it keeps to its subset,
/// the rest of the chunk from the first line it does not by oxttl (its line numbers those
/// of the file). N-Quads holds no state from one line to the next (no prefixes, no base;
/// oxttl's parser starts each line afresh), so reading a chunk's lines one by one, or a
/// chunk's rest by a parser of its own, gives the quads, and the first error, that one
/// parser of the whole file gives.
///
/// The subset: lines of `subject predicate object [graph] .` then blanks and a comment at
/// most, the terms IRIs without escapes, the object one of those or a `"` string (`\t \b \n
/// \r \f \" \' \\ \u \U` escapes) with a language tag or a datatype straight after it,
/// spaces and tabs between them, no CR anywhere in the line. Each term is what oxttl makes
/// of it: strings decoded the same, language tags validated (BCP 47) and lowercased, IRIs
/// validated (RFC 3987, oxiri) unless the dictionary holds them (validated when read first)
/// or they are plainly valid ([`crate::trig::plainly_valid`]).
#[derive(Default)]
pub(crate) struct Lines {
    /// the line jumps before the next chunk, counted as oxttl counts them (CR, LF, CRLF)
    before: u64,
    /// IRIs validated that the dictionary does not hold (time predicates, datatypes)
    valid: hashbrown::HashSet<String>,
    /// a string's escapes decoded; a language tag lowercased
    value: String,
    lang: String,
}

/// An object as a line of the subset writes it.
enum Object<'a> {
    Iri(&'a str),
    /// a literal: decoded into [`Lines::value`] (`escaped`) or as written, its language tag
    /// (lowercased into [`Lines::lang`]) or datatype
    Literal {
        raw: &'a str,
        escaped: bool,
        lang: bool,
        datatype: Option<&'a str>,
    },
}

/// A line of the subset: its terms (`None`: a blank or comment line).
struct Statement<'a> {
    s: &'a str,
    p: &'a str,
    o: Object<'a>,
    g: Option<&'a str>,
}

fn blanks(d: &[u8], mut i: usize) -> usize {
    while matches!(d.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    i
}

/// An IRI `<...>` at `i` (no escape, no line jump, no space: oxiri decides the rest), and
/// where it ends.
fn iri(t: &str, i: usize) -> Option<(&str, usize)> {
    let d = t.as_bytes();
    if d.get(i) != Some(&b'<') {
        return None;
    }
    let len = memchr::memchr3(b'>', b'\\', b'\n', &d[i + 1..])?;
    if d[i + 1 + len] != b'>' {
        return None;
    }
    Some((&t[i + 1..i + 1 + len], i + len + 2))
}

impl Lines {
    /// Read `text` (the chunk `ci`, whole lines, UTF-8) into `reader`'s events.
    pub(crate) fn read(
        &mut self,
        text: &str,
        terms: &mut Terms,
        reader: &mut Reader,
        ci: u32,
    ) -> Result<(), String> {
        let d = text.as_bytes();
        let mut at = 0;
        let mut line = self.before;
        while at < d.len() {
            let end = memchr::memchr(b'\n', &d[at..]).map_or(d.len(), |n| at + n + 1);
            let got = match self.statement(text, at, end) {
                None => None,
                Some(None) => Some(Ok(())),
                Some(Some(st)) => self.take(st, terms, reader, ci),
            };
            match got {
                Some(r) => r?,
                None => {
                    // outside the subset: oxttl reads the rest of the chunk
                    self.slower(&d[at..], line, terms, reader, ci)?;
                    break;
                }
            }
            at = end;
            line += 1;
        }
        self.before += jumps(d);
        Ok(())
    }

    /// The rest of a chunk from a line's start (`line` jumps before it) by oxttl.
    fn slower(
        &mut self,
        rest: &[u8],
        line: u64,
        terms: &mut Terms,
        reader: &mut Reader,
        ci: u32,
    ) -> Result<(), String> {
        let mut parser = NQuadsParser::new().low_level();
        parser.extend_from_slice(rest);
        parser.end();
        while let Some(q) = parser.parse_next() {
            let q = q.map_err(|e| {
                let at = e.location().start;
                format!(
                    "a syntax error at line {} column {}",
                    line + at.line + 1,
                    at.column + 1
                )
            })?;
            reader.take(q, terms, ci)?;
        }
        Ok(())
    }

    /// The line `text[at..end]` read as the subset writes it: `Some(None)` a blank or
    /// comment line, `None` outside the subset.
    fn statement<'a>(
        &mut self,
        t: &'a str,
        at: usize,
        end: usize,
    ) -> Option<Option<Statement<'a>>> {
        let d = &t.as_bytes()[..end];
        if memchr::memchr(b'\r', &d[at..]).is_some() {
            return None;
        }
        let i = blanks(d, at);
        if i == end || d[i] == b'\n' || d[i] == b'#' {
            return Some(None);
        }
        let (s, i) = iri(t, i)?;
        let (p, i) = iri(t, blanks(d, i))?;
        let i = blanks(d, i);
        let (o, i) = match d.get(i) {
            Some(b'<') => {
                let (o, i) = iri(t, i)?;
                (Object::Iri(o), i)
            }
            Some(b'"') => self.literal(t, i, end)?,
            _ => return None,
        };
        let mut i = blanks(d, i);
        let g = if d.get(i) == Some(&b'<') {
            let (g, j) = iri(t, i)?;
            i = blanks(d, j);
            Some(g)
        } else {
            None
        };
        if d.get(i) != Some(&b'.') {
            return None;
        }
        let i = blanks(d, i + 1);
        if !(i == end || d[i] == b'\n' || d[i] == b'#') {
            return None;
        }
        Some(Some(Statement { s, p, o, g }))
    }

    /// A `"` string at `i` and what follows it straight after (a language tag, `^^` and an
    /// IRI), and where it ends.
    fn literal<'a>(&mut self, t: &'a str, i: usize, end: usize) -> Option<(Object<'a>, usize)> {
        let d = &t.as_bytes()[..end];
        let mut j = i + 1;
        let mut escaped = false;
        loop {
            let n = memchr::memchr3(b'"', b'\\', b'\n', &d[j..])?;
            let k = j + n;
            match d[k] {
                b'"' => {
                    if escaped {
                        self.value.push_str(&t[j..k]);
                    }
                    j = k + 1;
                    break;
                }
                b'\\' => {
                    if !escaped {
                        self.value.clear();
                        escaped = true;
                    }
                    self.value.push_str(&t[j..k]);
                    let (c, len) = match d.get(k + 1)? {
                        b't' => ('\t', 2),
                        b'b' => ('\x08', 2),
                        b'n' => ('\n', 2),
                        b'r' => ('\r', 2),
                        b'f' => ('\x0C', 2),
                        b'"' => ('"', 2),
                        b'\'' => ('\'', 2),
                        b'\\' => ('\\', 2),
                        b'u' => (hex(d, k + 2, 4)?, 6),
                        b'U' => (hex(d, k + 2, 8)?, 10),
                        _ => return None,
                    };
                    self.value.push(c);
                    j = k + len;
                }
                _ => return None, // a line jump in a string
            }
        }
        let raw = &t[i + 1..j - 1];
        match d.get(j) {
            Some(b'@') => {
                let start = j + 1;
                let mut k = start;
                while d.get(k).is_some_and(u8::is_ascii_alphabetic) {
                    k += 1;
                }
                if k == start {
                    return None;
                }
                while d.get(k) == Some(&b'-') && d.get(k + 1).is_some_and(u8::is_ascii_alphanumeric)
                {
                    k += 1;
                    while d.get(k).is_some_and(u8::is_ascii_alphanumeric) {
                        k += 1;
                    }
                }
                if d.get(k) == Some(&b'-') {
                    return None; // an empty subtag, or a base direction (RDF 1.2)
                }
                let tag = &t[start..k];
                if oxilangtag::LanguageTag::parse(tag).is_err() {
                    return None;
                }
                self.lang.clear();
                self.lang.push_str(tag);
                self.lang.make_ascii_lowercase();
                let o = Object::Literal {
                    raw,
                    escaped,
                    lang: true,
                    datatype: None,
                };
                Some((o, k))
            }
            Some(b'^') => {
                if d.get(j + 1) != Some(&b'^') {
                    return None;
                }
                let (dt, k) = iri(t, j + 2)?;
                if dt == rdf::LANG_STRING.as_str() {
                    return None; // oxttl's error
                }
                let o = Object::Literal {
                    raw,
                    escaped,
                    lang: false,
                    datatype: Some(dt),
                };
                Some((o, k))
            }
            _ => {
                // (a tag or a datatype after blanks: oxttl's reading decides)
                let k = blanks(d, j);
                if matches!(d.get(k), Some(b'@' | b'^')) {
                    return None;
                }
                let o = Object::Literal {
                    raw,
                    escaped,
                    lang: false,
                    datatype: None,
                };
                Some((o, j))
            }
        }
    }

    /// Whether an IRI not in the dictionary is valid (remembered when `remember`).
    fn valid(&mut self, iri: &str, remember: bool) -> bool {
        if plainly_valid(iri.as_bytes()) || (remember && self.valid.contains(iri)) {
            return true;
        }
        if oxiri::Iri::parse(iri).is_err() {
            return false;
        }
        if remember {
            self.valid.insert(iri.to_owned());
        }
        true
    }

    /// A statement's quad given to `reader` as oxttl's would be; `None` where an IRI is
    /// not valid (oxttl's reading of the line locates the error).
    fn take(
        &mut self,
        st: Statement<'_>,
        terms: &mut Terms,
        reader: &mut Reader,
        ci: u32,
    ) -> Option<Result<(), String>> {
        let known = |terms: &Terms, iri: &str| {
            terms
                .get_ref(NamedNodeRef::new_unchecked(iri).into())
                .is_some()
        };
        // every IRI of the line validated first, as oxttl's lexer does before any quad
        for (iri, interned) in [(st.s, true), (st.p, st.g.is_some())] {
            if !known(terms, iri) && !self.valid(iri, !interned) {
                return None;
            }
        }
        let o: TermRef<'_> = match st.o {
            Object::Iri(o) => {
                if !known(terms, o) && !self.valid(o, false) {
                    return None;
                }
                NamedNodeRef::new_unchecked(o).into()
            }
            Object::Literal {
                raw,
                escaped,
                lang,
                datatype,
            } => {
                if datatype.is_some_and(|dt| !self.valid(dt, true)) {
                    return None;
                }
                let value = if escaped { self.value.as_str() } else { raw };
                if lang {
                    LiteralRef::new_language_tagged_literal_unchecked(value, self.lang.as_str())
                        .into()
                } else if let Some(dt) = datatype {
                    LiteralRef::new_typed_literal(value, NamedNodeRef::new_unchecked(dt)).into()
                } else {
                    LiteralRef::new_simple_literal(value).into()
                }
            }
        };
        let Some(g) = st.g else {
            // a default-graph triple: an event's time (its subject the graph's name)
            let (g, _) = terms.intern_ref(NamedNodeRef::new_unchecked(st.s).into());
            return Some(reader.time(g, st.p, o, ci));
        };
        let cur = match reader.current() {
            Some(cur) if is_iri(terms.term(cur), g) => cur,
            _ => {
                // (a graph name not valid is oxttl's error, not this refusal)
                if !known(terms, g) && !self.valid(g, false) {
                    return None;
                }
                return Some(Err("a graph not right after its own time".into()));
            }
        };
        let long = |t: TermRef<'_>| match t {
            TermRef::NamedNode(n) => n.as_str().len(),
            TermRef::Literal(l) => l.value().len(),
            #[allow(unreachable_patterns)]
            _ => 0,
        } > MAX_TERM_BYTES;
        if st.s.len() > MAX_TERM_BYTES || st.p.len() > MAX_TERM_BYTES || long(o) {
            return Some(Err(format!("a term over {MAX_TERM_BYTES} bytes")));
        }
        let s = terms.intern_ref(NamedNodeRef::new_unchecked(st.s).into()).0;
        let p = terms.intern_ref(NamedNodeRef::new_unchecked(st.p).into()).0;
        let o = terms.intern_ref(o).0;
        Some(reader.content(cur, [s, p, o], ci))
    }
}

/// The character of `n` hex digits at `at` (a surrogate or a non-character: `None`).
fn hex(d: &[u8], at: usize, n: usize) -> Option<char> {
    let digits = d.get(at..at + n)?;
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let v = u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()?;
    char::from_u32(v)
}

/// The line jumps of `d` as oxttl counts them: CR, LF and CRLF one each.
fn jumps(d: &[u8]) -> u64 {
    let mut n = 0;
    let mut previous_cr = None;
    for pos in memchr::memchr2_iter(b'\r', b'\n', d) {
        if d[pos] == b'\r' {
            previous_cr = Some(pos);
            n += 1;
        } else if previous_cr.is_none_or(|cr| cr + 1 < pos) {
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dictionary::Terms;
    use crate::source::{Options, Source};
    use crate::stream::{read_events_as, Events};

    const PROV: &str = "http://www.w3.org/ns/prov#generatedAtTime";
    const INT: &str = "http://www.w3.org/2001/XMLSchema#integer";

    /// Every event as (time, its triples in N-Triples syntax).
    type Shown = Vec<(i64, Vec<String>)>;

    fn show(ev: &Events, terms: &Terms) -> Shown {
        let term = |id| terms.term(id).unwrap().to_string();
        (0..ev.len())
            .map(|k| {
                let ts = ev.triples_of(k);
                let ts = ts
                    .iter()
                    .map(|t| format!("{} {} {}", term(t[0]), term(t[1]), term(t[2])));
                (ev.times[k], ts.collect())
            })
            .collect()
    }

    fn whole(doc: &str, format: Format, max_record: usize) -> Result<Shown, String> {
        let mut terms = Terms::new();
        let points = [PROV.to_owned()];
        let ev = read_events_as(
            doc.as_bytes(),
            format,
            &mut terms,
            &points,
            max_record,
            true,
        )?;
        Ok(show(&ev, &terms))
    }

    /// The events read in parts of `chunk` bytes, the dictionary swept after each.
    fn parts(doc: &str, chunk: usize, max_record: usize) -> Result<Shown, String> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("rsep-nquads-{}-{n}.nq", std::process::id()));
        std::fs::write(&path, doc).unwrap();
        let opts = Options {
            chunk,
            sweep: 0,
            fast: true,
            format: Format::NQuads,
        };
        let got = Source::open(path.to_str().unwrap(), vec![PROV.into()], max_record, opts);
        let mut src = got?;
        let mut out = Vec::new();
        let mut k = 0;
        let end = loop {
            match src.has(k) {
                Ok(true) => {}
                Ok(false) => break Ok(out),
                Err(crate::select::Refused(why)) => break Err(why),
            }
            let term = |id| src.terms().term(id).unwrap().to_string();
            let ts = src.triples_of(k).iter();
            let ts = ts.map(|t| format!("{} {} {}", term(t[0]), term(t[1]), term(t[2])));
            out.push((src.time(k), ts.collect()));
            k += 1;
            src.release(k);
        };
        assert!(src.slower().is_none(), "no reader of N-Quads to give up");
        let _ = std::fs::remove_file(&path);
        end
    }

    /// The same events in N-Quads and in TriG.
    fn both(events: &[(i64, &[&str])]) -> (String, String) {
        let (mut nq, mut trig) = (String::new(), String::new());
        for (i, (t, triples)) in events.iter().enumerate() {
            let time = format!("<http://g/{i}> <{PROV}> \"{t}\"^^<{INT}> .\n");
            nq += &time;
            trig += &time;
            trig += &format!("<http://g/{i}> {{\n");
            for tr in *triples {
                nq += &format!("{tr} <http://g/{i}> .\n");
                trig += &format!("{tr} .\n");
            }
            trig += "}\n";
        }
        (nq, trig)
    }

    #[test]
    fn nquads_give_the_events_trig_gives() {
        let mut events: Vec<(i64, &[&str])> = Vec::new();
        for k in 0..60 {
            let body: &[&str] = match k % 3 {
                0 => &[
                    "<http://e/a> <http://e/p> \"x\"",
                    "<http://e/a> <http://e/q> 5",
                ],
                1 => &["<http://e/b> <http://e/p> \"t\\u00E9\\n\"@en"],
                _ => &["<http://e/a> <http://e/p> <http://e/b>"],
            };
            events.push((k / 2, body));
        }
        let (nq, trig) = both(&events);
        // (a TriG number is an xsd:integer literal, as N-Quads writes it)
        let nq = nq.replace(" 5 <", &format!(" \"5\"^^<{INT}> <"));
        let want = whole(&trig, Format::TriG, 1 << 26).unwrap();
        assert_eq!(want.len(), 60);
        assert_eq!(whole(&nq, Format::NQuads, 1 << 26).unwrap(), want);
        for chunk in [1, 7, 64, 300, 1 << 20] {
            assert_eq!(parts(&nq, chunk, 1 << 26).unwrap(), want, "{chunk}");
        }
        // comments, blank lines, CRLF, no last line end: the same events
        let odd = format!(
            "# start\n\n{}",
            nq.replace(" .\n<http://g/7>", " . # c\r\n  \n<http://g/7>")
        );
        let odd = odd.strip_suffix('\n').unwrap();
        assert_eq!(whole(odd, Format::NQuads, 1 << 26).unwrap(), want);
        assert_eq!(parts(odd, 5, 1 << 26).unwrap(), want);
    }

    #[test]
    fn nquads_have_no_record_bound_nor_long_strings() {
        // today's N-Quads reading takes a line whatever its length, and N-Quads has no
        // long strings (''' in an IRI is no string at all)
        let long = format!("<http://e/a> <http://e/p> \"{}\"", "x".repeat(5000));
        let iri = "<http://e/a'''b> <http://e/p> \"\"";
        let (nq, _) = both(&[(1, &[long.as_str()]), (2, &[iri])]);
        assert_eq!(whole(&nq, Format::NQuads, 100).unwrap().len(), 2);
        assert_eq!(parts(&nq, 64, 100).unwrap().len(), 2);
        let (_, trig) = both(&[(1, &[long.as_str()])]);
        assert!(whole(&trig, Format::TriG, 100).is_err());
    }

    #[test]
    fn what_todays_reader_decides_is_refused() {
        let t = format!("<{PROV}>");
        let i = format!("^^<{INT}>");
        for (doc, why) in [
            (format!("<g:0> {t} \"1\"{i} .\n<s:s> <p:p> .\n"), "a syntax error at line 2 column 13"),
            (format!("<g:0> {t} \"1\"{i} .\n<s:s> <p:p> <o:o> <g:0> . x\n"), "a syntax error"),
            (format!("<g:0> {t} \"1\"{i} .\n<s> <p:p> <o:o> <g:0> .\n"), "a syntax error"),
            (format!("<g:0> {t} \"2\"{i} .\n<s:s> <p:p> <o:o> <g:0> .\n<g:1> {t} \"1\"{i} .\n<s:s> <p:p> <o:o> <g:1> .\n"), "a time before"),
            (format!("<g:0> {t} \"1\"{i} .\n_:b <p:p> <o:o> <g:0> .\n"), "a blank node"),
            (format!("<s:s> <p:p> <o:o> <g:0> .\n<g:0> {t} \"1\"{i} .\n"), "a graph not right after"),
            (format!("<g:0> {t} \"1\"{i} .\n<s:s> <p:p> <o:o> <g:0> .\n<g:0> {t} \"2\"{i} .\n<s:s> <p:p> <o:o> <g:0> .\n"), "a graph name given twice"),
            (format!("<g:0> {t} \"1\"{i} .\n"), "the last time"),
            (format!("<g:0> {t} \"1\"{i} .\n<s:s> <p:p> <o:o> <g:0> .\n<s:s> <p:p> <o:o> .\n"), "not a point-time"),
        ] {
            for got in [whole(&doc, Format::NQuads, 1 << 26), parts(&doc, 3, 1 << 26)] {
                let got = got.err().unwrap_or_default();
                assert!(got.contains(why), "{doc:?}: {got:?}");
            }
        }
        let mut terms = Terms::new();
        let got = read_events_as(b"", Format::Turtle, &mut terms, &[], 10, true);
        assert!(got.unwrap_err().contains("TriG and N-Quads"));
    }

    /// A small random generator (xorshift), as trig.rs's tests draw documents.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn pick<'x>(&mut self, xs: &[&'x str]) -> &'x str {
            xs[(self.next() % xs.len() as u64) as usize]
        }
        fn chance(&mut self, n: u64) -> bool {
            self.next().is_multiple_of(n)
        }
    }

    // the pieces oxttl takes, and (the second of each) pieces it does not or that rsep's
    // reader leaves to it
    const IRIS: [&[&str]; 2] = [
        &[
            "<http://e/a>",
            "<http://e/b#x>",
            "<http://é.e/ü?q=1>",
            "<urn:x:y>",
            "<http://e:8080/%41>",
            "<http://[::1]/x>",
            "<http://e/a'''b>",
            "<http://e/\\u0041>",
        ],
        &[
            "<http://e/a b>",
            "<a>",
            "<>",
            "<http://e/{x}>",
            "<http://e/a>>",
            "_:b",
        ],
    ];
    const LITERALS: [&[&str]; 2] = [
        &[
            "\"x\"",
            "\"\"",
            "\"t\\u00E9\\n\\\"\\\\\"",
            "\"\\U0001F600\"",
            "\"x\"@en",
            "\"x\"@EN-gb",
            "\"5\"^^<http://www.w3.org/2001/XMLSchema#integer>",
            "\"x\" ^^<http://e/d>",
            "\"x\" @en",
            "\"x\"^^ <http://e/d>",
            "\"a\tb\"",
            "\"\u{1}\"",
        ],
        &[
            "\"\\uD800\"",
            "\"\\q\"",
            "\"x\"@en-",
            "\"x\"@en--ltr",
            "\"x\"@abcdefghij",
            "\"x\"@1",
            "\"x\"^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString>",
            "\"x\"^^<bad>",
            "'x'",
            "\"x",
            "\"\"\"x\"\"\"",
            "5",
        ],
    ];

    /// A line of an event: its time (`t` > 0) or a triple of graph `g`; `bad`: a piece
    /// oxttl does not take now and then.
    fn line(r: &mut Rng, g: &str, t: u64, bad: bool) -> String {
        fn ws(r: &mut Rng) -> &'static str {
            r.pick(&[" ", " ", " ", "\t", "  ", ""])
        }
        let odd = |r: &mut Rng| usize::from(bad && r.chance(6));
        if r.chance(12) {
            return r.pick(&["", "# c", "   ", "\t# x . <a>", "\r"]).to_owned();
        }
        let end = |r: &mut Rng| {
            let ends: [&[&str]; 2] = [
                &[" .", " .", ".", " . # c", " .\t", " .\r"],
                &["", " . x", " . ."],
            ];
            let k = odd(r);
            r.pick(ends[k]).to_owned()
        };
        if t > 0 {
            let mut l = format!("{g}{}<{PROV}>{}\"{t}\"^^<{INT}>", ws(r), ws(r));
            if odd(r) == 1 {
                l = format!("{g} <http://e/p> \"{t}\"");
            }
            return l + &end(r);
        }
        let s = if r.chance(4) {
            let k = odd(r);
            r.pick(IRIS[k])
        } else {
            "<http://e/s>"
        };
        let p = if r.chance(6) {
            let k = odd(r);
            r.pick(IRIS[k])
        } else {
            "<http://e/p>"
        };
        let k = odd(r);
        let o = if r.chance(2) {
            r.pick(LITERALS[k])
        } else {
            r.pick(IRIS[k])
        };
        let g = if odd(r) == 1 {
            r.pick(&["", "<http://g/other>", "_:g"])
        } else {
            g
        };
        format!("{s}{}{p}{}{o}{}{g}{}", ws(r), ws(r), ws(r), end(r))
    }

    #[test]
    fn rsep_s_lines_read_what_oxttl_reads() {
        // 20,000 drawn files of valid and invalid pieces: the same events (term for term,
        // in order) or the same refusal, read whole and in parts
        let mut r = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut same, mut refused) = (0, 0);
        for n in 0..20_000 {
            let mut doc = String::new();
            let bad = r.chance(2);
            for k in 0..1 + r.next() % 6 {
                let g = format!("<http://g/{k}>");
                doc += &line(&mut r, &g, k + 1, bad);
                doc += "\n";
                for _ in 0..1 + r.next() % 3 {
                    doc += &line(&mut r, &g, 0, bad);
                    doc += "\n";
                }
            }
            if r.chance(5) {
                doc.pop();
            }
            let slow = {
                let mut terms = Terms::new();
                let p = [PROV.to_owned()];
                read_events_as(
                    doc.as_bytes(),
                    Format::NQuads,
                    &mut terms,
                    &p,
                    1 << 26,
                    false,
                )
                .map(|ev| show(&ev, &terms))
            };
            let fast = whole(&doc, Format::NQuads, 1 << 26);
            assert_eq!(fast, slow, "{n}: {doc:?}");
            if n % 50 == 0 {
                let got = parts(&doc, 1 + (r.next() % 40) as usize, 1 << 26);
                let why = "the native reader does not take the file: ";
                let got = got.map_err(|e| e.strip_prefix(why).map(str::to_owned).unwrap_or(e));
                // (a syntax error's column may differ: oxttl's lexer locates an unclosed
                // string at its start given the line alone, at its line's end given more)
                let line = |r: &Result<Shown, String>| match r {
                    Err(e) if e.starts_with("a syntax error") => {
                        Err(e.split(" column").next().unwrap_or_default().to_owned())
                    }
                    r => r.clone(),
                };
                assert_eq!(line(&got), line(&slow), "{doc:?}");
            }
            if slow.is_ok() {
                same += 1;
            } else {
                refused += 1;
            }
        }
        // (both kinds drawn often)
        assert!(same > 2000 && refused > 2000, "{same} {refused}");
    }
}
