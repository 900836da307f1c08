"""The native path of a SPASEQ chain (issue 50, first to fourth stages): read, matched and
written on integer ids in Rust (rsep._core: native/src/source.rs and chain.rs), terms
decoded only for output; the stream file is read in parts as the engine goes, each
instant's events let go of once matched and the term dictionary swept between instants
(the ids live runs and partition keys hold kept), so a run's memory is bounded by its live
runs, not by the file.

:func:`native_plan` is its planner. It takes what :class:`rsep.spaseq.chain.ChainEngine`
runs, narrowed, and skip-till-any besides (which :class:`rsep.spaseq.nfa.NFAEngine` runs
today): a SEQ of plain GPMs under ``,`` (strict contiguity), ``;`` (skip-till-next) and
``:`` (skip-till-any) over one stream, each GPM one basic graph pattern over the event's graph
(no blank node, no background GRAPH) with FILTERs each a conjunction of comparisons
(``<, <=, >, >=, =, !=``) of variables and xsd:integer, xsd:decimal or xsd:double literals
and ``+ - *`` of those (``?after >= ?before + 2``, computed as rsep/sparql/filters.py
computes it), those on the GPM's own variables tested on the event, those reading earlier
GPMs' on the run (``?p2 > ?p1``); SELECT of variables (DISTINCT or not), WITHIN or not. Any of those
GPMs may be under Kleene+ (``B+``, first in the sequence or after any operator), run as
:class:`~rsep.spaseq.nfa.NFAEngine` runs it (002 Defs. 13, 14 as docs/semantics.md reads
them): each iteration binds the GPM's own variables afresh and joins on the others, the
iterations strictly contiguous after another atom and skip-till-next when leading, a copy of
the run going on at each; a match writes each iteration's selected own variables in its
``"iterations"`` as today's path does. A negated GPM (``B!``, between two others, Appendix
B.0.1 as docs/semantics.md reads it) is no state: the next one's runs die at an event it
matches joined with their mappings (NFAEngine's Algorithm 9), the neighbours joined by the
weaker of its two operators. A state may be a conjunction or disjunction of such GPMs
(002 Defs. 8, 9: ``(B & C)``, ``(B | C)``, a disjunction of conjunctions ``(B | C & D)``),
run as NFAEngine's ``_bop`` runs it on the instant's one event: an alternative's conjuncts
joined in order (a conjunct's stateful FILTERs read the run's and the earlier conjuncts'
variables), a copy of the run for each alternative taken, one step a conjunct. Any plain GPM
may be optional (``B?``, Appendix B.0.2 as docs/semantics.md reads it, NFAEngine._enter's ε
edge): a run entering its state also goes on to the next at once, waiting there with the
weaker of the two selections, and past optional atoms at the start runs start at the next
state too. For anything else (a disjunction inside a conjunction, a later FILTER reading
what one alternative of a disjunction or an optional atom does not bind, an optional atom at
the start before a Kleene+, a conjunction or a disjunction, OPTIONAL or any
other pattern, a FILTER of anything else, SELECT expressions, PARTITION BY, several streams,
an engine option the chain engine does not run) it says why not, and the query runs as
before. With ``no-window-pushing``, where NFAEngine runs the query today (``:``, Kleene+,
negation, conjunction, disjunction, an optional atom), it keeps closed windows' runs until an event touches
them or every 1024th instant, counting them against ``max-runs``: the native engine counts
the runs it dropped at a window's close since such an instant as live too, so its count
still bounds today's.

:func:`run` then runs such a query over one stream file, or returns why it did not: the
native reader takes only files of the common shape (native/src/stream.rs; a refusal of
the reader found late, after rows were written, leaves nothing to keep), and the engine
refuses an input on which it would not write what today's path writes, byte for byte: a
comparison of values rsep/sparql/filters.py does not decide itself or of anything but
those numbers, more live
runs than the engine's bound (today's path drops the oldest and warns; under ``:`` the
native engine keeps a run per path where today's shares them, so it may refuse where
today's path would not have cut) or more matches at one instant than ``--max-matches``
(an error there). A Kleene+ iteration that gives one output row several values of its own
variables writes them in today's order (Python's text of pyoxigraph's term objects, which
chain.rs's ``python_repr`` writes). Literals pyoxigraph's store reads
back in another form are replaced by their stored form, as today's path matches and
writes them. ``RSEP_PURE=1`` turns the path off (the pure build runs Python only), and so
does ``RSEP_NATIVE=0`` alone (today's path with the compiled build, as measured against it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from rsep.algebra.expression import Expression, Variable
from rsep.algebra.spaseq import GPM, And, AtomKind, BopNode, Leaf, Or, SpaseqQuery, Strategy
from rsep.sparql.matcher import Canon
from rsep.sparql.numeric import Cmp, Operand, numeric_conjunction
from rsep.stream import native as native_core
from rsep.stream.files import StreamFile
from rsep.stream.native import Outcome as Outcome
from rsep.stream.native import core as core
from rsep.stream.time import TimeError, TimeKind

if TYPE_CHECKING:
    from rsep.spaseq.gpm import GPMEvaluator
    from rsep.spaseq.options import NFAOptions

NATIVE = "native"

MAX_PATTERNS = 8  # triple patterns of a GPM (each event's solutions by a nested loop)

_SELECT = {Strategy.STRICT: ",", Strategy.NEXT: ";", Strategy.ANY: ":"}

# per position: ("var", number) or ("term", the term in N-Triples syntax)
Slots = tuple[tuple[str, int | str], ...]
# a GPM: (triple patterns, the variables it binds, its FILTERs on those alone, its FILTERs
# reading earlier GPMs' variables, the IRI of the stream whose events it matches)
NativeGpm = tuple[tuple[Slots, ...], tuple[int, ...], tuple[Cmp, ...], tuple[Cmp, ...], str]
# a state's atom: (Kleene+, its leaf key, the variables each iteration binds afresh, the
# selected ones of those in name order with their names, the GPM's name, the negated GPMs
# just before it: their numbers in ``negs``, and a conjunction's or disjunction's
# alternatives, each a conjunction of (leaf key, GPM); () for one GPM, ``gpms``'; and
# whether it is optional)
NativeAtom = tuple[bool, int, tuple[int, ...], tuple[tuple[str, int], ...], str,
                   tuple[int, ...], tuple[tuple[tuple[int, NativeGpm], ...], ...], bool]


def available() -> str | None:
    """Why the native core cannot run this path here, or None."""
    return native_core.available("chain_stream", "chain engine")


def refusal(queries: Sequence[object], files: Sequence[object]) -> str | None:
    """Why a run of these registered queries over these stream readers does not take the
    native path, or None (rsep.stream.native.refusal's rules, as rsep.windows.native's; a
    query over several streams: one TriG file read as a file for each of its streams, and
    no other, as rsep.windows.native's join)."""
    plan = getattr(queries[0], "native", None) if len(queries) == 1 else None
    if isinstance(plan, NativePlan) and len(streams_of(plan)) > 1:
        missing = available()
        if missing is not None:
            return missing
        if any(type(f) is not StreamFile or f.fmt != "trig" or f.text is not None
               for f in files):
            return "a stream that is not a TriG file"
        if any(str(f.path) == "/dev/stdin" for f in files if isinstance(f, StreamFile)):
            # (a late refusal must run today's path over what was read: the merge of
            # several files keeps no spool of standard input)
            return "standard input (several streams are read from regular files)"
        given = [f.stream for f in files if isinstance(f, StreamFile)]
        if len(set(given)) != len(given) or set(given) != set(streams_of(plan)):
            return "not one stream file for each stream the query reads, and no other"
        if any(f.time.in_graph for f in files if isinstance(f, StreamFile)):
            return "times not read from the default graph's point-time triples"
        return None
    return native_core.refusal(queries, files, "not a SPASEQ query", available())


def streams_of(plan: NativePlan) -> list[str]:
    """The IRIs of the streams the plan's GPMs read, once each."""
    gs = [*plan.gpms, *plan.negs, *(g for a in plan.atoms for alt in a[6] for _, g in alt)]
    return list(dict.fromkeys(g[4] for g in gs))


@dataclass(frozen=True)
class NativePlan:
    """What native/src/chain.rs runs for a query."""

    # per state, in sequence order (the negated atoms' GPMs in ``negs``)
    gpms: tuple[NativeGpm, ...]
    ops: tuple[str, ...]  # per state: the operator before it (`,`, `;` or `:`; "" for x_0)
    vars: int
    partition: int | None  # a variable every GPM binds (runs kept by its value)
    project: tuple[tuple[str, int | None], ...]  # (output name, variable number or None)
    distinct: bool
    max_runs: int
    max_instant: int | None
    atoms: tuple[NativeAtom, ...] = ()  # per state
    negs: tuple[NativeGpm, ...] = ()
    # closed windows' runs count against max_runs until every 1024th instant (today's
    # NFAEngine without window pushing)
    lazy_expiry: bool = False

    def describe(self) -> str:
        return ("native: read, matched and written on integer ids in Rust (rsep._core), terms "
                "decoded only for output; a stream file the native reader does not take, a "
                "value a FILTER does not compare exactly or a limit reached run as today's "
                "path")


def native_plan(query: SpaseqQuery, gpm: GPMEvaluator, options: NFAOptions,
                trace: object) -> NativePlan | str:
    """The native plan of a registered SPASEQ query, or why it runs on today's path."""
    seq = query.seq
    atoms_ = seq.atoms
    for k, a in enumerate(atoms_):
        if a.kind is AtomKind.NEGATION and (
                k == 0 or k == len(atoms_) - 1 or atoms_[k - 1].kind is AtomKind.NEGATION
                or atoms_[k + 1].kind is AtomKind.NEGATION):
            # (the parser's rule already: between two atoms neither optional nor negated)
            return "a negated atom not between two others"
        if a.kind is AtomKind.OPTIONAL and k + 1 < len(atoms_) and all(
                b.kind is AtomKind.OPTIONAL for b in atoms_[:k]):
            nxt = atoms_[k + 1]
            if nxt.kind is AtomKind.KLEENE or not isinstance(nxt.body, Leaf):
                # (chain.rs starts runs past optional atoms at the start from one plain
                # GPM, as x_0 starts them)
                return "an optional atom at the start before a Kleene+, a conjunction or a " \
                       "disjunction"
        if _alternatives(a.body) is None:
            return ("a disjunction inside a conjunction (the native path takes a "
                    "disjunction of GPMs or of conjunctions of GPMs)")
    # (one GPM under Kleene+ twice: the later occurrence binds nothing afresh, its variables
    # all bound by the earlier, so it shows no iteration, as runtime.py's _iterations skips it)
    kleene = [a for a in seq.atoms if a.kind is AtomKind.KLEENE]
    negated = any(a.kind is AtomKind.NEGATION for a in seq.atoms)
    # Today's general engine (NFAEngine: what the chain engine does not run) without window
    # pushing drops a closed window's runs when an event touches them or every 1024th
    # instant, counting them against max-runs until then: chain.rs counts them so too.
    general = bool(kleene) or negated or any(op is Strategy.ANY for op in seq.ops) \
        or any(not isinstance(a.body, Leaf) or a.kind is AtomKind.OPTIONAL for a in atoms_)
    lazy_expiry = general and not options.window_pushing
    if trace is not None:
        return "a trace of the runs"
    if not options.chain or options.max_matches is not None:
        return "engine options the chain engine does not run (no-chain or max-matches)"
    if query.expressions:
        return "SELECT expressions"
    if query.partition_by or query.options.get("partition") is not None:
        return "PARTITION BY"
    variables = query.variables
    if len(set(variables)) != len(variables):
        return "a variable selected twice"
    numbers: dict[str, int] = {}
    gpms = []
    atoms: list[NativeAtom] = []
    negs: list[NativeGpm] = []
    forbid: list[int] = []  # the negated GPMs before the next state
    ops: list[str] = []
    bound_before: set[str] = set()
    selected = set(query.variables)
    own_sets: list[set[int]] = []  # each GPM occurrence's variables (the partition's)
    for k, a in enumerate(seq.atoms):
        alts = _alternatives(a.body)
        assert alts is not None  # (refused above)
        # each alternative's conjuncts compiled in order: a conjunct's stateful FILTERs
        # read the run's variables and the earlier conjuncts' (NFAEngine._bop's And)
        compiled_alts: list[tuple[tuple[int, NativeGpm], ...]] = []
        alt_names: list[set[str]] = []
        occurrences: list[set[int]] = []
        for alt in alts:
            got_alt: list[tuple[int, NativeGpm]] = []
            seen: set[str] = set()
            for leaf in alt:
                got = _compile(leaf.gpm, gpm, numbers, bound_before | seen)
                if isinstance(got, str):
                    return got
                compiled, leaf_names = got
                occurrences.append(set(compiled[1]))
                got_alt.append((leaf.key, compiled))
                seen |= leaf_names
            compiled_alts.append(tuple(got_alt))
            alt_names.append(seen)
        compiled = compiled_alts[0][0][1]
        names = set.intersection(*alt_names)
        plain = isinstance(a.body, Leaf)
        if a.kind is AtomKind.NEGATION:
            # (its variables stay unbound in the run: Algorithm 9 joins it with the run's
            # mappings and drops the result)
            forbid.append(len(negs))
            negs.append(compiled)
            continue
        own_sets += occurrences
        if k == 0:
            ops.append("")
        elif seq.atoms[k - 1].kind is AtomKind.NEGATION:
            # (NFAEngine._enter: the neighbours of a negation are joined by the weaker of
            # its two operators)
            ops.append(_SELECT[Strategy.weaker(seq.ops[k - 2], seq.ops[k - 1])])
        else:
            ops.append(_SELECT[seq.ops[k - 1]])
        first = alts[0][0]
        if a.kind is AtomKind.KLEENE:
            g = a.leaf.gpm
            if not a.local_vars <= names:
                return f"GPM {g.name}+: a variable of its own its triple patterns do not bind"
            drops = tuple(sorted(numbers[v] for v in a.local_vars))
            # (runtime.py's MatchOutput.iterations: each iteration's selected own variables,
            # in the order of the mapping, by name)
            shown = tuple((v, numbers[v]) for v in sorted(a.local_vars & selected))
            atoms.append((True, a.leaf.key, drops, shown, g.name, tuple(forbid), (), False))
        else:
            atoms.append((False, first.key, (), (), first.gpm.name, tuple(forbid),
                          () if plain else tuple(compiled_alts),
                          a.kind is AtomKind.OPTIONAL))
        forbid = []
        if a.kind is not AtomKind.OPTIONAL:
            # (after a disjunction, a later FILTER may read only what every alternative
            # binds; an optional atom's variables are unbound in the runs that skip it)
            bound_before |= names
        gpms.append(compiled)
    if not numbers:
        return "no variable in any GPM"
    common = set(range(len(numbers)))
    for own_vars in own_sets:
        common &= own_vars
    return NativePlan(tuple(gpms), tuple(ops), len(numbers), min(common) if common else None,
                      tuple((v, numbers.get(v)) for v in variables), query.distinct,
                      options.max_runs, options.max_instant, tuple(atoms), tuple(negs),
                      lazy_expiry)


def _alternatives(body: BopNode) -> list[list[Leaf]] | None:
    """An atom's GPM occurrences as a disjunction of conjunctions (Defs. 8, 9): one
    alternative of one GPM for a plain atom, one of several for ``A & B``, one a GPM each
    (or a conjunction each) for ``A | B``; None for a disjunction inside a conjunction,
    which the native path does not take."""
    def conj(n: BopNode) -> list[Leaf] | None:
        if isinstance(n, Leaf):
            return [n]
        if isinstance(n, And):
            out: list[Leaf] = []
            for it in n.items:
                got = conj(it)
                if got is None:
                    return None
                out += got
            return out
        return None

    if isinstance(body, Or):
        alts = [conj(it) for it in body.items]
        return None if any(a is None for a in alts) else [a for a in alts if a is not None]
    one = conj(body)
    return None if one is None else [one]


def _compile(g: GPM, gpm: GPMEvaluator, numbers: dict[str, int], bound_before: set[str]
             ) -> tuple[NativeGpm, set[str]] | str:
    """A GPM occurrence as native/src/chain.rs reads it (its variables numbered in
    ``numbers``, its stateful FILTERs reading those bound before), with the names of the
    variables it binds; or why the native path does not take it."""
    if g.background:
        return f"GPM {g.name}: a background GRAPH"
    c = gpm.compiled.get(g.name)
    if c is None:
        return f"GPM {g.name}: not one basic graph pattern with compiled FILTERs " \
               "(OPTIONAL, UNION, a property path or a FILTER pyoxigraph decides)"
    if len(c.triples) > MAX_PATTERNS:
        return f"GPM {g.name}: more than {MAX_PATTERNS} triple patterns"
    patterns: list[Slots] = []
    own: list[int] = []
    for tp in c.triples:
        slots: list[tuple[str, int | str]] = []
        for x in tp:
            if isinstance(x, tuple):
                if x[1].startswith("_:"):
                    return f"GPM {g.name}: a blank node in a triple pattern"
                n = numbers.setdefault(x[1], len(numbers))
                if n not in own:
                    own.append(n)
                slots.append(("var", n))
            elif isinstance(x, (ox.NamedNode, ox.Literal)):
                # (the compiled GPM's constants are the store's forms already, as the
                # stream's literals are once restored)
                slots.append(("term", str(x)))
            else:
                return f"GPM {g.name}: a term the native path does not read ({x})"
        patterns.append(tuple(slots))
    names = {v for v, n in numbers.items() if n in own}
    local: list[Cmp] = []
    for f in g.local_filters:
        got = _conjunction(f.expr, numbers, names)
        if isinstance(got, str):
            return f"GPM {g.name}: FILTER {f.text}: {got}"
        local += got
    stateful: list[Cmp] = []
    for f in g.stateful:
        got = _conjunction(f.expr, numbers, names | bound_before)
        if isinstance(got, str):
            return f"GPM {g.name}: FILTER {f.text}: {got}"
        stateful += got
    return (tuple(patterns), tuple(own), tuple(local), tuple(stateful), g.stream), names


def _conjunction(e: Expression, numbers: dict[str, int], bound: set[str]
                 ) -> list[Cmp] | str:
    """A FILTER as a conjunction of comparisons of variables (bound there) and numbers, and
    ``+ - *`` of those, or why the native path does not take it."""
    def variable(v: Variable) -> Operand | str:
        if v.name not in bound:
            return f"?{v.name} is not bound by this GPM or an earlier one"
        return (f"v{numbers[v.name]}",)

    return numeric_conjunction(
        e, variable, not_comparison="not a comparison of numbers (or a conjunction of those)",
        other_term="not a comparison of variables and xsd:integer, xsd:decimal or xsd:double",
        constants=False)


# The last run's outcome (the CLI's, for tests): whether the native path ran, and if not why
LAST: Outcome | None = None


def record(outcome: Outcome) -> None:
    """The CLI's run ended so (:data:`LAST`)."""
    global LAST
    LAST = outcome


def run(plan: NativePlan, query: SpaseqQuery, path: str, points: tuple[str, ...],
        max_record: int, time_unit_ms: int | None, max_window_triples: int, max_results: int,
        out_path: str, fmt: str = "jsonl") -> Outcome:
    """Run the query over the stream file at ``path``, writing its matches to ``out_path``
    in ``fmt`` (jsonl or tsv, as rsep.runtime.sinks writes them, or ``events``: each
    match's events' times, as rsep bench's worker writes them); or say why not (then
    ``out_path`` holds nothing to keep). The signature is rsep.windows.native.run's, which
    rsep.cli.run calls alike; the window limits do not bound a SPASEQ run."""
    window = _window(plan, query, fmt, time_unit_ms)
    if isinstance(window, Outcome):
        return window
    # read in parts as the engine goes (native/src/source.rs): literals pyoxigraph's store
    # reads back in another form are replaced by their stored form as they come, as today's
    # path matches, compares and writes them
    if len(streams_of(plan)) > 1:
        return Outcome("several streams (run_streams reads them)")
    src, why = native_core.open_stream(path, points, max_record, Canon().term, False)
    if src is None:
        return Outcome(why)
    refused, evaluations, rows = _chain(plan, query, src, [iri for iri in streams_of(plan)],
                                        window, fmt, out_path)
    return native_core.finished(src, refused, evaluations, rows)


def _window(plan: NativePlan, query: SpaseqQuery, fmt: str, time_unit_ms: int | None
            ) -> int | None | Outcome:
    """WITHIN in the stream's abstract time (None: no WITHIN), or the refusal of a run in
    ``fmt`` or of its WITHIN."""
    if fmt == "tsv" and {"time", "op"} & {name for name, _ in plan.project}:
        return Outcome("a column named time or op in --format tsv")
    window = None
    if query.within is not None:
        try:
            window = query.within.units(TimeKind.ABSTRACT, time_unit_ms)
        except TimeError as e:
            return Outcome(f"WITHIN: {e}")
        if window <= 0:
            return Outcome("WITHIN of no time")
    return window


def run_streams(plan: NativePlan, query: SpaseqQuery, paths: Sequence[tuple[str, str]],
                points: tuple[str, ...], max_record: int, time_unit_ms: int | None,
                max_window_triples: int, max_results: int, out_path: str,
                fmt: str = "jsonl") -> Outcome:
    """:func:`run` over the stream files ``paths`` ((stream IRI, path), one for each stream
    the query reads), merged by time as today's path merges them, each GPM matched on its
    own stream's events of an instant (NFAEngine's and ChainEngine's ``evs[stream]``)."""
    window = _window(plan, query, fmt, time_unit_ms)
    if isinstance(window, Outcome):
        return window
    try:
        src = core().open_streams([path for _, path in paths], list(points), max_record,
                                  native_core.STREAM_CHUNK, native_core.SWEEP_TERMS)
    except ValueError as e:
        return Outcome(f"the native reader does not take {e}")
    canon = Canon()
    src.set_forms(lambda unsure: native_core.forms(unsure, canon.term), False)
    refused, evaluations, rows = _chain(plan, query, src, [iri for iri, _ in paths], window,
                                        fmt, out_path)
    if refused:
        return Outcome(refused)
    return Outcome("", len(src), src.triples(), evaluations, rows, src.stats()[2])


def _chain(plan: NativePlan, query: SpaseqQuery, src: Any, order: list[str],
           window: int | None, fmt: str, out_path: str) -> tuple[str, int, int]:
    """rsep._core.chain_stream of the plan over ``src`` (a Stream, or StreamFiles of the
    streams ``order`` names, in that order)."""
    def ids(g: NativeGpm) -> tuple:
        patterns, binds, local, stateful, stream = g
        return ([[("var", v) if kind == "var" else ("id", src.id(str(v))) for kind, v in tp]
                 for tp in patterns], list(binds), list(local), list(stateful),
                order.index(stream))

    gpms = [ids(g) for g in plan.gpms]
    got: tuple[str, int, int] = core().chain_stream(
        src, gpms, list(plan.ops),
        [(k, key, list(d), list(sh), name, list(f), [[(lk, ids(g)) for lk, g in alt] for alt in alts],
          opt) for k, key, d, sh, name, f, alts, opt in plan.atoms],
        [ids(g) for g in plan.negs], plan.vars,
        plan.partition, window, query.issued_at, list(plan.project), plan.distinct,
        (plan.max_runs, plan.max_instant, plan.lazy_expiry), fmt, out_path)
    return got
