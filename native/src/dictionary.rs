//! The term dictionary: one `u32` id per distinct RDF term of a run.

use hashbrown::{DefaultHashBuilder, HashTable};
use oxrdf::vocab::xsd;
use oxrdf::{BlankNodeRef, GraphName, LiteralRef, NamedNodeRef, Term, TermRef};
use oxsdatatypes::{Decimal, Double, Float, Integer};
use std::hash::BuildHasher;
use std::str::FromStr;

/// An id of [`Terms`]. Ids are dense, in order of first sight, from 1.
pub type TermId = u32;

/// The id of the default graph in a quad's graph position; it names no term.
pub const DEFAULT_GRAPH: TermId = 0;

/// Terms and their ids, and each numeric literal's value decoded once when first seen.
///
/// Each term's text is held once, in one string (`text`) with the others, and its entry says
/// where; the hash table holds only ids with their terms' hashes. Most terms of a stream are
/// new, so a term of its own allocation each (oxrdf's `Term`), or a map holding a second copy,
/// would make the dictionary's allocations and memory most of a reading's cost; and growing
/// the table would read every term again to re-hash it.
#[derive(Default)]
pub struct Terms {
    table: HashTable<(u64, TermId)>,
    hasher: DefaultHashBuilder,
    // entry 0 stands for the default graph and holds no term
    entries: Vec<Entry>,
    text: String,
    numbers: Vec<Option<f64>>,
    /// ids a sweep freed, given again (the lowest first) before any new one
    free: Vec<TermId>,
}

/// What a term is, and where its text is in [`Terms`]' `text`: `len` bytes from `start`;
/// a language-tagged or typed literal's value is the first `split` of them, its language
/// tag or datatype IRI the rest.
#[derive(Clone, Copy)]
struct Entry {
    start: usize,
    len: u32,
    split: u32,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    None,
    NamedNode,
    BlankNode,
    Simple,
    LanguageTagged,
    Typed,
}

const NO_TERM: Entry = Entry {
    start: 0,
    len: 0,
    split: 0,
    kind: Kind::None,
};

impl Terms {
    pub fn new() -> Self {
        Self {
            table: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            entries: vec![NO_TERM],
            text: String::new(),
            numbers: vec![None],
            free: Vec::new(),
        }
    }

    /// The id of `term`, given a new one when it was not seen before.
    pub fn intern(&mut self, term: Term) -> TermId {
        self.intern_ref(term.as_ref()).0
    }

    /// The id of `term` and whether it is new: a term read from a document's bytes is
    /// looked up before its text is copied, so a term seen before costs no copy.
    pub fn intern_ref(&mut self, term: TermRef<'_>) -> (TermId, bool) {
        let hash = self.hasher.hash_one(term);
        match self.find(hash, term) {
            Some(id) => (id, false),
            None => (self.insert(hash, term), true),
        }
    }

    fn find(&self, hash: u64, term: TermRef<'_>) -> Option<TermId> {
        self.table
            .find(hash, |&(h, id)| h == hash && self.term(id) == Some(term))
            .map(|&(_, id)| id)
    }

    fn insert(&mut self, hash: u64, term: TermRef<'_>) -> TermId {
        let reused = self.free.pop();
        let id = match reused {
            Some(id) => id,
            None => TermId::try_from(self.entries.len()).expect("more than 2^32 distinct terms"),
        };
        let start = self.text.len();
        let (kind, split) = match term {
            TermRef::NamedNode(n) => {
                self.text.push_str(n.as_str());
                (Kind::NamedNode, 0)
            }
            TermRef::BlankNode(b) => {
                self.text.push_str(b.as_str());
                (Kind::BlankNode, 0)
            }
            TermRef::Literal(l) => {
                self.text.push_str(l.value());
                let split = l.value().len();
                if let Some(lang) = l.language() {
                    self.text.push_str(lang);
                    (Kind::LanguageTagged, split)
                } else if l.datatype() == xsd::STRING {
                    (Kind::Simple, split)
                } else {
                    self.text.push_str(l.datatype().as_str());
                    (Kind::Typed, split)
                }
            }
            #[allow(unreachable_patterns)]
            _ => unreachable!("a triple term (RDF 1.2 is not enabled)"),
        };
        let len = self.text.len() - start;
        let entry = Entry {
            start,
            len: u32::try_from(len).expect("a term under 4 GiB"),
            split: u32::try_from(split).expect("a term under 4 GiB"),
            kind,
        };
        let number = match term {
            TermRef::Literal(l) => numeric_value(l),
            _ => None,
        };
        if reused.is_some() {
            self.entries[id as usize] = entry;
            self.numbers[id as usize] = number;
        } else {
            self.entries.push(entry);
            self.numbers.push(number);
        }
        self.table.insert_unique(hash, (hash, id), |&(h, _)| h);
        id
    }

    /// Room for `n` more terms of `bytes` bytes of text in all without growing.
    pub fn reserve(&mut self, n: usize, bytes: usize) {
        self.table.reserve(n, |&(h, _)| h);
        self.entries.reserve(n);
        self.numbers.reserve(n);
        self.text.reserve(bytes);
    }

    /// Forget every id from `len` + 1 on (the terms given ids after the dictionary held
    /// `len`): a reader that gives up on a document leaves the dictionary as it found it.
    pub fn truncate(&mut self, len: usize) {
        debug_assert!(self.free.is_empty(), "truncate after a sweep");
        while self.entries.len() > len + 1 {
            let id = (self.entries.len() - 1) as TermId;
            let hash = self.hasher.hash_one(self.term(id).expect("a term"));
            if let Ok(entry) = self.table.find_entry(hash, |&(_, i)| i == id) {
                entry.remove();
            }
            let e = self.entries.pop().expect("an entry");
            self.text.truncate(e.start);
            self.numbers.pop();
        }
    }

    /// The id of a quad's graph name: [`DEFAULT_GRAPH`] for the default graph.
    pub fn intern_graph(&mut self, graph: GraphName) -> TermId {
        match graph {
            GraphName::DefaultGraph => DEFAULT_GRAPH,
            GraphName::NamedNode(n) => self.intern(n.into()),
            GraphName::BlankNode(b) => self.intern(b.into()),
        }
    }

    /// The id of `term` if it was seen, without giving it one.
    pub fn get(&self, term: &Term) -> Option<TermId> {
        self.get_ref(term.as_ref())
    }

    /// [`Terms::get`] of a borrowed term.
    pub fn get_ref(&self, term: TermRef<'_>) -> Option<TermId> {
        self.find(self.hasher.hash_one(term), term)
    }

    /// The term of an id, `None` for the default graph's id or an id never given.
    pub fn term(&self, id: TermId) -> Option<TermRef<'_>> {
        let e = self.entries.get(id as usize)?;
        let text = &self.text[e.start..e.start + e.len as usize];
        let (value, rest) = text.split_at(e.split as usize);
        Some(match e.kind {
            Kind::None => return None,
            Kind::NamedNode => NamedNodeRef::new_unchecked(text).into(),
            Kind::BlankNode => BlankNodeRef::new_unchecked(text).into(),
            Kind::Simple => LiteralRef::new_simple_literal(value).into(),
            Kind::LanguageTagged => {
                LiteralRef::new_language_tagged_literal_unchecked(value, rest).into()
            }
            Kind::Typed => {
                LiteralRef::new_typed_literal(value, NamedNodeRef::new_unchecked(rest)).into()
            }
        })
    }

    /// The numeric value of a literal of an XSD numeric datatype whose lexical form is
    /// valid; `None` for every other term.
    pub fn number(&self, id: TermId) -> Option<f64> {
        self.numbers.get(id as usize).copied().flatten()
    }

    /// How many terms have ids (the default graph's id not counted).
    pub fn len(&self) -> usize {
        self.entries.len() - 1 - self.free.len()
    }

    /// One more than the highest id ever given: the size of a table indexed by id.
    pub fn slots(&self) -> usize {
        self.entries.len()
    }

    /// Forget every term whose id's bit is not set in `live` (a bit an id, as
    /// [`Terms::slots`] counts them): its id is given again to a later new term, and its
    /// text's room is taken back. The caller holds no freed id (whatever still refers to a
    /// term sets its bit), so an id names one term for as long as anything refers to it.
    /// Returns how many terms were freed.
    pub fn sweep(&mut self, live: &[u64]) -> usize {
        let is_live = |id: usize| live.get(id / 64).is_some_and(|w| w & (1 << (id % 64)) != 0);
        let mut text = String::with_capacity(self.text.len() / 2);
        let mut freed = Vec::new();
        for id in 1..self.entries.len() {
            let e = &mut self.entries[id];
            if e.kind == Kind::None {
                continue;
            }
            if is_live(id) {
                let start = text.len();
                text.push_str(&self.text[e.start..e.start + e.len as usize]);
                e.start = start;
            } else {
                *e = NO_TERM;
                self.numbers[id] = None;
                freed.push(id as TermId);
            }
        }
        self.text = text;
        if !freed.is_empty() {
            self.table.retain(|&mut (_, id)| is_live(id as usize));
            self.table.shrink_to(self.table.len(), |&(h, _)| h);
        }
        // given again lowest first: the free list is popped from its end
        self.free.extend(freed.iter().rev());
        self.free.sort_unstable_by(|a, b| b.cmp(a));
        freed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// XSD's integer types derived from xsd:integer: their values are integers too.
const INTEGER_TYPES: [NamedNodeRef<'static>; 13] = [
    xsd::INTEGER,
    xsd::LONG,
    xsd::INT,
    xsd::SHORT,
    xsd::BYTE,
    xsd::NON_NEGATIVE_INTEGER,
    xsd::NON_POSITIVE_INTEGER,
    xsd::NEGATIVE_INTEGER,
    xsd::POSITIVE_INTEGER,
    xsd::UNSIGNED_LONG,
    xsd::UNSIGNED_INT,
    xsd::UNSIGNED_SHORT,
    xsd::UNSIGNED_BYTE,
];

fn numeric_value(l: LiteralRef<'_>) -> Option<f64> {
    let dt = l.datatype();
    let v = l.value();
    if dt == xsd::DOUBLE {
        Double::from_str(v).ok().map(f64::from)
    } else if dt == xsd::FLOAT {
        Float::from_str(v).ok().map(|f| f64::from(f32::from(f)))
    } else if dt == xsd::DECIMAL {
        Decimal::from_str(v)
            .ok()
            .map(|d| f64::from(Double::from(d)))
    } else if INTEGER_TYPES.contains(&dt) {
        Integer::from_str(v)
            .ok()
            .map(|i| f64::from(Double::from(i)))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::{BlankNode, Literal, NamedNode};

    #[test]
    fn ids_are_dense_and_stable() {
        let mut t = Terms::new();
        let a = t.intern(NamedNode::new_unchecked("http://e/a").into());
        let b = t.intern(BlankNode::new_unchecked("b0").into());
        assert_eq!((a, b), (1, 2));
        assert_eq!(t.intern(NamedNode::new_unchecked("http://e/a").into()), 1);
        assert_eq!(t.len(), 2);
        assert_eq!(t.term(1).unwrap().to_string(), "<http://e/a>");
        assert_eq!(t.term(DEFAULT_GRAPH), None);
        assert_eq!(t.intern_graph(GraphName::DefaultGraph), DEFAULT_GRAPH);
        // a borrowed term finds the owned one's id
        let a_ref = NamedNodeRef::new_unchecked("http://e/a").into();
        assert_eq!(t.intern_ref(a_ref), (1, false));
        assert_eq!(t.get_ref(a_ref), Some(1));
    }

    #[test]
    fn truncate_forgets_the_later_ids() {
        let mut t = Terms::new();
        let a = t.intern(NamedNode::new_unchecked("http://e/a").into());
        let mark = t.len();
        t.intern(Literal::new_typed_literal("1", xsd::INTEGER).into());
        t.intern(NamedNode::new_unchecked("http://e/b").into());
        t.truncate(mark);
        assert_eq!(t.len(), 1);
        assert_eq!(t.get(&NamedNode::new_unchecked("http://e/b").into()), None);
        assert_eq!(
            t.get(&NamedNode::new_unchecked("http://e/a").into()),
            Some(a)
        );
        // the freed ids are given again, in order
        let b = t.intern(NamedNode::new_unchecked("http://e/b").into());
        assert_eq!(b, 2);
        assert_eq!(t.number(b), None);
    }

    #[test]
    fn numbers_are_decoded_once_by_datatype() {
        let mut t = Terms::new();
        let mut num = |lex: &str, dt: NamedNodeRef<'_>| {
            let id = t.intern(Literal::new_typed_literal(lex, dt).into());
            t.number(id)
        };
        assert_eq!(num("42", xsd::INTEGER), Some(42.0));
        assert_eq!(num("-1.50", xsd::DECIMAL), Some(-1.5));
        assert_eq!(num("1e3", xsd::DOUBLE), Some(1000.0));
        assert_eq!(num("INF", xsd::DOUBLE), Some(f64::INFINITY));
        assert_eq!(num("0.1", xsd::FLOAT), Some(f64::from(0.1f32)));
        assert_eq!(num("7", xsd::UNSIGNED_BYTE), Some(7.0));
        assert_eq!(num("x", xsd::INTEGER), None); // not a valid lexical form
        assert_eq!(num("42", xsd::STRING), None);
    }
}
