//! The Python module `rsep._core`.

use crate::dictionary::{TermId, Terms as CoreTerms};
use crate::reader::{parse as core_parse, Format};
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
        self.inner.term(id).map(ToString::to_string)
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

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Terms>()?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    Ok(())
}
