% driver.pl: runs one corpus case under ETALIS and prints what ETALIS detects, one JSON
% object a line. Used by record.py (beside this file); the tests read the recordings, not
% ETALIS.
%
%   swipl --traditional -q driver.pl -- ETALIS_SRC POLICY RULES STREAM
%
% ETALIS_SRC is ETALIS's src/ folder (github sspider/etalis; not part of rsep), POLICY its
% event_consumption_policy (chronological or recent), RULES an ETALIS event-rule file,
% STREAM a file of facts input(N, Start, End, Triples): rsep's stream items in arrival
% order, Triples a list of rdf(S, P, O).
%
% Time: rsep's abstract time t is the second t of 2000-01-01. Each item is labelled as
% ETALIS's event/2 labels a [datime/6, datime/6] interval (etalis.P): every distinct
% second has a counter, incremented once for a point item ([t, t]) and once for each end
% of an interval item, so items at the same second are ordered by arrival (less_datime
% compares the counters). Every triple of an item is then fired with event/2 and that
% labelled interval, in the item's order: the triples of one item are simultaneous,
% exactly as two events derived from one in ETALIS are (equals_01).
%
% After each triple, the select_event/1 events ETALIS fired (fired_event/2, asserted in
% firing order by executor.P) are printed: the item and triple that caused them, the
% values, and the interval as [second, counter] pairs.

:- initialization(main, main).

main :-
    current_prolog_flag(argv, [Src, Policy, Rules, Stream | _]),
    atom_concat(Src, '/etalis.P', Etalis),
    load_files(Etalis, [silent(true)]),
    set_etalis_flag(event_consumption_policy, Policy),
    compile_event_file(Rules),
    load_files(Stream, [silent(true)]),
    findall(N-S-E-Ts, input(N, S, E, Ts), Items),
    feed(Items, 0),
    halt.

feed([], _).
feed([N-S-E-Ts | Rest], Seen) :-
    label(S, E, L1, L2),
    fire(Ts, N, 0, E, L1, L2, Seen, Seen1),
    feed(Rest, Seen1).

label(S, S, L, L) :- !, stamp(S, L).
label(S, E, L1, L2) :- stamp(S, L1), stamp(E, L2).

stamp(T, datime(2000, 1, 1, H, Mi, Sec, C)) :-
    H is T // 3600, Mi is (T mod 3600) // 60, Sec is T mod 60,
    D = datime(2000, 1, 1, H, Mi, Sec),
    incCounter(timeCounter(D)),
    counter(timeCounter(D), C).

fire([], _, _, _, _, _, Seen, Seen).
fire([T | Ts], N, J, End, L1, L2, Seen, Seen2) :-
    event(T, [L1, L2]),
    findall(V-P1-P2, fired_event(select_event(V), [P1, P2]), All),
    length(All, Count),
    drop(Seen, All, New),
    report(New, N, J, End),
    J1 is J + 1,
    fire(Ts, N, J1, End, L1, L2, Count, Seen2).

drop(0, L, L) :- !.
drop(K, [_ | T], R) :- K1 is K - 1, drop(K1, T, R).

report([], _, _, _).
report([V-P1-P2 | T], N, J, End) :-
    format('{"item": ~w, "triple": ~w, "time": ~w, "values": [', [N, J, End]),
    values(V),
    stamp_json(P1, A), stamp_json(P2, B),
    format('], "from": ~w, "to": ~w}~n', [A, B]),
    report(T, N, J, End).

values([]).
values([X]) :- !, value(X).
values([X | T]) :- value(X), write(', '), values(T).

value(X) :- number(X), !, write(X).
value(X) :- atom(X), !, format('"~w"', [X]).
value(X) :- var(X), !, write(null).
value(X) :- format('"~q"', [X]).

stamp_json(datime(_, _, _, H, Mi, S, C), J) :-
    T is H * 3600 + Mi * 60 + S,
    format(atom(J), '[~w, ~w]', [T, C]).
