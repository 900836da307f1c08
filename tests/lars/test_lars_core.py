"""LARS (001 Sec. 2.3-2.4, 4): Example 9, windows, Proposition 1, Example 11's rules."""

from __future__ import annotations

import re

import pytest

from rsep.lang import parse_query
from rsep.lars import (
    NOW,
    UNBOUNDED,
    AtAtom,
    Atom,
    LarsError,
    Lit,
    Modal,
    Program,
    Rule,
    TimeWindow,
    TupleWindow,
    Var,
    WindowAtom,
    answer_stream,
    cmp_test,
    data_stream,
)
from rsep.lars.rsp import cq, cs, from_query
from rsep.lars.translate import pull, push, tau1, tau2, units_fn, window_operator
from rsep.testing.snippets import ROOT

COUPON = ROOT / "examples" / "coupon"
Sh, Pr, Pe, Ge = Var("Sh"), Var("Pr"), Var("Pe"), Var("Ge")


def diamond(w, atom):
    return Lit(WindowAtom(w, (Modal("diamond", atom),)))


def example8() -> Program:
    return Program([Rule(Atom("ans", (Sh, Pr, Pe)), (
        diamond(TimeWindow(30), Atom("offer", (Sh, Pr, Pe))),
        diamond(TimeWindow(5), Atom("isNear", (Sh,))),
        Lit(Atom("g_classify", (Pr, Ge))), Lit(cmp_test(Pe, ">=", 20)), Lit(cmp_test(Ge, "!=", 1))))])


D = data_stream(0, 50, {10: [Atom("offer", ("a", "mbt", 30))], 15: [Atom("offer", ("b", "rayban", 25))],
                        18: [Atom("isNear", ("a",)), Atom("isNear", ("b",))]})
B = [Atom("g_classify", ("mbt", 1)), Atom("g_classify", ("rayban", 0))]


def test_example9_answer_stream_at_18():
    i = answer_stream(example8(), D, 18, B)
    assert i.at(18) == D.at(18) | {Atom("ans", ("b", "rayban", 25))}
    assert all(i.at(t) == D.at(t) for t in range(0, 51) if t != 18)  # v_I = v_D ∪ {18 -> ans}
    # [t-5, t] (LARS' closed window): the location at 18 is in until 23, not at 24
    assert Atom("ans", ("b", "rayban", 25)) in answer_stream(example8(), D, 23, B).at(23)
    assert answer_stream(example8(), D, 24, B).at(24) == frozenset()


def test_window_functions():
    s = data_stream(0, 20, {2: [Atom("p", (1,))], 4: [Atom("p", (2,)), Atom("p", (3,))],
                            8: [Atom("p", (4,))]})
    assert TimeWindow(4).apply(s, 8).ats() == {Atom("p", (2,)), Atom("p", (3,)), Atom("p", (4,))}
    assert TimeWindow(4, 0, 5).apply(s, 8).ats() == {Atom("p", (1,)), Atom("p", (2,)), Atom("p", (3,))}
    assert TimeWindow(4, 1).apply(s, 8).ats() == {Atom("p", (2,)), Atom("p", (3,))}  # [4, 7]
    assert NOW.apply(s, 4).ats() == {Atom("p", (2,)), Atom("p", (3,))}
    assert UNBOUNDED.apply(s, 8).ats() == s.ats()
    assert TupleWindow(2).apply(s, 8).ats() == {Atom("p", (4,)), Atom("p", (3,))}
    assert TupleWindow(2).apply(s, 8).lo == 4


def test_box_and_at_modalities():
    s = data_stream(0, 10, {3: [Atom("q", ("x",))], 4: [Atom("q", ("x",)), Atom("q", ("y",))]})
    X, T = Var("X"), Var("T")
    box = Program([Rule(Atom("always", (X,)), (Lit(WindowAtom(TimeWindow(1), (Modal("box", Atom("q", (X,))),))),))])
    assert answer_stream(box, s, 4).at(4) - s.at(4) == {Atom("always", ("x",))}
    at = Program([Rule(Atom("when", (X, T)), (Lit(WindowAtom(TimeWindow(9), (Modal("at", Atom("q", (X,)), T),))),))])
    assert answer_stream(at, s, 9).at(9) == {Atom("when", ("x", 3)), Atom("when", ("x", 4)), Atom("when", ("y", 4))}
    bare = Program([Rule(Atom("was", (X,)), (Lit(AtAtom(3, Atom("q", (X,)))),))])
    assert answer_stream(bare, s, 7).at(7) == {Atom("was", ("x",))}


def test_stratified_negation_and_unsupported_programs():
    X = Var("X")
    p = Program([Rule(Atom("a", (X,)), (Lit(Atom("d", (X,))),)),
                 Rule(Atom("b", (X,)), (Lit(Atom("d", (X,))), Lit(Atom("a2", (X,)), negated=True))),
                 Rule(Atom("a2", (X,)), (Lit(Atom("a", (X,))), Lit(Atom("e", (X,))))),])
    s = data_stream(0, 1, {1: [Atom("d", (1,)), Atom("d", (2,)), Atom("e", (2,))]})
    assert answer_stream(p, s, 1).at(1) >= {Atom("b", (1,))}
    assert Atom("b", (2,)) not in answer_stream(p, s, 1).at(1)
    loop = Program([Rule(Atom("a"), (Lit(Atom("b"), negated=True),)), Rule(Atom("b"), (Lit(Atom("a"), negated=True),))])
    with pytest.raises(LarsError, match="not stratified"):
        answer_stream(loop, s, 1)
    with pytest.raises(LarsError, match="unsafe rule"):
        answer_stream(Program([Rule(Atom("h", (X,)), (Lit(Atom("d", (Var("Y"),))),))]), s, 1)


def test_table1_window_translation():
    q = parse_query("SELECT * WHERE { STREAM <http://s> [RANGE 30] { ?s ?p ?o } "
                    "STREAM <http://t> [RANGE 10 SLIDE 5] { ?s ?p ?o } STREAM <http://u> [NOW] { ?s ?p ?o } "
                    "STREAM <http://v> [ALL] { ?s ?p ?o } STREAM <http://w> [TRIPLES 3] { ?s ?p ?o } }")
    ops = [window_operator(w.spec) for w in q.dataset.windows]
    assert ops == [TimeWindow(30), TimeWindow(10, 0, 5), NOW, UNBOUNDED, TupleWindow(3)]
    assert [o.show() for o in ops[:3]] == ["⊞^30", "⊞^{10,0,5}", "⊞NOW"]
    # the engines' readings: CQELS (t-30, t] = [t-29, t]; C-SPARQL [t-30, t) = [t-30, t-1]
    assert window_operator(q.dataset.windows[0].spec, reading="engine") == TimeWindow(29)
    cs_q = parse_query("SELECT * FROM STREAM <http://s> [RANGE 30 STEP 1] WHERE { ?s ?p ?o }")
    assert window_operator(cs_q.dataset.windows[0].spec, reading="engine") == TimeWindow(30, 1)


@pytest.mark.parametrize("t", range(0, 30))
def test_proposition1_push_and_pull(t):
    p = example8()
    plain = answer_stream(p, D, t, B)
    pushed = answer_stream(push(p, {"offer": 3, "isNear": 1}), D, t, B)
    pulled = answer_stream(pull(p, 6), D, t, B)
    trig = Atom("trigger")
    if D.at(t):
        assert pushed.with_atoms(t, []) == plain.with_atoms(t, [trig])
    else:
        assert pushed == D
    if t % 6 == 0:
        assert pulled == plain.with_atoms(t, [trig])
    else:
        assert pulled == D


def _shape(rule) -> str:
    """A rule with ans indices renamed away."""
    return re.sub(r"ans_\d+", "ans", rule.show())


def test_example11_rule_structure():
    u = units_fn(60_000)
    q1 = from_query(parse_query((COUPON / "q1-csparql.rq").read_text()))
    q2 = from_query(parse_query((COUPON / "q2-cqels.rq").read_text()))
    p1 = tau1(cs(q2), units=u)  # tau_1 of the C-SPARQL query of Q (001 Ex. 10)
    assert len(p1) == 17 == len(tau1(cs(q1), units=u))  # r1 ... r17
    shapes = [_shape(r) for r in p1]
    for pred, args in (("offers", "Shop, \"offers\", Coupon"), ("reduce", "Coupon, \"reduce\", Percent"),
                       ("on", "Coupon, \"on\", Product"), ("isNear", "User, \"isNear\", Shop"),
                       ("g_classify", "Product, \"g_classify\", Gender")):
        assert sum(f"← triple({args}, D)." in s for s in shapes) == 1, pred
        assert sum(f"← triple({args}, S)." in s for s in shapes) == 1, pred
    assert "triple(S, P, O, S) ← ⊞^30 ◇striple(S, P, O, \"coupons\")." in shapes
    assert "triple(S, P, O, S) ← ⊞^5 ◇striple(S, P, O, \"locations\")." in shapes
    top = p1.rules[[r.head.pred for r in p1].index("ans_1")]
    assert top.show() == ("ans_1(Percent, Product, Shop, D, S) ← ans_2(Coupon, Gender, Percent, "
                          "Product, Shop, User, D, S), (Percent >= 20 && Gender != 1).")
    assert sum(len(r.body) == 2 and all(isinstance(b.item, Atom) and b.item.pred.startswith("ans_") for b in r.body)
               for r in p1) == 4

    p2 = tau2(cq(q2), units=u)
    assert len(p2) == 6  # r18 ... r23
    shapes = [_shape(r) for r in p2]
    assert ("ans(Coupon, Percent, Product, Shop, D, S) ← ⊞^30(◇striple(Shop, \"offers\", Coupon, "
            "\"coupons\") ∧ ◇striple(Coupon, \"reduce\", Percent, \"coupons\") ∧ ◇striple(Coupon, "
            "\"on\", Product, \"coupons\")).") in shapes
    assert "ans(Shop, User, D, S) ← ⊞^5 ◇striple(User, \"isNear\", Shop, \"locations\")." in shapes
    assert "ans(Gender, Product, D, S) ← triple(Product, \"g_classify\", Gender, D)." in shapes
    assert p2.rules[-1].show() == top.show()
    assert p1.positive and p2.positive


def test_minus_and_optional_translate_to_stratified_programs():
    q = from_query(parse_query("PREFIX : <http://e/> SELECT * WHERE { STREAM <http://s> [RANGE 3] "
                               "{ ?x :p ?y } OPTIONAL { ?y :q ?z } MINUS { ?x :r ?w } }"))
    p = tau2(cq(q))
    assert not p.positive
    assert len(p.strata()) > 1
    with pytest.raises(LarsError, match="outside the LARS translation's fragment"):
        from_query(parse_query("SELECT * WHERE { STREAM <http://s> [RANGE 3] { ?x <http://p>+ ?y } }"))
