"""rich's console for the CLI: colour and box tables on a terminal, and the words-wrapped plain
text of `check`. Imported only when one of those is printed (rich costs tens of milliseconds
to import; piped output is written by `_render.PlainConsole`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from ._quoting import visible
from ._styled import Indented, Styled, TableSpec


class _Console(Console):
    """rich's Console for text that holds user strings (model paths, served names, GPU names,
    log lines): no markup, emoji codes or highlighting is read from any string, and control
    characters are printed as escapes (`\\x1b`), so no string can restyle, hide text, clear
    the screen or set the window title. A closed pipe raises BrokenPipeError (rich itself
    exits 1): the CLI exits 141 for it, as a shell pipeline expects."""

    reading = False  # prose wraps at words (check); else it stays one line

    def __init__(self, **options: Any) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **options)

    def print(self, *objects: Any, **options: Any) -> None:
        super().print(*(self._renderable(o) for o in objects), **options)

    def _renderable(self, content: Any) -> Any:
        """`_render`'s Styled, Indented and TableSpec as rich's Text, Padding and Table."""
        if isinstance(content, Styled):
            return Text.assemble(*content.runs)
        if isinstance(content, Indented):
            return Padding(self._renderable(content.content), (0, 0, 0, content.spaces))
        if isinstance(content, TableSpec):
            return self._table(content)
        return content

    def _table(self, spec: TableSpec) -> Table:
        t = Table(
            title=spec.title,
            title_justify="left",
            box=box.SIMPLE_HEAVY if self.is_terminal else box.ASCII2,
            show_edge=self.is_terminal,
            header_style="bold" if self.is_terminal else "",
            pad_edge=False,
        )
        for name in spec.columns:
            t.add_column(name, justify="right" if name in spec.right else "left", overflow="fold")
        for row in spec.rows:
            t.add_row(*(self._renderable(cell) for cell in row))
        return t

    def render_str(self, text: str, **options: Any) -> Text:
        options.update(markup=False, emoji=False, highlight=False)
        return super().render_str(visible(text, keep_newlines=True), **options)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # The last step before the terminal: Text objects built from user strings included.
        text = super()._render_buffer(
            segment
            if segment.control
            else Segment(visible(segment.text, keep_newlines=True), segment.style)
            for segment in buffer
        )
        if self.is_terminal:
            return text
        # Plain text: no cell padding after the last word of a line.
        return "\n".join(line.rstrip(" ") for line in text.split("\n"))

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def rich_console(stream: IO[str], *, piped_width: int, reading: bool) -> _Console:
    """A rich console on `stream`: its own terminal handling on a terminal, else plain text at
    `piped_width` columns, one table row a line."""
    if stream.isatty():
        made = _Console(file=stream)
    else:
        made = _Console(
            file=stream,
            force_terminal=False,
            no_color=True,
            color_system=None,
            width=piped_width,
            soft_wrap=False,
        )
    made.reading = reading
    return made
