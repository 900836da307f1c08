% etalis_driver.pl: ETALIS as a `rsep bench` peer (started by etalis_worker.py).
%
%   swipl --traditional -q etalis_driver.pl -- SRC POLICY RULES STREAM MATCHES GC RESULT
%
% SRC is ETALIS's src/ folder, POLICY its event_consumption_policy (unrestricted,
% chronological, recent), RULES an event-rule file, STREAM a file of ready-made facts
% input(N, Start, End, [rdf(S, P, O), ...]) (ETALIS parses no RDF), MATCHES where the
% complex events go (one JSON object a line: values, from, to in seconds), GC `stream`
% to run ETALIS's pattern garbage collection on stream time or `off` (as released: its
% collector runs on wall-clock alarms, so a replayed stream is never pruned), RESULT
% the JSON file `rsep bench` reads (ready: epoch seconds after loading; run_s; events;
% the process's CPU seconds, user + system of all its threads: start-up less the stream's
% loading, the loading of the stream's facts (ETALIS's reading of its input, as rsep's is
% its TriG parse), and from ready to the end).
%
% Times are labelled as tests/data/etalis/driver.pl labels them (second t of
% 2000-01-01, a counter per second). After each item, the select_event/1 events it fired
% are taken out of fired_event/2 and written; every other fired_event/2 fact (ETALIS
% asserts one for each event, input ones included) is dropped then too: the driver is
% the sink of ETALIS's output, in both modes.

:- initialization(main, main).
:- dynamic(tick/2).

main :-
    current_prolog_flag(argv, [Src, Policy, Rules, Stream, Matches, Gc, Result | _]),
    atom_concat(Src, '/etalis.P', Etalis),
    load_files(Etalis, [silent(true)]),
    set_etalis_flag(event_consumption_policy, Policy),
    compile_event_file(Rules),
    proc_cpu(Load0),
    load_files(Stream, [silent(true)]),
    proc_cpu(Load1),
    aggregate_all(count, input(_, _, _, _), Count),
    ( aggregate_all(max(E0 - S0), input(_, S0, E0, _), Span) -> true ; Span = 0 ),
    nb_setval(span, Span), nb_setval(tick_floor, 0),
    gc_windows(Gc, Windows),
    nb_setval(gc_next, -1),
    open(Matches, write, Out),
    get_time(Ready), proc_cpu(Cpu0),
    % items in clause order, by backtracking: no list of the stream is built
    forall(input(_, S, E, Ts), step(S, E, Ts, Out, Windows)),
    get_time(End), proc_cpu(Cpu1),
    close(Out),
    Run is End - Ready, Cpu is Cpu1 - Cpu0, Read is Load1 - Load0, Boot is Cpu0 - Read,
    open(Result, write, R),
    format(R, '{"ready": ~15g, "run_s": ~6f, "events": ~w, "note": "gc ~w", ',
           [Ready, Run, Count, Gc]),
    format(R, '"stages": {"startup_cpu_s": ~6f, "read_cpu_s": ~6f, "cpu_s": ~6f}}~n',
           [Boot, Read, Cpu]),
    close(R),
    halt.

% the labelled rules' windows (event_rule_window, seconds): what the collector prunes by
gc_windows(off, []) :- !.
gc_windows(stream, Ws) :- findall(L-W, event_rule_property(L, event_rule_window, W), Ws).

step(S, E, Ts, Out, Ws) :-
    label(S, E, L1, L2),
    fire(Ts, L1, L2),
    report(Out),
    collect(Ws, E),
    forget_ticks(E).

fire([], _, _).
fire([T | Ts], L1, L2) :- event(T, [L1, L2]), fire(Ts, L1, L2).

label(S, S, L, L) :- !, stamp(S, L).
label(S, E, L1, L2) :- stamp(S, L1), stamp(E, L2).

% ETALIS's own labelling (event/2 given datime/6 stamps) counts the events of each second
% in counter_internal(timeCounter(datime(...)), N) facts: never retracted, one a second of
% the stream, and looked up by a compound first argument that SWI's clause index does not
% tell apart, so every stamp scanned all earlier seconds (quadratic in the stream; 94% of
% (b)'s CPU at 10^5 events). The same labels come from tick(Second, N) facts keyed by an
% integer, kept only while an item can still start at their second (items come in the
% order of their ends, none longer than the stream's longest, `span`).
stamp(T, datime(2000, 1, 1, H, Mi, Sec, C)) :-
    H is T // 3600, Mi is (T mod 3600) // 60, Sec is T mod 60,
    ( retract(tick(T, C0)) -> C is C0 + 1 ; C = 1 ),
    assertz(tick(T, C)).

forget_ticks(Now) :-
    nb_getval(span, Span), Keep is Now - Span,
    nb_getval(tick_floor, Floor),
    ( Floor < Keep ->
        forall(( tick(T, _), T < Keep ), retractall(tick(T, _))),
        nb_setval(tick_floor, Keep)
    ; true ).

% one pass over fired_event/2, in the order ETALIS asserted it
report(Out) :-
    forall(retract(fired_event(Ev, [P1, P2])),
           (   Ev = select_event(V)
           ->  format(Out, '{"values": [', []), values(Out, V),
               seconds(P1, A), seconds(P2, B),
               format(Out, '], "from": ~w, "to": ~w}~n', [A, B])
           ;   true )).

values(_, []).
values(Out, [X]) :- !, value(Out, X).
values(Out, [X | T]) :- value(Out, X), write(Out, ', '), values(Out, T).

value(Out, X) :- number(X), !, write(Out, X).
value(Out, X) :- atom(X), !, format(Out, '"~w"', [X]).
value(Out, X) :- var(X), !, write(Out, null).
value(Out, X) :- format(Out, '"~q"', [X]).

seconds(datime(_, _, _, H, Mi, S, _), T) :- T is H * 3600 + Mi * 60 + S.

% pattern_garbage_collection_internal (garbage_collection.P) on stream time: every W
% seconds of the stream, the goals of a rule with window W that ended more than W before
% now are retracted (no complex event of the rule can start at them any more)
collect([], _) :- !.
collect(_, Now) :- nb_getval(gc_next, Next), Now < Next, !.
collect(Ws, Now) :-
    forall(member(L-W, Ws), prune(L, W, Now)),
    aggregate_all(min(W), member(_-W, Ws), Step),
    Next is Now + max(1, Step),
    nb_setval(gc_next, Next).

prune(Label, W, Now) :-
    T is Now - W,
    stamp_at(T, Threshold),
    forall(( etr_db(T2, T1, B, A, C, Label), less_datime(T2, Threshold) ),
           retract(etr_db(T2, T1, B, A, C, Label))).

stamp_at(T, datime(2000, 1, 1, H, Mi, Sec, 0)) :-
    H is T // 3600, Mi is (T mod 3600) // 60, Sec is T mod 60.

% user + system CPU seconds of this process, all threads (SWI's garbage collector runs in
% a thread of its own): /proc/self/stat's utime and stime, in ticks of 1/100 s (Linux)
proc_cpu(Seconds) :-
    read_file_to_codes('/proc/self/stat', Cs, []),
    atom_codes(A, Cs),
    sub_atom(A, B, 1, _, ')'), \+ (sub_atom(A, B2, 1, _, ')'), B2 > B), !,
    B1 is B + 2, sub_atom(A, B1, _, 0, Rest),
    atomic_list_concat(Fs, ' ', Rest),
    nth1(12, Fs, U), nth1(13, Fs, S),
    atom_number(U, Ut), atom_number(S, St),
    Seconds is (Ut + St) / 100.
