"""Errors in query text, located by line and column."""

from __future__ import annotations


class QueryError(ValueError):
    """A query that is rejected before it runs."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 source: str | None = None) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.source:
            where = self.source + ":"
        if self.line is not None:
            where += f"{self.line}:{self.column or 0}:"
        return f"{where} {self.message}" if where else self.message


class OptionRefused(QueryError):
    """An option the query's language does not take (``--r2s`` on a SPASEQ query): a usage
    error, exit status 2 as for the commands' other refusals (README, "Exit status")."""


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col
