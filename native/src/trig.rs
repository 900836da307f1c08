//! A TriG reader of rsep's own for the common shape of stream files, where oxttl's general
//! lexer is most of the cost of reading (its prefixed-name and token recognisers, a `format!`
//! per prefixed name, a new `String` per term before the dictionary sees it).
//!
//! It reads a subset of TriG by hand and gives each term to the dictionary by its bytes, so
//! a term seen before is neither built nor validated again. The subset: `@prefix` / `PREFIX`
//! directives; `subject predicate object .` statements of the default graph; graph blocks
//! `label { ... }`; subjects, labels and predicates that are IRIs (`<...>` without escapes)
//! or prefixed names of ASCII characters (or `a`); objects that are those, short strings
//! (with `\t \b \n \r \f \" \' \\ \u \U` escapes) with a language tag or a datatype,
//! numbers and booleans; comments and the four whitespace characters.
//!
//! Anything else (a blank node, a collection, a long string, `@base`, `GRAPH`, a character
//! it does not know where it stands, or any syntax error) makes it give up: [`read`]
//! returns `None` and the caller reads the document with oxttl, which decides as before.
//! So where this reader returns quads they are the quads oxttl gives, term for term (the
//! tests hold the two readers equal on generated documents): lexical forms kept as written,
//! language tags lowercased and validated (BCP 47, as oxttl does), IRIs validated (RFC 3987,
//! oxiri) whenever oxttl validates them, which for a term already in the dictionary was done
//! when it was first read.

use crate::dictionary::{TermId, Terms};
use hashbrown::{HashMap, HashSet};
use memchr::memchr2;
use oxilangtag::LanguageTag;
use oxiri::Iri;
use oxrdf::vocab::{rdf, xsd};
use oxrdf::{LiteralRef, NamedNodeRef, TermRef};

/// What the reader's quads go to; an `Err` ends the read (the reader gives up with it).
pub trait Sink {
    /// A triple of the default graph: its subject's id (`s`, given it before the
    /// predicate's and the object's: the sink decides whether they get ids). `end`: the
    /// byte offset where the token after the object starts.
    fn default_triple(
        &mut self,
        s: (TermId, NamedNodeRef<'_>),
        p: NamedNodeRef<'_>,
        o: TermRef<'_>,
        end: usize,
    ) -> Result<(), String>;

    /// A graph block's label's id, before its triples; an `Err` says why the block is
    /// not taken.
    fn graph(&mut self, label: TermId) -> Result<(), String>;

    /// A term of a graph's triple given its id just now (before [`Sink::triple`] has it).
    fn fresh(&mut self, term: TermRef<'_>) -> Result<(), String>;

    /// A triple of graph `g` (its label's id, as [`Sink::graph`] had it), its terms' ids. `at`: the
    /// byte offset where the object's token starts.
    fn triple(
        &mut self,
        terms: &Terms,
        g: TermId,
        s: TermId,
        p: TermId,
        o: TermId,
        at: usize,
    ) -> Result<(), String>;
}

/// Why the reader stopped before the document's end.
#[derive(Debug, PartialEq, Eq)]
pub enum GiveUp {
    /// the text is outside the subset this reader knows (or not valid TriG)
    Syntax(usize),
    /// the sink refused a quad
    Sink(String),
}

/// Where a prefixed name's parts are: from `start`, its prefix to `name_end` (the colon),
/// its local part to `end`; `colon`: a colon in the local part.
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    name_end: usize,
    end: usize,
    colon: bool,
}

/// A declared prefix: its IRI, and whether a name of it is validated as oxttl validates it
/// (always when the IRI's path is empty: the local part may then be the authority's).
struct Prefix {
    iri: String,
    check: bool,
}

struct Lexer<'a> {
    t: &'a str,
    d: &'a [u8],
    i: usize,
    /// in order of declaration: a prefix declared again is found at its last declaration
    prefixes: Vec<(String, Prefix)>,
    /// IRIs validated that the dictionary does not hold (datatypes, default-graph terms)
    valid: HashSet<String>,
    /// the ids of prefixed names as written, of graphs' predicates and objects that were
    /// in the dictionary already (a stream's few predicates, classes, sensors): such a name
    /// is neither resolved nor hashed as an IRI again. Kept for one part of a document only
    /// (the dictionary is not swept while a part is read), and cleared when a prefix is
    /// declared again
    names: HashMap<&'a [u8], TermId>,
}

type Step<T> = Result<T, GiveUp>;

/// Byte classes: a prefix's or keyword's bytes (PN_PREFIX's ASCII ones and '.'), a local
/// part's (PN_LOCAL's ASCII ones: `%` and `\` escapes are outside the subset), a local
/// part's first.
const NAME: u8 = 1;
const LOCAL: u8 = 2;
const LOCAL_FIRST: u8 = 4;
const COLON: u8 = 8;
/// RFC 3987's iunreserved (its ASCII part), and ipchar's ASCII part with '/' and '?'
const UNRESERVED: u8 = 16;
const PCHAR: u8 = 32;
const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        let alnum = c.is_ascii_alphanumeric();
        if alnum || c == b'_' || c == b'-' || c == b'.' {
            t[b] |= NAME;
        }
        if alnum || c == b'_' || c == b'-' || c == b'.' || c == b':' {
            t[b] |= LOCAL;
        }
        if alnum || c == b'_' || c == b':' {
            t[b] |= LOCAL_FIRST;
        }
        if c == b':' {
            t[b] |= COLON;
        }
        let unreserved = alnum || matches!(c, b'-' | b'.' | b'_' | b'~');
        if unreserved {
            t[b] |= UNRESERVED;
        }
        if unreserved
            || matches!(
                c,
                b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'='
            )
            || matches!(c, b':' | b'@' | b'/' | b'?')
        {
            t[b] |= PCHAR;
        }
        b += 1;
    }
    t
};

const fn local_byte(b: u8) -> bool {
    CLASS[b as usize] & LOCAL != 0
}

/// The end of the run of bytes of `class` from `from`, and the union of their classes.
fn run_of(d: &[u8], from: usize, class: u8) -> (usize, u8) {
    let mut seen = 0;
    let n = d[from..]
        .iter()
        .position(|&b| {
            let c = CLASS[b as usize];
            seen |= c;
            c & class == 0
        })
        .unwrap_or(d.len() - from);
    (from + n, seen)
}

/// The end of the run of a local part's bytes (`LOCAL`) from `from`, and whether a colon is
/// among them: [`run_of`]'s, sixteen bytes at a time (a stream's names are mostly long
/// local parts, and this scan was a third of reading them a byte at a time).
fn local_run(d: &[u8], from: usize) -> (usize, bool) {
    let mut i = from;
    let mut colon = false;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8,
            _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        };
        // SSE2 is part of x86_64: these are always there
        while i + 16 <= d.len() {
            // SAFETY: the sixteen bytes from i are inside `d`; an unaligned load
            let (ok, colons) = unsafe {
                let v = _mm_loadu_si128(d.as_ptr().add(i).cast::<__m128i>());
                let within = |x: __m128i, lo: u8, hi: u8| {
                    // (signed compares: a byte from 0x80 is below every bound, outside)
                    _mm_and_si128(
                        _mm_cmpgt_epi8(x, _mm_set1_epi8(lo as i8 - 1)),
                        _mm_cmplt_epi8(x, _mm_set1_epi8(hi as i8 + 1)),
                    )
                };
                // A-Z and a-z are one range with the 0x20 bit set
                let alpha = within(_mm_or_si128(v, _mm_set1_epi8(0x20)), b'a', b'z');
                let digit_colon = within(v, b'0', b':');
                let dash_dot = within(v, b'-', b'.');
                let under = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'_' as i8));
                let ok = _mm_or_si128(
                    _mm_or_si128(alpha, digit_colon),
                    _mm_or_si128(dash_dot, under),
                );
                (
                    _mm_movemask_epi8(ok) as u32,
                    _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b':' as i8))) as u32,
                )
            };
            if ok != 0xffff {
                let n = ok.trailing_ones();
                colon |= colons & ((1 << n) - 1) != 0;
                return (i + n as usize, colon);
            }
            colon |= colons != 0;
            i += 16;
        }
    }
    let (end, seen) = run_of(d, i, LOCAL);
    (end, colon || seen & COLON != 0)
}

/// Whether `iri` is, by a look at its bytes, an absolute IRI of a shape RFC 3987 makes valid
/// whatever else it holds: `scheme://host` then a path, a query and a fragment, of ASCII
/// unreserved characters, sub-delimiters, `:`, `@`, `/` and `?`. The host a reg-name of
/// unreserved characters, no user, no port, no percent-encoding. Such an IRI is valid; one
/// of another shape may be too, and oxiri decides it. (Most IRIs of a stream are new, each
/// observation's own: oxiri's parse of each was a third of reading them.)
pub(crate) fn plainly_valid(iri: &[u8]) -> bool {
    let is = |b: u8, class: u8| CLASS[b as usize] & class != 0;
    let Some(colon) = iri.iter().position(|&b| b == b':') else {
        return false;
    };
    let (scheme, rest) = (&iri[..colon], &iri[colon + 1..]);
    if !scheme.first().is_some_and(u8::is_ascii_alphabetic)
        || !scheme
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    {
        return false;
    }
    let Some(rest) = rest.strip_prefix(b"//") else {
        return false;
    };
    let host = rest.iter().take_while(|&&b| is(b, UNRESERVED)).count();
    if host == 0 || !rest[0].is_ascii_alphanumeric() {
        return false;
    }
    let rest = &rest[host..];
    if !matches!(rest.first(), None | Some(b'/' | b'?' | b'#')) {
        return false;
    }
    // one '#' at most, where the fragment starts
    let mut fragment = false;
    for &b in rest {
        if !is(b, PCHAR) {
            if b != b'#' || fragment {
                return false;
            }
            fragment = true;
        }
    }
    true
}

/// Read `data` (UTF-8 throughout, checked by the caller) into `sink`, giving its terms ids
/// of `terms`. On giving up, `terms` may hold ids the caller should forget
/// ([`Terms::truncate`]).
pub fn read(data: &str, terms: &mut Terms, sink: &mut impl Sink) -> Result<(), GiveUp> {
    read_on(data, terms, sink, &mut Declared::default())
}

/// What a document declared so far, for a document read in parts: its prefixes, and the
/// IRIs validated that the dictionary does not hold.
#[derive(Default)]
pub struct Declared {
    prefixes: Vec<(String, Prefix)>,
    valid: HashSet<String>,
}

/// [`read`] of a part of a document that starts at a statement's start and ends at one
/// statement's end, `declared` what the parts before it declared (and, after, what this
/// one did too). The offsets given to `sink` are the part's.
pub fn read_on(
    data: &str,
    terms: &mut Terms,
    sink: &mut impl Sink,
    declared: &mut Declared,
) -> Result<(), GiveUp> {
    let mut lx = Lexer {
        t: data,
        d: data.as_bytes(),
        i: 0,
        prefixes: std::mem::take(&mut declared.prefixes),
        valid: std::mem::take(&mut declared.valid),
        names: HashMap::new(),
    };
    let got = statements(&mut lx, terms, sink);
    declared.prefixes = lx.prefixes;
    declared.valid = lx.valid;
    got
}

fn statements(lx: &mut Lexer<'_>, terms: &mut Terms, sink: &mut impl Sink) -> Result<(), GiveUp> {
    // one buffer a position: a prefixed name is resolved into its position's buffer, which
    // must outlive the next position's
    let (mut sb, mut pb, mut ob, mut db) =
        (String::new(), String::new(), String::new(), String::new());
    // rdf:type is given an id where a triple first uses it, as oxttl's reader gives it one
    let mut type_id = terms.get_ref(rdf::TYPE.into());
    loop {
        lx.ws()?;
        let Some(&b) = lx.d.get(lx.i) else {
            return Ok(());
        };
        if b == b'@' {
            lx.prefix_directive(true)?;
            continue;
        }
        if b.is_ascii_alphabetic() && lx.keyword_ahead("prefix") {
            lx.prefix_directive(false)?;
            continue;
        }
        let (s, s_check) = lx.named(&mut sb)?;
        // a label or a default-graph subject: given its id here, validated when new (a
        // sink's refusal then gives up, and the caller forgets the ids given)
        let subject = NamedNodeRef::new_unchecked(s);
        let (g, new) = terms.intern_ref(subject.into());
        if new {
            lx.check_iri(s, s_check, false)?;
        }
        lx.ws()?;
        if lx.peek() == Some(b'{') {
            lx.i += 1;
            sink.graph(g).map_err(GiveUp::Sink)?;
            lx.block(
                terms,
                sink,
                g,
                &mut [&mut sb, &mut pb, &mut ob, &mut db],
                &mut type_id,
            )?;
            continue;
        }
        // a statement of the default graph: its terms validated here, given ids by the sink
        loop {
            let (p, p_check) = match lx.verb(&mut pb)? {
                None => (rdf::TYPE.as_str(), false),
                Some(x) => x,
            };
            // few distinct predicates: each validated once
            lx.check_iri(p, p_check, true)?;
            let predicate = NamedNodeRef::new_unchecked(p);
            loop {
                lx.ws()?;
                let o = lx.object(&mut ob, &mut db)?;
                if let TermRef::NamedNode(n) = o.term {
                    lx.check_iri(n.as_str(), o.check, false)?;
                }
                lx.ws()?;
                sink.default_triple((g, subject), predicate, o.term, lx.i)
                    .map_err(GiveUp::Sink)?;
                if lx.peek() != Some(b',') {
                    break;
                }
                lx.i += 1;
            }
            if !lx.semicolons()? || lx.peek() == Some(b'.') {
                break;
            }
        }
        lx.expect(b'.')?;
    }
}

/// An object as read: its term, and whether it is an IRI that needs validating if new.
struct Object<'t> {
    term: TermRef<'t>,
    check: bool,
}

impl<'a> Lexer<'a> {
    fn fail<T>(&self) -> Step<T> {
        Err(GiveUp::Syntax(self.i))
    }

    fn peek(&self) -> Option<u8> {
        self.d.get(self.i).copied()
    }

    fn expect(&mut self, b: u8) -> Step<()> {
        if self.peek() == Some(b) {
            self.i += 1;
            Ok(())
        } else {
            self.fail()
        }
    }

    /// Skip whitespace and comments. A byte that cannot start a token here ends the skip,
    /// and the caller decides.
    fn ws(&mut self) -> Step<()> {
        while let Some(&b) = self.d.get(self.i) {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => self.i += 1,
                b'#' => {
                    // a comment runs to the line's end (oxttl ends it at \r or \n)
                    let rest = &self.d[self.i..];
                    self.i += memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
                }
                _ => break,
            }
        }
        Ok(())
    }

    /// Whether the keyword `kw` (case-insensitive) stands at the cursor as a whole token.
    fn keyword_ahead(&self, kw: &str) -> bool {
        let end = self.i + kw.len();
        self.d.len() >= end
            && self.d[self.i..end].eq_ignore_ascii_case(kw.as_bytes())
            && !self.d.get(end).is_some_and(|&b| local_byte(b) || b >= 0x80)
    }

    /// `@prefix p: <iri> .` (`at`) or `PREFIX p: <iri>`.
    fn prefix_directive(&mut self, at: bool) -> Step<()> {
        if at {
            // '@prefix' exactly, then whitespace (oxttl lexes it as a language tag)
            if !self.d[self.i..].starts_with(b"@prefix")
                || !matches!(self.d.get(self.i + 7), Some(b' ' | b'\t' | b'\n' | b'\r'))
            {
                return self.fail();
            }
            self.i += 7;
        } else {
            self.i += 6;
        }
        self.ws()?;
        let start = self.i;
        let name_end = self.prefix_end()?;
        self.i = name_end + 1;
        // PNAME_NS: nothing of a local part after the colon
        if !matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r' | b'<')) {
            return self.fail();
        }
        self.ws()?;
        let iri = self.iri_ref()?;
        let Ok(parsed) = Iri::parse(iri) else {
            return self.fail();
        };
        let check = parsed.path().is_empty();
        let prefix = self.t[start..name_end].to_owned();
        self.names.clear();
        self.prefixes.retain(|(p, _)| *p != prefix);
        self.prefixes.push((
            prefix,
            Prefix {
                iri: iri.to_owned(),
                check,
            },
        ));
        if at {
            self.ws()?;
            self.expect(b'.')?;
        }
        Ok(())
    }

    /// Where the prefix at the cursor ends (at its colon): PN_PREFIX's ASCII form, a letter
    /// then name bytes not ending with '.', or nothing.
    fn prefix_end(&self) -> Step<usize> {
        let name_end = self.name_end();
        if self.d.get(name_end) != Some(&b':') {
            return self.fail();
        }
        let prefix = &self.d[self.i..name_end];
        if !prefix.is_empty() && (!prefix[0].is_ascii_alphabetic() || prefix.ends_with(b".")) {
            return self.fail();
        }
        Ok(name_end)
    }

    /// The end of the run of name bytes (a prefix, or a keyword) from the cursor.
    fn name_end(&self) -> usize {
        run_of(self.d, self.i, NAME).0
    }

    /// `<...>` at the cursor: its text (no escapes in the subset).
    fn iri_ref(&mut self) -> Step<&'a str> {
        if self.peek() != Some(b'<') {
            return self.fail();
        }
        let rest = &self.d[self.i + 1..];
        let Some(end) = memchr2(b'>', b'\\', rest) else {
            return self.fail();
        };
        if rest[end] != b'>' {
            return self.fail();
        }
        let s = &self.t[self.i + 1..self.i + 1 + end];
        self.i += end + 2;
        Ok(s)
    }

    /// A prefixed name at the cursor, resolved into `buf`: the IRI, and whether oxttl
    /// validates it. Gives up on anything but ASCII name characters.
    fn pname<'b>(&mut self, buf: &'b mut String) -> Step<(&'b str, bool)> {
        let span = self.pname_span()?;
        let got = self.resolve(span, buf)?;
        self.i = span.end;
        Ok(got)
    }

    /// Where the prefixed name at the cursor ends, and the parts of it [`Lexer::resolve`]
    /// needs. Gives up on anything but ASCII name characters.
    fn pname_span(&self) -> Step<Span> {
        let start = self.i;
        let name_end = self.prefix_end()?;
        let mut end = name_end + 1;
        let mut colon = false;
        if self
            .d
            .get(end)
            .is_some_and(|&b| CLASS[b as usize] & LOCAL_FIRST != 0)
        {
            (end, colon) = local_run(self.d, end);
            // a name does not end with '.': trailing dots are the statement's
            while self.d[end - 1] == b'.' {
                end -= 1;
            }
        }
        if self
            .d
            .get(end)
            .is_some_and(|&b| b >= 0x80 || matches!(b, b'%' | b'\\'))
        {
            return self.fail(); // a local name going on outside the subset
        }
        Ok(Span {
            start,
            name_end,
            end,
            colon,
        })
    }

    /// A prefixed name's IRI, into `buf`, and whether oxttl validates it.
    fn resolve<'b>(&self, span: Span, buf: &'b mut String) -> Step<(&'b str, bool)> {
        let prefix = &self.t[span.start..span.name_end];
        let Some((_, p)) = self.prefixes.iter().rev().find(|(name, _)| name == prefix) else {
            return self.fail(); // undeclared: oxttl's error
        };
        buf.clear();
        buf.push_str(&p.iri);
        buf.push_str(&self.t[span.name_end + 1..span.end]);
        Ok((buf.as_str(), p.check || span.colon))
    }

    /// The id of the IRI or prefixed name at the cursor in a graph's triple.
    fn graph_iri(
        &mut self,
        terms: &mut Terms,
        sink: &mut impl Sink,
        buf: &mut String,
    ) -> Step<TermId> {
        let (iri, check) = self.named(buf)?;
        self.intern_iri(terms, sink, iri, check)
    }

    /// [`Lexer::graph_iri`] of a predicate or an object: a prefixed name the dictionary
    /// held before is looked up by how it is written.
    fn known_iri(
        &mut self,
        terms: &mut Terms,
        sink: &mut impl Sink,
        buf: &mut String,
    ) -> Step<TermId> {
        if self.peek() == Some(b'<') {
            return self.graph_iri(terms, sink, buf);
        }
        let span = self.pname_span()?;
        let written = &self.d[span.start..span.end];
        if let Some(&id) = self.names.get(written) {
            self.i = span.end;
            return Ok(id);
        }
        let (iri, check) = self.resolve(span, buf)?;
        self.i = span.end;
        let term = NamedNodeRef::new_unchecked(iri).into();
        let (id, new) = terms.intern_ref(term);
        if new {
            self.check_iri(iri, check, false)?;
            sink.fresh(term).map_err(GiveUp::Sink)?;
        } else {
            // (a term new here is most often the event's own, not seen again)
            self.names.insert(written, id);
        }
        Ok(id)
    }

    /// A subject or a graph label: an IRI (validated if new) or a prefixed name.
    // (inlined where it is called: out of line, its result goes through memory at every term)
    #[inline(always)]
    fn named<'b>(&mut self, buf: &'b mut String) -> Step<(&'b str, bool)>
    where
        'a: 'b,
    {
        match self.peek() {
            Some(b'<') => Ok((self.iri_ref()?, true)),
            Some(b) if b.is_ascii_alphabetic() || b == b':' => self.pname(buf),
            _ => self.fail(),
        }
    }

    /// A predicate: `None` for `a` (rdf:type).
    fn verb<'b>(&mut self, buf: &'b mut String) -> Step<Option<(&'b str, bool)>>
    where
        'a: 'b,
    {
        self.ws()?;
        if self.peek() == Some(b'a') && self.keyword_ahead("a") {
            self.i += 1;
            return Ok(None);
        }
        self.named(buf).map(Some)
    }

    /// After a predicate's objects: whether a `;` came (any number of them), the cursor
    /// then at the next verb or at the statement's end.
    fn semicolons(&mut self) -> Step<bool> {
        self.ws()?;
        if self.peek() != Some(b';') {
            return Ok(false);
        }
        while self.peek() == Some(b';') {
            self.i += 1;
            self.ws()?;
        }
        Ok(true)
    }

    /// Validate an IRI oxttl validates (`check`) unless it was validated and remembered
    /// before (`remember`: for the few distinct IRIs the dictionary is not given).
    fn check_iri(&mut self, iri: &str, check: bool, remember: bool) -> Step<()> {
        if !check || (remember && self.valid.contains(iri)) {
            return Ok(());
        }
        if !plainly_valid(iri.as_bytes()) && Iri::parse(iri).is_err() {
            return self.fail();
        }
        if remember {
            self.valid.insert(iri.to_owned());
        }
        Ok(())
    }

    /// An object's term. Strings borrow the document where they hold no escape, else `ob`;
    /// a prefixed-name datatype is resolved into `db`.
    fn object<'b>(&mut self, ob: &'b mut String, db: &'b mut String) -> Step<Object<'b>>
    where
        'a: 'b,
    {
        let Some(b) = self.peek() else {
            return self.fail();
        };
        match b {
            b'<' => {
                let iri = self.iri_ref()?;
                Ok(Object {
                    term: NamedNodeRef::new_unchecked(iri).into(),
                    check: true,
                })
            }
            b'"' | b'\'' => {
                let value = self.string(b, ob)?;
                match self.peek() {
                    Some(b'@') => {
                        let lang = self.lang_tag(db)?;
                        Ok(Object {
                            term: LiteralRef::new_language_tagged_literal_unchecked(value, lang)
                                .into(),
                            check: false,
                        })
                    }
                    Some(b'^') => {
                        if self.d.get(self.i + 1) != Some(&b'^') {
                            return self.fail();
                        }
                        self.i += 2;
                        let (dt, check) = self.named(db)?;
                        self.check_iri(dt, check, true)?;
                        if dt == rdf::LANG_STRING.as_str() {
                            return self.fail(); // oxttl's error
                        }
                        Ok(Object {
                            term: LiteralRef::new_typed_literal(
                                value,
                                NamedNodeRef::new_unchecked(dt),
                            )
                            .into(),
                            check: false,
                        })
                    }
                    _ => Ok(Object {
                        term: LiteralRef::new_simple_literal(value).into(),
                        check: false,
                    }),
                }
            }
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                let (lex, dt) = self.number()?;
                Ok(Object {
                    term: LiteralRef::new_typed_literal(lex, dt).into(),
                    check: false,
                })
            }
            b't' | b'f' if self.keyword_ahead("true") || self.keyword_ahead("false") => {
                let lex = if b == b't' { "true" } else { "false" };
                if !self.d[self.i..].starts_with(lex.as_bytes()) {
                    return self.fail(); // `True`: not a keyword of TriG
                }
                self.i += lex.len();
                Ok(Object {
                    term: LiteralRef::new_typed_literal(lex, xsd::BOOLEAN).into(),
                    check: false,
                })
            }
            b if b.is_ascii_alphabetic() || b == b':' => {
                let (iri, check) = self.pname(ob)?;
                Ok(Object {
                    term: NamedNodeRef::new_unchecked(iri).into(),
                    check,
                })
            }
            _ => self.fail(),
        }
    }

    /// A short string delimited by `q` at the cursor, its escapes decoded into `buf`.
    fn string<'b>(&mut self, q: u8, buf: &'b mut String) -> Step<&'b str>
    where
        'a: 'b,
    {
        if self.d.get(self.i + 1) == Some(&q) && self.d.get(self.i + 2) == Some(&q) {
            return self.fail(); // a long string
        }
        let mut i = self.i + 1;
        let mut escaped = false;
        loop {
            let rest = &self.d[i..];
            let Some(end) = memchr2(q, b'\\', rest) else {
                return self.fail();
            };
            if memchr2(b'\n', b'\r', &rest[..end]).is_some() {
                return self.fail(); // a line jump in a short string: oxttl's error
            }
            if rest[end] == q {
                let s = &self.t[i..i + end];
                self.i = i + end + 1;
                if !escaped {
                    return Ok(s);
                }
                buf.push_str(s);
                return Ok(buf.as_str());
            }
            if !escaped {
                buf.clear();
                buf.push_str(&self.t[self.i + 1..i]);
                escaped = true;
            }
            buf.push_str(&self.t[i..i + end]);
            i += end;
            let c = match self.d.get(i + 1) {
                Some(b't') => '\t',
                Some(b'b') => '\x08',
                Some(b'n') => '\n',
                Some(b'r') => '\r',
                Some(b'f') => '\x0C',
                Some(b'"') => '"',
                Some(b'\'') => '\'',
                Some(b'\\') => '\\',
                Some(b'u') => self.hex(i + 2, 4)?,
                Some(b'U') => self.hex(i + 2, 8)?,
                _ => return self.fail(),
            };
            buf.push(c);
            i += match self.d[i + 1] {
                b'u' => 6,
                b'U' => 10,
                _ => 2,
            };
        }
    }

    /// The character of `n` hex digits at `at` (a surrogate or a non-character: give up).
    fn hex(&self, at: usize, n: usize) -> Step<char> {
        let Some(digits) = self.d.get(at..at + n) else {
            return self.fail();
        };
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return self.fail();
        }
        let v = u32::from_str_radix(&self.t[at..at + n], 16).expect("hex digits");
        char::from_u32(v).map_or_else(|| self.fail(), Ok)
    }

    /// `@tag` after a string: lowercased into `buf` (as oxttl gives it), validated.
    fn lang_tag<'b>(&mut self, buf: &'b mut String) -> Step<&'b str> {
        let start = self.i + 1;
        let mut j = start;
        while j < self.d.len() && self.d[j].is_ascii_alphabetic() {
            j += 1;
        }
        if j == start {
            return self.fail();
        }
        while self.d.get(j) == Some(&b'-')
            && self.d.get(j + 1).is_some_and(u8::is_ascii_alphanumeric)
        {
            j += 1;
            while j < self.d.len() && self.d[j].is_ascii_alphanumeric() {
                j += 1;
            }
        }
        if self.d.get(j) == Some(&b'-') {
            return self.fail(); // an empty subtag, or a base direction (RDF 1.2)
        }
        let tag = &self.t[start..j];
        if LanguageTag::parse(tag).is_err() {
            return self.fail();
        }
        buf.clear();
        buf.push_str(tag);
        buf.make_ascii_lowercase();
        self.i = j;
        Ok(buf.as_str())
    }

    /// A number at the cursor (Turtle's INTEGER, DECIMAL, DOUBLE), kept as written.
    fn number(&mut self) -> Step<(&'a str, NamedNodeRef<'static>)> {
        let d = self.d;
        let start = self.i;
        let mut i = start;
        if matches!(d.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let digits = |from: usize| d[from..].iter().take_while(|b| b.is_ascii_digit()).count();
        let before = digits(i);
        i += before;
        let mut after = None;
        if d.get(i) == Some(&b'.') {
            let n = digits(i + 1);
            after = Some(n);
            i += 1 + n;
        }
        let dt = if matches!(d.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(d.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let exp = digits(i);
            i += exp;
            if exp == 0 || (before == 0 && after.unwrap_or(0) == 0) {
                return self.fail();
            }
            xsd::DOUBLE
        } else if let Some(n) = after {
            if n == 0 {
                i -= 1; // `1.`: an integer, then the statement's '.'
                if before == 0 {
                    return self.fail();
                }
                xsd::INTEGER
            } else {
                xsd::DECIMAL
            }
        } else {
            if before == 0 {
                return self.fail();
            }
            xsd::INTEGER
        };
        self.i = i;
        Ok((&self.t[start..i], dt))
    }

    /// A graph block's triples, the cursor after its `{`; ends after its `}`.
    fn block(
        &mut self,
        terms: &mut Terms,
        sink: &mut impl Sink,
        g: TermId,
        bufs: &mut [&mut String; 4],
        type_id: &mut Option<TermId>,
    ) -> Step<()> {
        let [sb, pb, ob, db] = bufs;
        loop {
            self.ws()?;
            if self.peek() == Some(b'}') {
                self.i += 1;
                return Ok(());
            }
            let s = self.graph_iri(terms, sink, sb)?;
            loop {
                self.ws()?;
                let p = if self.peek() == Some(b'a') && self.keyword_ahead("a") {
                    self.i += 1;
                    *type_id.get_or_insert_with(|| terms.intern_ref(rdf::TYPE.into()).0)
                } else {
                    self.known_iri(terms, sink, pb)?
                };
                loop {
                    self.ws()?;
                    let at = self.i;
                    let iri = match self.peek() {
                        Some(b'<') => true,
                        Some(b) if b.is_ascii_alphabetic() || b == b':' => {
                            !(self.keyword_ahead("true") || self.keyword_ahead("false"))
                        }
                        _ => false,
                    };
                    if iri {
                        let o = self.known_iri(terms, sink, ob)?;
                        sink.triple(terms, g, s, p, o, at).map_err(GiveUp::Sink)?;
                        self.ws()?;
                        if self.peek() != Some(b',') {
                            break;
                        }
                        self.i += 1;
                        continue;
                    }
                    let o = self.object(ob, db)?;
                    let (id, new) = terms.intern_ref(o.term);
                    if new {
                        if let (true, TermRef::NamedNode(n)) = (o.check, o.term) {
                            self.check_iri(n.as_str(), true, false)?;
                        }
                        sink.fresh(o.term).map_err(GiveUp::Sink)?;
                    }
                    sink.triple(terms, g, s, p, id, at).map_err(GiveUp::Sink)?;
                    self.ws()?;
                    if self.peek() != Some(b',') {
                        break;
                    }
                    self.i += 1;
                }
                if !self.semicolons()? || matches!(self.peek(), Some(b'.' | b'}')) {
                    break;
                }
            }
            self.ws()?;
            match self.peek() {
                Some(b'.') => self.i += 1,
                Some(b'}') => {}
                _ => return self.fail(),
            }
        }
    }

    /// The id of an IRI of a graph's triple, validated when new if oxttl validates it.
    fn intern_iri(
        &mut self,
        terms: &mut Terms,
        sink: &mut impl Sink,
        iri: &str,
        check: bool,
    ) -> Step<TermId> {
        let term = NamedNodeRef::new_unchecked(iri).into();
        let (id, new) = terms.intern_ref(term);
        if new {
            self.check_iri(iri, check, false)?;
            sink.fresh(term).map_err(GiveUp::Sink)?;
        }
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::read_events_with;
    use oxttl::TriGParser;

    /// Every quad as N-Quads-like text, as the reader gives it.
    #[test]
    fn local_runs_sixteen_at_a_time_are_a_byte_at_a_times() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let alphabet = b"aZq09:_-./;,} \t\n%\\\xc3\xa9@[`{~\x7f";
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (x % 60) as usize;
            let mut d: Vec<u8> = (0..n)
                .map(|k| {
                    let r = x.rotate_left(k as u32 * 5) ^ (k as u64).wrapping_mul(0x9e37);
                    // mostly name bytes, now and then anything
                    if r.is_multiple_of(5) {
                        (r >> 8) as u8
                    } else {
                        alphabet[(r >> 16) as usize % 8]
                    }
                })
                .collect();
            if x.is_multiple_of(3) {
                d.push(alphabet[(x >> 20) as usize % alphabet.len()]);
            }
            for from in [0, n / 3] {
                if from > d.len() {
                    continue;
                }
                let (end, seen) = run_of(&d, from, LOCAL);
                assert_eq!(
                    local_run(&d, from),
                    (end, seen & COLON != 0),
                    "{d:?} {from}"
                );
            }
        }
    }

    #[derive(Default)]
    struct Collect(Vec<String>);

    impl Sink for Collect {
        fn default_triple(
            &mut self,
            (_, s): (TermId, NamedNodeRef<'_>),
            p: NamedNodeRef<'_>,
            o: TermRef<'_>,
            _end: usize,
        ) -> Result<(), String> {
            self.0.push(format!("{s} {p} {o}"));
            Ok(())
        }

        fn graph(&mut self, _label: TermId) -> Result<(), String> {
            Ok(())
        }

        fn fresh(&mut self, _term: TermRef<'_>) -> Result<(), String> {
            Ok(())
        }

        fn triple(
            &mut self,
            terms: &Terms,
            g: TermId,
            s: TermId,
            p: TermId,
            o: TermId,
            _at: usize,
        ) -> Result<(), String> {
            let t = |id| terms.term(id).expect("an id given").to_string();
            self.0.push(format!("{} {} {} {}", t(s), t(p), t(o), t(g)));
            Ok(())
        }
    }

    fn oxttl(doc: &str) -> Option<Vec<String>> {
        let mut out = Vec::new();
        for q in TriGParser::new().for_slice(doc.as_bytes()) {
            let q = q.ok()?;
            out.push(if q.graph_name.is_default_graph() {
                format!("{} {} {}", q.subject, q.predicate, q.object)
            } else {
                format!(
                    "{} {} {} {}",
                    q.subject, q.predicate, q.object, q.graph_name
                )
            });
        }
        Some(out)
    }

    fn ours(doc: &str) -> Option<Vec<String>> {
        let mut terms = Terms::new();
        let mut c = Collect::default();
        read(doc, &mut terms, &mut c).ok().map(|()| c.0)
    }

    /// xorshift64*: the tests' documents are the same at every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn pick<'x>(&mut self, xs: &[&'x str]) -> &'x str {
            xs[(self.next() % xs.len() as u64) as usize]
        }

        fn chance(&mut self, n: u64) -> bool {
            self.next().is_multiple_of(n)
        }
    }

    const PREFIXES: &[&str] = &[
        "@prefix ex: <http://e.org/> .\n",
        "PREFIX p2: <urn:x:>\n",
        "prefix e: <http://e.org>\n",
        "@prefix : <http://x/#> .\n",
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n",
        "@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .\n",
        "@prefix prov: <http://www.w3.org/ns/prov#> .\n",
        "@prefix ex: <http://other.org/ns/> .\n",
        "@prefix bad: <not an iri> .\n",
        "@prefix ex:x <http://e.org/> .\n",
        "@base <http://e.org/> .\n",
    ];

    const IRIS: &[&str] = &[
        "<http://e.org/a>",
        "<http://e.org/%41>",
        "<http://e.org:80/x>",
        "<x:>",
        "<http://e.org/p?q=1&r=(2)#f/g?h>",
        "<http://e.org/a>",
        "<urn:isbn:1>",
    ];

    const IRIS_ODD: &[&str] = &[
        "<http://e.org/a b>",
        "<rel>",
        "<http://[::1]/x>",
        "<http://e.org/a\\u0041>",
        "<ht tp://x>",
        "<http://e.org/a#b#c>",
        "<http://u@e.org/>",
        "<http://e.org/\u{e9}>",
        "<http://e.org/a|b>",
        "<http://-e.org/>",
        "<http:/e.org/a>",
        "<http://e.org/a{b}>",
        "<http://e.org/a^b>",
    ];

    const NAMES: &[&str] = &[
        "ex:a",
        "ex:a.b",
        "ex:a.",
        "ex:",
        "ex:a:b",
        "ex:_x",
        "ex:1x",
        "ex:a-b_c.d",
        "ex:a..b",
    ];

    const NAMES_ODD: &[&str] = &[
        ":x",
        "e:x",
        "e:x:y",
        "ex:-x",
        "ex:a%20b",
        "ex:a\\-b",
        "undeclared:x",
        "ex:\u{e9}",
        "e.x:y",
        "p2:y",
        "Ex:a",
    ];

    const LITERALS: &[&str] = &[
        "\"x\"",
        "\"x y\"",
        "\"\"",
        "\"a\\\"b\"",
        "\"a\\nb\\t\\\\\"",
        "'single'",
        "\"x\"@en",
        "\"x\"@EN-us",
        "\"x\"@en-gb-oed",
        "\"x\"^^ex:t",
        "\"x\"^^<http://e.org/t>",
        "\"x\"^^xsd:string",
        "\"\\u0041\\U0001F600\"",
        "1",
        "-1",
        "+1",
        "1.5",
        ".5",
        "1e3",
        "1.e3",
        "1E-2",
        "true",
        "false",
        "\"25.7\"^^xsd:double",
        "\"\u{e9}t\u{e9}\"@fr",
    ];

    const LITERALS_ODD: &[&str] = &[
        "\"x\"@en-",
        "\"x\"@123",
        "\"x\"@x-private",
        "\"x\"@toolongtag",
        "\"x\"^^rdf:langString",
        "\"x\"^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString>",
        "\"\\uD800\"",
        "\"a\\qb\"",
        "\"x\" @en",
        "\"x\"^^ <http://e.org/t>",
        "\"line\nbreak\"",
        "\"\"\"long\"\"\"",
        "1.",
        "1e",
        "+",
        "True",
        "_:b",
        "[]",
        "( 1 2 )",
    ];

    /// A term: one of an odd kind once in 12 (outside the subset, or not valid TriG).
    fn term(r: &mut Rng, literal: bool) -> String {
        let odd = r.chance(12);
        let k = r.next() % if literal { 3 } else { 2 };
        match (k, odd) {
            (0, false) => r.pick(IRIS),
            (0, true) => r.pick(IRIS_ODD),
            (1, false) => r.pick(NAMES),
            (1, true) => r.pick(NAMES_ODD),
            (_, false) => r.pick(LITERALS),
            (_, true) => r.pick(LITERALS_ODD),
        }
        .to_owned()
    }

    fn ws(r: &mut Rng) -> &'static str {
        r.pick(&[
            " ",
            " ",
            " ",
            "\n",
            "\t",
            "  ",
            " # a comment\n",
            "\r\n",
            "",
        ])
    }

    /// A document: prefixes, then statements of the default graph and graph blocks, built
    /// from valid and invalid pieces alike.
    fn document(r: &mut Rng) -> String {
        let mut d = String::new();
        for _ in 0..r.next() % 3 {
            // the last four are odd ones
            let k = r.next() as usize
                % if r.chance(4) {
                    PREFIXES.len()
                } else {
                    PREFIXES.len() - 4
                };
            d += PREFIXES[k];
        }
        if !r.chance(4) {
            d += PREFIXES[0];
            d += PREFIXES[4];
        }
        for _ in 0..1 + r.next() % 4 {
            let label = term(r, false);
            if r.chance(3) {
                d += &format!(
                    "{label}{}{}{}{} .\n",
                    ws(r),
                    term(r, false),
                    ws(r),
                    term(r, true)
                );
                continue;
            }
            d += &format!("{label}{}{{{}", ws(r), ws(r));
            for k in 0..r.next() % 4 {
                if k > 0 {
                    d += if r.chance(12) {
                        r.pick(&[" ;", "", " . ."])
                    } else {
                        r.pick(&[" .", ".", "\n."])
                    };
                    d += ws(r);
                }
                d += &term(r, false);
                for j in 0..1 + r.next() % 3 {
                    if j > 0 {
                        d += if r.chance(12) {
                            " ,"
                        } else {
                            r.pick(&[" ;", ";", " ; ;"])
                        };
                    }
                    d += ws(r);
                    d += if r.chance(4) { "a" } else { "" };
                    if !d.ends_with('a') {
                        d += &term(r, false);
                    }
                    d += ws(r);
                    d += &term(r, true);
                    if r.chance(3) {
                        d += &format!(" , {}", term(r, true));
                    }
                }
                if r.chance(3) {
                    d += " ;";
                }
            }
            d += if r.chance(12) {
                r.pick(&[" } .", ""])
            } else {
                r.pick(&[" }", "}", " . }", "\n}"])
            };
            d += "\n";
        }
        d
    }

    #[test]
    fn where_it_reads_a_document_it_reads_what_oxttl_reads() {
        let mut r = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut taken, mut total, mut valid) = (0, 0, 0);
        for _ in 0..100_000 {
            let doc = document(&mut r);
            total += 1;
            let expected = oxttl(&doc);
            valid += usize::from(expected.is_some());
            if let Some(got) = ours(&doc) {
                taken += 1;
                assert_eq!(Some(&got), expected.as_ref(), "{doc}");
            }
        }
        // the test means something only if many documents are taken (and many are not)
        eprintln!("taken {taken} of {total}, {valid} valid");
        assert!(taken > total / 10 && taken < total, "{taken} of {total}");
    }

    #[test]
    fn known_documents() {
        let p = "@prefix ex: <http://e.org/> .\n";
        for (body, taken) in [
            ("ex:g { ex:a ex:p ex:b }", true),
            ("ex:g { ex:a ex:p ex:b.c. }", true),
            ("ex:g { ex:a ex:p 1.5. }", true),
            ("ex:g { ex:a ex:p \"x\"@EN. }", true),
            ("ex:g { ex:a ex:p ex:b ; ; ex:q 1 , 2 ; }", true),
            ("ex:a ex:p ex:b .", true),
            ("ex:a ex:p ex:b", false),
            ("ex:g { ex:a ex:p .5 }", true),
            ("ex:g { ex:a ex:p _:b }", false),
            ("ex:g { ex:a ex:p \"\"\"x\"\"\" }", false),
            ("GRAPH ex:g { ex:a ex:p ex:b }", false),
            ("{ ex:a ex:p ex:b }", false),
            ("ex:g { ex:a ex:p ex:b } .", false),
        ] {
            let doc = format!("{p}{body}\n");
            assert_eq!(ours(&doc).is_some(), taken, "{doc}");
            if taken {
                assert_eq!(ours(&doc), oxttl(&doc), "{doc}");
            }
        }
    }

    #[test]
    fn plainly_valid_iris_are_valid() {
        for iri in [
            "http://e.org",
            "http://e.org/",
            "http://e.org/a/b?c=d&e=(f)#g/h?i",
            "urn://x",
            "http://e.org/a:b@c",
            "h+t.t-p://x",
            "http://1.2.3.4/x",
            "http://e.org#",
        ] {
            assert!(plainly_valid(iri.as_bytes()), "{iri}");
            assert!(Iri::parse(iri).is_ok(), "{iri}");
        }
        for iri in [
            "http:/e.org",
            "e.org",
            "http://",
            "http://e.org/a b",
            "http://e.org/a#b#c",
            "http://u@e.org/",
            "http://e.org:80/",
            "http://e.org/%41",
            "http://-e/",
            "1http://e/",
            "http://e.org/\u{e9}",
        ] {
            assert!(!plainly_valid(iri.as_bytes()), "{iri}");
        }
        // random strings over the characters that matter: what looks plainly valid is valid
        let mut r = Rng(7);
        let chars = b"ht:/.-_~!$&'()*+,;=@?#%[]e1 |{}^`\\\"<>";
        let mut plain = 0;
        for _ in 0..200_000 {
            let mut s = String::from(if r.chance(2) { "http://" } else { "" });
            for _ in 0..r.next() % 12 {
                s.push(chars[(r.next() % chars.len() as u64) as usize] as char);
            }
            if plainly_valid(s.as_bytes()) {
                plain += 1;
                assert!(Iri::parse(s.as_str()).is_ok(), "{s}");
            }
        }
        assert!(plain > 1000, "{plain}");
    }

    /// Stream files of the common shape, varied: the events and the dictionary of rsep's
    /// reader and of oxttl's reading are the same, id for id; so are refusals.
    #[test]
    fn stream_files_read_alike() {
        let points = ["http://www.w3.org/ns/prov#generatedAtTime".to_owned()];
        let mut r = Rng(42);
        let (mut taken, mut total) = (0, 0);
        for _ in 0..10_000 {
            let mut doc = String::from(
                "@prefix ex: <http://e.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n",
            );
            let mut t = 0;
            for k in 0..1 + r.next() % 5 {
                t += r.next() % 3;
                let g = match r.next() % 3 {
                    0 => format!("ex:g{k}"),
                    1 => format!("<http://e.org/g{k}>"),
                    _ => format!("ex:h{}", k % 2),
                };
                let time = if r.chance(40) {
                    "\"1\"".to_owned()
                } else {
                    t.to_string()
                };
                let pred = if r.chance(15) {
                    "ex:at"
                } else {
                    r.pick(&[
                        "prov:generatedAtTime",
                        "<http://www.w3.org/ns/prov#generatedAtTime>",
                    ])
                };
                doc += &format!("{g} {pred} {time} .\n{g} {{");
                for _ in 0..r.next() % 4 {
                    doc += &format!(
                        " {} {} {} .",
                        term(&mut r, false),
                        term(&mut r, false),
                        term(&mut r, true)
                    );
                }
                doc += " }\n";
            }
            total += 1;
            let (mut a, mut b) = (Terms::new(), Terms::new());
            let fast = read_events_with(doc.as_bytes(), &mut a, &points, 1 << 26, true);
            let slow = read_events_with(doc.as_bytes(), &mut b, &points, 1 << 26, false);
            match (fast, slow) {
                (Ok(x), Ok(y)) => {
                    taken += 1;
                    assert_eq!(
                        (x.times, x.offsets, x.triples),
                        (y.times, y.offsets, y.triples),
                        "{doc}"
                    );
                    assert_eq!(a.len(), b.len(), "{doc}");
                    for id in 1..=a.len() as TermId {
                        assert_eq!(a.term(id), b.term(id), "{doc}");
                    }
                }
                (Err(x), Err(y)) => assert_eq!(x, y, "{doc}"),
                (x, y) => panic!("{doc}: {x:?} / {y:?}"),
            }
        }
        eprintln!("taken {taken} of {total}");
        assert!(taken > total / 10 && taken < total, "{taken} of {total}");
    }
}
