//! RDF text parsed by oxttl straight into ids of a [`Terms`] dictionary.

use crate::dictionary::{TermId, Terms, DEFAULT_GRAPH};
use oxrdf::{Quad, Triple};
use oxttl::{NQuadsParser, NTriplesParser, TriGParser, TurtleParser, TurtleSyntaxError};

/// The RDF syntaxes rsep's streams come in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    TriG,
    Turtle,
    NQuads,
    NTriples,
}

impl Format {
    /// The format of a name as rsep's CLI and pyoxigraph's `RdfFormat` write it.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "trig" | "application/trig" => Some(Self::TriG),
            "turtle" | "ttl" | "text/turtle" => Some(Self::Turtle),
            "nquads" | "n-quads" | "nq" | "application/n-quads" => Some(Self::NQuads),
            "ntriples" | "n-triples" | "nt" | "application/n-triples" => Some(Self::NTriples),
            _ => None,
        }
    }
}

/// A syntax error where the parser met it: 1-based line and column (in code points), and
/// the byte offset of its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: u64,
    pub column: u64,
    pub offset: u64,
    pub message: String,
}

impl From<TurtleSyntaxError> for SyntaxError {
    fn from(e: TurtleSyntaxError) -> Self {
        let at = e.location().start;
        Self {
            line: at.line + 1,
            column: at.column + 1,
            offset: at.offset,
            message: e.message().to_owned(),
        }
    }
}

/// A document's quads as ids, four a quad (subject, predicate, object, graph), in document
/// order; and its syntax errors, in order too. The parse goes on after an error (oxttl
/// recovers at the next statement), so the valid statements around a bad one are kept.
#[derive(Default, Debug)]
pub struct QuadBatch {
    pub ids: Vec<TermId>,
    pub errors: Vec<SyntaxError>,
}

impl QuadBatch {
    pub fn len(&self) -> usize {
        self.ids.len() / 4
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    fn push(&mut self, terms: &mut Terms, q: Quad) {
        let s = terms.intern(q.subject.into());
        let p = terms.intern(q.predicate.into());
        let o = terms.intern(q.object);
        let g = terms.intern_graph(q.graph_name);
        self.ids.extend_from_slice(&[s, p, o, g]);
    }

    fn push_triple(&mut self, terms: &mut Terms, t: Triple) {
        let s = terms.intern(t.subject.into());
        let p = terms.intern(t.predicate.into());
        let o = terms.intern(t.object);
        self.ids.extend_from_slice(&[s, p, o, DEFAULT_GRAPH]);
    }
}

/// Feed a parser's items to `push` up to its first error, which is returned.
fn first_error<T>(
    items: impl Iterator<Item = Result<T, TurtleSyntaxError>>,
    mut push: impl FnMut(T),
) -> Option<TurtleSyntaxError> {
    for r in items {
        match r {
            Ok(x) => push(x),
            Err(e) => return Some(e),
        }
    }
    None
}

/// The line-based syntaxes, parsed again from the line after each error: a statement ends
/// at its line's end, but oxttl's recovery after some errors (an unclosed string) also takes
/// the next line's statement, which is data lost.
fn by_lines(
    data: &[u8],
    out: &mut QuadBatch,
    mut parse_from: impl FnMut(&[u8], &mut QuadBatch) -> Option<TurtleSyntaxError>,
) {
    let (mut start, mut line) = (0usize, 0u64);
    while let Some(e) = parse_from(&data[start..], out) {
        let mut err = SyntaxError::from(e);
        let at = start + usize::try_from(err.offset).expect("offset within the slice");
        err.line += line;
        err.offset = at as u64;
        out.errors.push(err);
        // the bad statement's line ends at the first newline at or after the error
        let Some(nl) = data[at..].iter().position(|&b| b == b'\n') else {
            return;
        };
        line += data[start..at + nl + 1]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        start = at + nl + 1;
    }
}

/// Parse `data` in `format` into `terms` ids. `base_iri` resolves relative IRIs; an invalid
/// one is an error. `lenient` skips the checks pyoxigraph's `lenient=True` skips.
pub fn parse(
    data: &[u8],
    format: Format,
    terms: &mut Terms,
    base_iri: Option<&str>,
    lenient: bool,
) -> Result<QuadBatch, String> {
    let mut out = QuadBatch::default();
    macro_rules! run {
        ($parser:expr, $push:ident) => {{
            for r in $parser.for_slice(data) {
                match r {
                    Ok(x) => out.$push(terms, x),
                    Err(e) => out.errors.push(e.into()),
                }
            }
        }};
    }
    macro_rules! configure {
        ($parser:expr) => {{
            let mut p = $parser;
            if let Some(base) = base_iri {
                p = p
                    .with_base_iri(base)
                    .map_err(|e| format!("invalid base IRI {base}: {e}"))?;
            }
            if lenient {
                p = p.lenient();
            }
            p
        }};
    }
    match format {
        Format::TriG => run!(configure!(TriGParser::new()), push),
        Format::Turtle => run!(configure!(TurtleParser::new()), push_triple),
        Format::NQuads => by_lines(data, &mut out, |rest, out| {
            let p = if lenient {
                NQuadsParser::new().lenient()
            } else {
                NQuadsParser::new()
            };
            first_error(p.for_slice(rest), |q| out.push(terms, q))
        }),
        Format::NTriples => by_lines(data, &mut out, |rest, out| {
            let p = if lenient {
                NTriplesParser::new().lenient()
            } else {
                NTriplesParser::new()
            };
            first_error(p.for_slice(rest), |t| out.push_triple(terms, t))
        }),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(terms: &Terms, b: &QuadBatch) -> Vec<String> {
        b.ids
            .chunks(4)
            .map(|q| {
                let t = |id| {
                    terms
                        .term(id)
                        .map_or("DEFAULT".to_owned(), |t| t.to_string())
                };
                format!("{} {} {} {}", t(q[0]), t(q[1]), t(q[2]), t(q[3]))
            })
            .collect()
    }

    #[test]
    fn trig_quads_share_ids_in_document_order() {
        let mut terms = Terms::new();
        let doc = b"@prefix : <http://e/> .\n:g1 :at 3 .\n:g1 { :a :p 1.5 . :a :q \"x\"@en }\n";
        let b = parse(doc, Format::TriG, &mut terms, None, false).unwrap();
        assert_eq!(
            show(&terms, &b),
            [
                "<http://e/g1> <http://e/at> \"3\"^^<http://www.w3.org/2001/XMLSchema#integer> DEFAULT",
                "<http://e/a> <http://e/p> \"1.5\"^^<http://www.w3.org/2001/XMLSchema#decimal> <http://e/g1>",
                "<http://e/a> <http://e/q> \"x\"@en <http://e/g1>",
            ]
        );
        assert_eq!(b.ids[0], b.ids[7]); // :g1 as a subject and as a graph: one id
        assert_eq!(terms.number(b.ids[2]), Some(3.0));
        assert!(b.errors.is_empty());
    }

    #[test]
    fn an_error_is_located_and_the_next_statement_is_read() {
        let mut terms = Terms::new();
        let doc = b"<http://e/a> <http://e/p> <http://e/o> .\n<http://e/a> <http://e/p> .\n<http://e/b> <http://e/p> \"v\" .\n";
        let b = parse(doc, Format::NTriples, &mut terms, None, false).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b.errors.len(), 1);
        assert_eq!((b.errors[0].line, b.errors[0].column), (2, 27));
    }

    #[test]
    fn an_unclosed_string_loses_only_its_own_line() {
        let mut terms = Terms::new();
        let doc = b"<http://e/a> <http://e/p> \"x .\n<http://e/b> <http://e/p> <http://e/o> <http://e/g> .\nbad\n";
        let b = parse(doc, Format::NQuads, &mut terms, None, false).unwrap();
        assert_eq!(b.len(), 1);
        let at: Vec<_> = b
            .errors
            .iter()
            .map(|e| (e.line, e.column, e.offset))
            .collect();
        assert_eq!(at, [(1, 27, 26), (3, 1, 85)]);
    }

    #[test]
    fn relative_iris_need_a_valid_base() {
        let mut terms = Terms::new();
        let b = parse(
            b"<a> <b> <c> .",
            Format::Turtle,
            &mut terms,
            Some("http://e/"),
            false,
        )
        .unwrap();
        assert_eq!(
            show(&terms, &b),
            ["<http://e/a> <http://e/b> <http://e/c> DEFAULT"]
        );
        assert!(parse(b"", Format::TriG, &mut terms, Some("not an iri"), false).is_err());
    }

    #[test]
    fn format_names() {
        assert_eq!(Format::from_name("TriG"), Some(Format::TriG));
        assert_eq!(
            Format::from_name("application/n-quads"),
            Some(Format::NQuads)
        );
        assert_eq!(Format::from_name("rdf/xml"), None);
    }
}
