"""Progress of a running job as data, and its terminal rendering.

A job reports what it does by calling ``progress(event)`` with a :class:`Note` (a line for the user), or
:class:`BarStart` / :class:`BarAdvance` / :class:`BarStop` (a counted task); it prints nothing itself.
:class:`ConsoleProgress` renders events on a rich console: notes as lines, counted tasks as a transient progress
bar on terminals only (CI logs and pipes get none).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text


@dataclass(frozen=True)
class Note:
    """One line for the user; ``warning`` shows it as a warning; ``warning_tail`` is a warning that ends an
    ordinary line (two spaces apart)."""

    text: str
    warning: bool = False
    warning_tail: str = ""


@dataclass(frozen=True)
class BarStart:
    """A counted task begins: ``total`` steps; ``rate`` shows steps per second."""

    label: str
    total: int
    rate: bool = False


@dataclass(frozen=True)
class BarAdvance:
    """One step of the counted task ``label``."""

    label: str


@dataclass(frozen=True)
class BarStop:
    """The counted task ``label`` is over (normally or not)."""

    label: str


Event = Note | BarStart | BarAdvance | BarStop
ProgressCallback = Callable[[Event], None]


def silent(event: Event) -> None:
    """The progress callback that shows nothing."""


class RateColumn(ProgressColumn):
    """Steps per second, blank until rich has measured a rate."""

    def render(self, task) -> Text:
        return Text(f"{task.speed:,.0f}/s" if task.speed else "", style="progress.data.speed")


class ConsoleProgress:
    """A progress callback that renders events on ``console``."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._bars: dict[str, tuple[Progress, TaskID]] = {}

    def __call__(self, event: Event) -> None:
        if isinstance(event, Note):
            self._note(event)
        elif isinstance(event, BarStart):
            columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
            columns += [RateColumn()] if event.rate else []
            bar = Progress(
                *columns,
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
                disable=not self.console.is_terminal,
            )
            bar.start()
            self._bars[event.label] = (bar, bar.add_task(event.label, total=event.total))
        elif isinstance(event, BarAdvance):
            bar, task = self._bars[event.label]
            bar.advance(task)
        elif isinstance(event, BarStop) and event.label in self._bars:
            self._bars.pop(event.label)[0].stop()

    def _note(self, note: Note) -> None:
        if note.warning:
            self.console.print(f"[yellow]{escape(note.text)}[/yellow]")
        elif note.warning_tail:
            self.console.print(f"{escape(note.text)}  [yellow]{escape(note.warning_tail)}[/yellow]")
        else:
            self.console.print(note.text, markup=False, highlight=False)
