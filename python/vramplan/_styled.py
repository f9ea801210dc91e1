"""What the CLI prints, before a console lays it out: styled text, an indented item, a table.
Plain data (no rich): a pipe writes it as text (`_render.PlainConsole`), a terminal through
rich (`_terminal`)."""

from __future__ import annotations


class Styled:
    """Text in runs of (text, rich style): rich's Text on a terminal, the runs joined in a pipe.
    Building it loads no rich: piped output is written without it."""

    __slots__ = ("runs",)

    def __init__(self, text: str = "", style: str = "") -> None:
        self.runs: list[tuple[str, str]] = [(text, style)] if text else []

    @classmethod
    def assemble(cls, *parts: str | tuple[str, str]) -> Styled:
        made = cls()
        for part in parts:
            made.runs.append((part, "") if isinstance(part, str) else part)
        return made

    def append(self, text: str | Styled, style: str = "") -> Styled:
        if isinstance(text, Styled):
            self.runs.extend(text.runs)
        else:
            self.runs.append((text, style))
        return self

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.runs)


class Indented:
    """`content` with `spaces` before each of its lines (wrapped lines stay under the item)."""

    __slots__ = ("content", "spaces")

    def __init__(self, content: Styled, spaces: int) -> None:
        self.content = content
        self.spaces = spaces


class TableSpec:
    """A table's cells: boxed on a terminal, space-separated columns under a header line when
    plain; `right`: the right-aligned columns. (Plain classes, not NamedTuples: typing compiles
    each field's annotation when a NamedTuple class is made, a cost on every CLI start.)"""

    __slots__ = ("columns", "right", "rows", "title")

    def __init__(
        self,
        columns: list[str],
        rows: list[list[str | Styled]],
        title: str | None,
        right: frozenset[str],
    ) -> None:
        self.columns = columns
        self.rows = rows
        self.title = title
        self.right = right
