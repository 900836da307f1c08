"""SPARQL 1.1's solution modifiers (Sec. 15) and SELECT's projection, as plain frozen data:
the part of a query (rsep.algebra.pattern's Query) or a sub-query (its SubSelect) that
works on the WHERE pattern's solutions, and how :func:`rsep.algebra.pattern.to_sparql`
writes it. :class:`Written` keeps a SELECT's clauses as the text has them, for
``rsep explain``."""

from __future__ import annotations

from dataclasses import dataclass

from rsep.algebra.expression import Expression, Variable


@dataclass(frozen=True, slots=True)
class Projected:
    """A SELECT item: ``?var``, or ``(expr AS ?var)``."""

    var: str
    expr: Expression | None = None


@dataclass(frozen=True, slots=True)
class GroupKey:
    """A GROUP BY condition: an expression (a variable, a call, or ``(expr [AS ?var])``)."""

    expr: Expression
    var: str | None = None


@dataclass(frozen=True, slots=True)
class OrderKey:
    expr: Expression
    descending: bool = False


@dataclass(frozen=True, slots=True)
class Modifiers:
    """SELECT's projection (None: ``*``) and the solution modifiers (Sec. 15)."""

    projection: tuple[Projected, ...] | None = None
    distinct: bool = False
    reduced: bool = False
    group_by: tuple[GroupKey, ...] = ()
    having: tuple[Expression, ...] = ()
    order_by: tuple[OrderKey, ...] = ()
    limit: int | None = None
    offset: int | None = None


@dataclass(frozen=True, slots=True)
class Written:
    """A SELECT's clauses as the query's text has them (after its dialect's rewriting, every
    run of white space one space), which ``rsep explain`` prints as written: the projection's
    items, GROUP BY's and HAVING's conditions, and the aggregates the projection and HAVING
    call, in the order written (repeats kept)."""

    items: tuple[str, ...] = ()
    group_by: tuple[str, ...] | None = None  # None: no GROUP BY
    having: tuple[str, ...] | None = None  # None: no HAVING
    aggregates: tuple[str, ...] = ()


def expressions(m: Modifiers) -> list[Expression]:
    """The expressions of the projection, GROUP BY, HAVING and ORDER BY, in that order."""
    return [*(p.expr for p in m.projection or () if p.expr is not None),
            *(k.expr for k in m.group_by), *m.having, *(k.expr for k in m.order_by)]


def select_head(m: Modifiers) -> str:
    """``SELECT [DISTINCT | REDUCED] items``, a line."""
    out = "SELECT " + ("DISTINCT " if m.distinct else "REDUCED " if m.reduced else "")
    if m.projection is None:
        return out + "*\n"
    return out + " ".join("?" + p.var if p.expr is None else f"({p.expr.to_sparql()} AS ?{p.var})"
                          for p in m.projection) + "\n"


def modifiers_text(m: Modifiers) -> str:
    """The solution modifiers after the WHERE clause, a line each."""
    out = ""
    if m.group_by:
        out += "GROUP BY " + " ".join(
            k.expr.to_sparql() if k.var is None and isinstance(k.expr, Variable)
            else f"({k.expr.to_sparql()}{'' if k.var is None else ' AS ?' + k.var})"
            for k in m.group_by) + "\n"
    if m.having:
        out += "HAVING " + " ".join(f"({h.to_sparql()})" for h in m.having) + "\n"
    if m.order_by:
        out += "ORDER BY " + " ".join(f"{'DESC' if k.descending else 'ASC'}({k.expr.to_sparql()})"
                                      for k in m.order_by) + "\n"
    if m.limit is not None:
        out += f"LIMIT {m.limit}\n"
    if m.offset is not None:
        out += f"OFFSET {m.offset}\n"
    return out
