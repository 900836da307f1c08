// The dialects' common surface (SPARQL 1.1 with RSP-QL, C-SPARQL, CQELS, SPASEQ and
// EP-SPARQL's stream clauses) as a CodeMirror stream mode: a tokenizer is enough for
// highlighting, and the server's parser gives the errors.
import { HighlightStyle, StreamLanguage, syntaxHighlighting } from "@codemirror/language";
import { tags as t } from "@lezer/highlight";

const SPARQL = `SELECT CONSTRUCT ASK DESCRIBE WHERE FROM NAMED PREFIX BASE FILTER OPTIONAL UNION
  MINUS GRAPH SERVICE BIND VALUES GROUP BY HAVING ORDER ASC DESC LIMIT OFFSET DISTINCT REDUCED
  AS NOT IN EXISTS UNDEF TRUE FALSE`;
const STREAMS = `REGISTER QUERY STREAM RSTREAM ISTREAM DSTREAM WINDOW ON RANGE STEP SLIDE TUMBLING
  LND WIN EVENT MATCH SEQ AND OPTIONALSEQ EQUALS OPTIONALEQ CHRONOLOGICAL RECENT UNRESTRICTED
  WITHIN DEFINE GPM NOW TRIPLES ALL FIRST LAST EVERY`;
const FUNCTIONS = `COUNT SUM AVG MIN MAX SAMPLE GROUP_CONCAT STR LANG DATATYPE BOUND IRI URI BNODE
  ABS CEIL FLOOR ROUND CONCAT STRLEN UCASE LCASE CONTAINS STRSTARTS STRENDS REGEX REPLACE IF
  COALESCE ISIRI ISURI ISBLANK ISLITERAL ISNUMERIC YEAR MONTH DAY HOURS MINUTES SECONDS
  GETDURATION GETSTARTTIME GETENDTIME`;
const set = (s) => new Set(s.split(/\s+/).filter(Boolean));
const keywords = set(SPARQL), streamKeywords = set(STREAMS), functions = set(FUNCTIONS);

function inString(stream, state) {
  while (!stream.eol()) {
    if (stream.match(state.string)) { state.string = null; return "string"; }
    if (stream.next() === "\\") stream.next();
  }
  // (a long string goes on at the next line; a short one ends here, as the parser says)
  if (state.string.length === 1) state.string = null;
  return "string";
}

export const streamSparql = StreamLanguage.define({
  name: "stream-sparql",
  startState: () => ({ string: null }),
  token(stream, state) {
    if (state.string) return inString(stream, state);
    if (stream.eatSpace()) return null;
    if (stream.match("#")) { stream.skipToEnd(); return "comment"; }
    if (stream.match(/^<[^<>"{}|^`\\\s]*>/)) return "url";
    if (stream.match(/^[?$][\w]+/)) return "variableName";
    for (const q of ['"""', "'''", '"', "'"]) {
      if (stream.match(q)) { state.string = q; return inString(stream, state); }
    }
    if (stream.match(/^@[a-zA-Z]+(-[a-zA-Z0-9]+)*/)) return "meta";
    if (stream.match(/^\^\^/)) return "operator";
    if (stream.match(/^P(T?\d+(\.\d+)?[YMWDHMS])+/)) return "number";  // ISO durations
    if (stream.match(/^[+-]?\d+(\.\d+)?([eE][+-]?\d+)?(ms|s|m|h|d)?\b/)) return "number";
    if (stream.match(/^[A-Za-z_][\w.-]*?:[\w.-]*/) || stream.match(/^:[\w.-]*/)) return "typeName";
    const w = stream.match(/^[A-Za-z_][\w]*/);
    if (w) {
      const u = w[0].toUpperCase();
      if (keywords.has(u) || w[0] === "a") return "keyword";
      if (streamKeywords.has(u)) return "controlKeyword";
      if (functions.has(u)) return "variableName.function";
      return "name";
    }
    if (stream.match(/^[{}()[\]]/)) return "bracket";
    stream.next();
    return "operator";
  },
  languageData: { commentTokens: { line: "#" } },
});

// the stream clauses (WINDOW, RANGE, SEQ...) apart from SPARQL's own keywords
export const streamHighlight = syntaxHighlighting(HighlightStyle.define([
  { tag: t.keyword, color: "#7a1fa2", fontWeight: "600" },
  { tag: t.controlKeyword, color: "#00796b", fontWeight: "600" },
  { tag: t.variableName, color: "#1e4fd8" },
  { tag: t.string, color: "#b3261e" },
  { tag: t.number, color: "#2e7d32" },
  { tag: t.comment, color: "#7b8794", fontStyle: "italic" },
  { tag: t.url, color: "#0d6b8c" },
  { tag: t.typeName, color: "#0d6b8c" },
  { tag: t.function(t.variableName), color: "#8a5a00" },
  { tag: t.meta, color: "#8a5a00" },
]));
