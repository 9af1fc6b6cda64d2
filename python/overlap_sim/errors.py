"""The exceptions overlap_sim raises: the CLI's errors as Python classes.

The CLI sorts every failure into an exit status (tools/command_errors.hpp): 2 for a mistake in the input (a
scenario or profile value, an option, an output that cannot be written, hardware the model cannot
simulate, running out of memory), 1 for an internal error. Each has a class here, under one base::

    OverlapSimError
    +-- InputError (ValueError)        exit 2: file, line, key locate the mistake
    |   +-- OptionError                an argument / option value (the CLI's UsageError)
    |   +-- OutputError                an output file that cannot be written
    |   +-- CannotSimulateError        valid input the model cannot simulate (too many ranks, ...)
    +-- OutOfMemoryError (MemoryError) exit 2 in the CLI: the simulation ran out of memory
    +-- InternalError (RuntimeError)   exit 1: a bug, with the C++ message

``except InputError`` catches every mistake in the input, as before these classes were split;
``except RuntimeError`` still catches an internal error.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "OverlapSimError",
    "InputError",
    "OptionError",
    "OutputError",
    "CannotSimulateError",
    "OutOfMemoryError",
    "InternalError",
    "SchemeFailedWarning",
]


class OverlapSimError(Exception):
    """Every error overlap_sim raises for a command that failed."""


class InputError(OverlapSimError, ValueError):
    """A mistake in the input: what the CLI reports with exit status 2.

    ``str(e)`` is the CLI's message (``file:line: key: message`` for a scenario or profile value);
    ``file``, ``line`` and ``key`` locate it (None when the mistake has no such place, e.g. an option
    value). For a dict scenario, ``file`` is ``"<dict>"`` and ``line`` is None: ``key`` names the
    entry. For a field set on a :class:`~overlap_sim.Scenario` or a ``sets`` entry, ``file`` is the
    assignment as the CLI's ``--set`` would show it (``--set workload.tokenz=8``). ``detail`` is the
    message without the location.
    """

    def __init__(self, message: str, file: Optional[str] = None, line: Optional[int] = None,
                 key: Optional[str] = None, detail: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.key = key
        self.detail = detail if detail is not None else message


class OptionError(InputError):
    """An argument's value is refused (the CLI's usage errors: an unknown scheme, a malformed size,
    ``jobs`` out of range, a NUL character in a path). ``key`` names the argument when known."""


class OutputError(InputError):
    """An output cannot be written (a directory, device or socket as the file, no permission, an
    output that would replace an input). Nothing was written."""


class CannotSimulateError(InputError):
    """The input is valid but the model cannot simulate it (the CLI's "cannot simulate this": a
    workload over the simulator's budgets, a size that overflows)."""


class OutOfMemoryError(OverlapSimError, MemoryError):
    """The simulation ran out of memory (the CLI reports this with exit status 2)."""


class InternalError(OverlapSimError, RuntimeError):
    """A bug in overlap-sim (the CLI's exit status 1, "internal error"); ``str(e)`` starts with
    ``overlap-sim internal error:``."""


class SchemeFailedWarning(RuntimeWarning):
    """`run`: some schemes failed (their rows say FAILED) while the others reported (the CLI's exit
    status 1); the message is the CLI's."""
