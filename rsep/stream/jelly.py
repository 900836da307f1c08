"""Jelly (the binary RDF streaming format, https://w3id.org/jelly) read and written with
pyjelly: one stream frame is one RDF Message (the W3C RSP CG's reading of Jelly).

pyjelly decodes and encodes the Protobuf; rsep only maps its terms to pyoxigraph's
(``_OxAdapter``) and back (``_OxEncoder``), so that no term goes through text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO, Any

import pyoxigraph as ox
from pyjelly import jelly
from pyjelly.options import StreamParameters
from pyjelly.parse.decode import Adapter, Decoder, ParserOptions
from pyjelly.parse.ioutils import get_options_and_frames
from pyjelly.serialize.encode import Rows, Slot, TermEncoder
from pyjelly.serialize.ioutils import write_delimited
from pyjelly.serialize.streams import QuadStream, SerializerOptions

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"


class JellyError(ValueError):
    """A Jelly stream that cannot be read on (its options, or a frame that is not Protobuf)."""


class _OxAdapter(Adapter):
    """Decoded Jelly rows as pyoxigraph quads (namespace declarations are dropped)."""

    def __init__(self, options: ParserOptions) -> None:
        super().__init__(options=options)
        self._graph: Any = ox.DefaultGraph()

    def iri(self, iri: str) -> ox.NamedNode:
        return ox.NamedNode(iri)

    def bnode(self, bnode: str) -> ox.BlankNode:
        return ox.BlankNode(bnode)

    def default_graph(self) -> ox.DefaultGraph:
        return ox.DefaultGraph()

    def literal(self, lex: str, language: str | None = None,
                datatype: str | None = None) -> ox.Literal:
        if language:
            return ox.Literal(lex, language=language)
        if datatype:
            return ox.Literal(lex, datatype=ox.NamedNode(datatype))
        return ox.Literal(lex)

    def quad(self, terms: Iterable[Any]) -> ox.Quad:
        return ox.Quad(*terms)

    def triple(self, terms: Iterable[Any]) -> ox.Quad:
        # a triples stream (its graph is the default one) or a graphs stream's current graph
        s, p, o = terms
        return ox.Quad(s, p, o, self._graph)

    def graph_start(self, graph_id: Any) -> None:
        self._graph = graph_id

    def graph_end(self) -> None:
        self._graph = ox.DefaultGraph()

    def namespace_declaration(self, name: str, iri: str) -> None:
        return None

    def quoted_triple(self, terms: Iterable[Any]) -> ox.Triple:
        return ox.Triple(*terms)


def read_frames(inp: IO[bytes]) -> Iterator[list[ox.Quad] | JellyError]:
    """The quads of each frame of a delimited Jelly stream, in order; a frame whose rows do
    not decode gives a JellyError in its place and the stream goes on."""
    try:
        options, frames = get_options_and_frames(inp)
    except Exception as e:  # pyjelly's own errors and Protobuf's DecodeError
        raise JellyError(f"not a Jelly stream: {e}") from e
    decoder = Decoder(adapter=_OxAdapter(options))
    it = iter(frames)
    while True:
        try:
            frame = next(it)
        except StopIteration:
            return
        except Exception as e:
            raise JellyError(f"unreadable frame: {e}") from e
        try:
            yield [q for q in decoder.iter_rows(frame) if isinstance(q, ox.Quad)]
        except Exception as e:
            yield JellyError(f"frame does not decode: {e}")


class _OxEncoder(TermEncoder):
    """pyoxigraph terms into Jelly rows."""

    def encode_spo(self, term: object, slot: Slot, statement: Any) -> Rows:
        if isinstance(term, ox.NamedNode):
            return self.encode_iri(term.value, self.get_iri_field(statement, slot))
        if isinstance(term, ox.Literal):
            return self._literal(term, self.get_literal_field(statement, slot))
        if isinstance(term, ox.BlankNode):
            self.set_bnode_field(statement, slot, term.value)
            return ()
        if isinstance(term, ox.Triple):
            return self.encode_quoted_triple((term.subject, term.predicate, term.object),
                                             self.get_triple_field(statement, slot))
        return super().encode_spo(term, slot, statement)

    def encode_graph(self, term: object, statement: Any) -> Rows:
        if isinstance(term, ox.DefaultGraph):
            return self.encode_default_graph(statement.g_default_graph)
        if isinstance(term, ox.NamedNode):
            return self.encode_iri(term.value, statement.g_iri)
        if isinstance(term, ox.BlankNode):
            statement.g_bnode = term.value
            return ()
        return super().encode_graph(term, statement)

    def _literal(self, term: ox.Literal, field: Any) -> Rows:
        dt = term.datatype.value
        if term.language:
            return self.encode_literal(lex=term.value, language=term.language, literal=field)
        return self.encode_literal(lex=term.value, datatype=None if dt == _XSD_STRING else dt,
                                   literal=field)


class JellyWriter:
    """Writes RDF Messages as a delimited Jelly quads stream of datasets: one frame each."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        opts = SerializerOptions(logical_type=jelly.LOGICAL_STREAM_TYPE_DATASETS,
                                 params=StreamParameters(generalized_statements=False, rdf_star=True))
        self._stream = QuadStream(encoder=_OxEncoder(lookup_preset=opts.lookup_preset), options=opts)

    def write(self, quads: Iterable[ox.Quad]) -> None:
        st = self._stream
        st.enroll()  # the options row, once, in the first frame
        for q in quads:
            # (a datasets flow cuts no frame inside a dataset; were one cut, its rows still go out)
            if (f := st.quad((q.subject, q.predicate, q.object, q.graph_name))) is not None:
                write_delimited(f, self.out)
        frame = st.flow.frame_from_dataset()
        # An empty message is an empty frame: a frame is a message, whatever it holds.
        write_delimited(frame if frame is not None else jelly.RdfStreamFrame(), self.out)

    def close(self) -> None:
        self.out.flush()
