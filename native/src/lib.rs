//! rsep's native core: RDF text read once into a term dictionary and batches of integer ids,
//! and the first operator on ids (a windowed SELECT of one triple pattern, [`select`]) over
//! rsep's stream files read into events ([`stream`]); windows of a BGP grouped ([`bgp`]),
//! several windows joined through a background graph ([`join`]), SPASEQ's chains
//! ([`chain`]) and EP-SPARQL's SEQ ([`epsparql`]).
//!
//! The stream readers of rsep parse with oxigraph's own parsers (oxttl), the ones pyoxigraph
//! wraps, so a quad read here is the quad pyoxigraph reads; but no Python object is made per
//! term. A stream file in the common subset of TriG is read by rsep's own reader first
//! ([`trig`]: each term looked up by its bytes, built only when new), which gives the quads
//! oxttl gives and hands any other file to oxttl. Each distinct term gets one `u32` id in a [`Terms`] dictionary, numeric literals
//! have their value decoded once, and a document becomes a [`QuadBatch`]: four ids a quad
//! (subject, predicate, object, graph; graph 0 is the default graph) in document order, with
//! every syntax error located (line, column) beside them while the parse goes on.

pub mod bgp;
pub mod chain;
pub mod dictionary;
pub mod epsparql;
pub mod formal;
pub mod join;
pub mod nquads;
pub mod policy;
pub mod reader;
pub mod rsepql;
pub mod select;
pub mod source;
pub mod stream;
pub mod trig;

#[cfg(feature = "python")]
mod py;

pub use dictionary::{TermId, Terms, DEFAULT_GRAPH};
pub use reader::{parse, Format, QuadBatch, SyntaxError};
