"""Jelly (the binary RDF streaming format, https://w3id.org/jelly) read and written with
pyjelly: one stream frame is one RDF Message (the W3C RSP CG's reading of Jelly).

pyjelly decodes and encodes the Protobuf; rsep only maps its terms to pyoxigraph's
(``_OxAdapter``) and back (``_OxEncoder``), so that no term goes through text, and cuts a
delimited stream at its frames' length prefixes (``Delimited``), so that a stream that
arrives in pieces (standard input, TCP) is read a frame at a time and a frame that does not
decode is rejected on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO, Any

import pyoxigraph as ox
from pyjelly import jelly
from pyjelly.options import StreamParameters
from pyjelly.parse.decode import Adapter, Decoder, ParserOptions, options_from_frame
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


_STATEMENTS = ("triple", "quad", "graph_start", "graph_end")
_ROWS = {jelly.PHYSICAL_STREAM_TYPE_TRIPLES: ("triple",),
         jelly.PHYSICAL_STREAM_TYPE_QUADS: ("quad",),
         jelly.PHYSICAL_STREAM_TYPE_GRAPHS: ("triple", "graph_start", "graph_end")}

MAX_FRAME = 1 << 26  # a longer length prefix is not taken for a frame: the stream is broken


class FrameDecoder:
    """Decodes a Jelly stream's frames one by one (the bytes of one ``RdfStreamFrame``
    each), with the options of its first frame that has rows."""

    def __init__(self) -> None:
        self._decoder: Decoder | None = None
        self._physical = 0

    @property
    def started(self) -> bool:
        """The stream's options have been read."""
        return self._decoder is not None

    def decode(self, data: bytes) -> list[ox.Quad]:
        """The quads of one frame; JellyError if it is not one or does not decode."""
        try:
            frame = jelly.RdfStreamFrame.FromString(data)
        except Exception as e:  # Protobuf's DecodeError, or what a truncated message raises
            raise JellyError(f"not a Jelly frame: {e}") from e
        if self._decoder is None:
            if not frame.rows:
                return []  # an empty message before the options
            try:
                self._decoder = Decoder(adapter=_OxAdapter(options_from_frame(frame, delimited=True)))
            except Exception as e:
                raise JellyError(f"no stream options in the first frame: {e}") from e
        self._check(frame)
        try:
            return [q for q in self._decoder.iter_rows(frame) if isinstance(q, ox.Quad)]
        except TypeError as e:
            # pyoxigraph's terms refused where RDF 1.2 has no place for them
            raise JellyError("frame does not decode: a term pyoxigraph cannot hold in its place "
                             "(a quoted triple as a subject, or generalized RDF: a literal subject "
                             f"or graph, a blank node or literal predicate): {str(e).splitlines()[0]}") from e
        except Exception as e:
            raise JellyError(f"frame does not decode: {str(e).splitlines()[0] if str(e) else e!r}") from e

    def _check(self, frame: Any) -> None:
        """The rows a stream's physical type forbids (Jelly's spec; pyjelly reads them as if
        they were allowed, Jelly's conformance cases reject them)."""
        for row in frame.rows:
            kind = row.WhichOneof("row")
            if kind == "options":
                self._physical = row.options.physical_type
                continue
            allowed = _ROWS.get(self._physical)
            if allowed is not None and kind in _STATEMENTS and kind not in allowed:
                raise JellyError(f"frame does not decode: a {kind} row in a "
                                 f"{jelly.PhysicalStreamType.Name(self._physical)} stream")
            if kind == "graph_start" and row.graph_start.WhichOneof("graph") is None:
                raise JellyError("frame does not decode: a graph_start row without its graph "
                                 "(a graph is never repeated from an earlier row)")


class Delimited:
    """Cuts a delimited Jelly stream (each frame a varint length, then its bytes) into
    frames as its bytes arrive; ``offset`` is where the next frame starts."""

    def __init__(self) -> None:
        self.buf = b""
        self.offset = 0

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """The frames ``data`` completes, with their byte offsets."""
        buf = self.buf + data
        out = []
        i = 0
        while i < len(buf):
            n = shift = 0
            j = i
            while j < len(buf) and buf[j] & 0x80:
                n |= (buf[j] & 0x7F) << shift
                shift += 7
                j += 1
            if j == len(buf):
                break  # the length itself is not whole yet
            n |= buf[j] << shift
            if n > MAX_FRAME:
                raise JellyError(f"byte {self.offset + i}: a frame length of {n} bytes "
                                 f"(over {MAX_FRAME}): not a delimited Jelly stream")
            if j + 1 + n > len(buf):
                break
            out.append((self.offset + i, buf[j + 1:j + 1 + n]))
            i = j + 1 + n
        self.buf = buf[i:]
        self.offset += i
        return out


def read_frames(chunks: Iterable[bytes], *, delimited: bool = True
                ) -> Iterator[tuple[int, list[ox.Quad] | JellyError]]:
    """(position, quads) for each frame of a Jelly stream given as byte chunks: a delimited
    stream (a file, a TCP connection, a request body), or, ``delimited=False``, one frame
    per chunk (MQTT). The position is a byte offset (delimited) or the chunk's index. A
    frame that does not decode gives a JellyError in its place and the stream goes on; in a
    delimited stream, a first frame that is not Jelly ends it (its lengths mean nothing)."""
    dec = FrameDecoder()
    cutter = Delimited()
    n = 0
    for data in chunks:
        frames = cutter.feed(data) if delimited else [(n, data)]
        n += 1
        for pos, frame in frames:
            try:
                yield pos, dec.decode(frame)
            except JellyError as e:
                if delimited and not dec.started:
                    raise JellyError(f"not a Jelly stream: {e}") from e
                yield pos, e
    if cutter.buf:
        yield cutter.offset, JellyError(f"the stream ends inside a frame ({len(cutter.buf)} bytes of it)")


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
