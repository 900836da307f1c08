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

use crate::reader::Format;
use oxrdf::Quad;
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
        let path = std::env::temp_dir().join(format!("rsep-nquads-{}.nq", std::process::id()));
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
}
