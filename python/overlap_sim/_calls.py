"""What every call into the C++ core goes through: the checks the command line gets from the OS and
CLI11 before a command runs, dict inputs written to a temporary file, and the core's outcome turned
into the result or the exception (overlap_sim.errors).

The CLI's argv cannot hold a NUL character (a C string ends there), and Linux refuses an argument
longer than MAX_ARG_STRLEN or arguments longer than ARG_MAX in all (execve(2), "Limits on size of
arguments and environment"). Python strings can hold both, and the core's paths are C strings, so
here a NUL is refused and sizes are capped as the command line caps them.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import warnings
from typing import Any, List, Mapping, Optional, Sequence, Union

from . import _core
from .errors import (CannotSimulateError, InputError, InternalError, OptionError, OutOfMemoryError, OutputError,
                     SchemeFailedWarning)

# The name an error in a dict scenario or profile gives as its file (the dict is loaded from a
# temporary file).
DICT_FILE = "<dict>"

# One assignment (`sets`, `params`, `sweeps` entry): Linux's MAX_ARG_STRLEN (32 pages of 4 KiB), the
# longest single argument `overlap-sim --set KEY=VALUE` can be given.
MAX_ASSIGNMENT_BYTES = 32 * 4096
# All the assignments of one call together: ARG_MAX under the default 8 MiB stack limit (a quarter of
# it), the most a whole command line can hold.
MAX_ASSIGNMENTS_TOTAL_BYTES = 2 * 1024 * 1024
# -j / jobs: the CLI's range (tools/command.hpp kMaxJobs); 0 here means every core, as the CLI's default.
MAX_JOBS: int = _core.MAX_JOBS
# How much of a refused value a message quotes (cost_model/bounded_message.hpp kQuotedChars).
_QUOTED_CHARS = 120


def shown(text: str) -> str:
    """`text` for a message: NUL characters written as \\0 (so nothing cuts or hides them) and at
    most a line's worth, the rest counted."""
    text = text.replace("\0", "\\0")
    if len(text) > _QUOTED_CHARS:
        text = f"{text[:_QUOTED_CHARS]} ... ({len(text) - _QUOTED_CHARS:,} more characters)"
    return text


def text_arg(value: Any, name: str) -> str:
    """An argument the core takes as a string (a name, a path, an option value): refused when it holds
    a NUL, which the command line cannot pass and which would cut a path short."""
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    elif isinstance(value, os.PathLike):
        value = os.fsdecode(os.fspath(value))
    elif not isinstance(value, str):
        value = str(value)
    if "\0" in value:
        raise OptionError(f"{name}: a NUL character is not allowed (the command line cannot pass one; a path "
                          f"would be cut there): '{shown(value)}'", key=name,
                          detail=f"a NUL character is not allowed: '{shown(value)}'")
    return value


def path_arg(value: Union[None, str, bytes, "os.PathLike[Any]"], name: str) -> str:
    """A path argument ("" for None)."""
    return "" if value is None else text_arg(value, name)


def jobs_arg(jobs: Any) -> int:
    """`jobs`: 0 (every core) or the CLI's -j range, 1..MAX_JOBS."""
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise OptionError(f"jobs must be a whole number (got {shown(repr(jobs))})", key="jobs")
    if jobs < 0 or jobs > MAX_JOBS:
        raise OptionError(f"jobs must be between 1 and {MAX_JOBS} (the CLI's -j range), or 0 for every core "
                          f"(got {jobs})", key="jobs")
    return jobs


def yaml_value(v: Any) -> str:
    """A Python value as the YAML flow text `--set KEY=VALUE` takes: strings as they are, booleans
    true/false, None null, lists and maps as JSON (a YAML flow collection)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(plain(v, ""), allow_nan=False)


def assignments(sets: Union[None, str, Sequence[str], Mapping[str, Any]], name: str = "sets") -> List[str]:
    """``--set`` assignments from a "key=value" string, a list of them or a {key: value} mapping,
    each checked as the command line would carry it (no NUL, at most MAX_ASSIGNMENT_BYTES, all of them
    at most MAX_ASSIGNMENTS_TOTAL_BYTES)."""
    if sets is None:
        return []
    if isinstance(sets, str):
        items = [sets]
    elif isinstance(sets, Mapping):
        items = [f"{text_arg(k, name)}={yaml_value(v)}" for k, v in sets.items()]
    else:
        items = [s if isinstance(s, str) else str(s) for s in sets]
    total = 0
    for a in items:
        if "\0" in a:
            key = a.split("=", 1)[0]
            raise OptionError(f"{name}: {shown(a)}: a NUL character is not allowed in an assignment (the command line "
                              f"cannot pass one)", key=shown(key), detail="a NUL character is not allowed")
        size = len(a.encode("utf-8", "surrogatepass"))
        if size > MAX_ASSIGNMENT_BYTES:
            key = a.split("=", 1)[0]
            raise OptionError(f"{name}: {shown(a)}: {size:,} bytes is longer than the {MAX_ASSIGNMENT_BYTES:,} one "
                              f"assignment may be (the command line's longest argument)", key=shown(key),
                              detail=f"longer than {MAX_ASSIGNMENT_BYTES} bytes")
        total += size
    if total > MAX_ASSIGNMENTS_TOTAL_BYTES:
        raise OptionError(f"{name}: {len(items):,} assignments of {total:,} bytes in all are more than the "
                          f"{MAX_ASSIGNMENTS_TOTAL_BYTES:,} a command line holds", key=name)
    return items


def plain(value: Any, key: str) -> Any:
    """`value` (a dict scenario or profile, or part of one) as plain JSON data, checked: string keys,
    finite numbers, no NUL, nothing JSON cannot write. InputError naming the key (file "<dict>")
    otherwise, before anything is written."""
    def bad(why: str) -> InputError:
        where = key or "(the top level)"
        return InputError(f"{DICT_FILE}: {where}: {why}", DICT_FILE, None, key or None, why)

    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise bad(f"a key must be a string (got {type(k).__name__} {shown(repr(k))})")
            if "\0" in k:
                raise bad(f"a key holds a NUL character: '{shown(k)}'")
            out[k] = plain(v, f"{key}.{k}" if key else k)
        return out
    if isinstance(value, (list, tuple)):
        return [plain(v, f"{key}.{i}" if key else str(i)) for i, v in enumerate(value)]
    if isinstance(value, str):
        if "\0" in value:
            raise bad(f"a NUL character is not allowed in a value: '{shown(value)}'")
        return value
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise bad(f"must be a finite number (got {value})")
        return value
    # numpy scalars and the like: their Python value when they have one.
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return plain(item(), key)
        except (TypeError, ValueError):
            pass
    raise bad(f"cannot be written as YAML: a {type(value).__name__} ({shown(repr(value))})")


class InputFile:
    """A scenario or profile argument as the path the core reads: a path as given (checked for NUL), or
    a dict written as JSON (a YAML document) to a temporary file that is removed afterwards. The dict is
    checked and serialised before the file is made, so a dict that cannot be written leaves no file. A
    relative ``hardware:`` path in a dict is made absolute from the current directory, where the caller
    means it."""

    def __init__(self, source: Union[None, str, "os.PathLike[Any]", Mapping[str, Any]], name: str = "scenario") -> None:
        self.temp: Optional[str] = None
        if source is None:
            self.path = ""
        elif isinstance(source, Mapping):
            tree = plain(source, "")
            hw = tree.get("hardware")
            if isinstance(hw, str) and ("/" in hw or hw.endswith(".yaml")) and os.path.exists(hw):
                tree["hardware"] = os.path.abspath(hw)
            text = json.dumps(tree, indent=2, allow_nan=False)
            fd, self.temp = tempfile.mkstemp(prefix="overlap_sim-", suffix=".yaml")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
            except BaseException:
                self.close()
                raise
            self.path = self.temp
        else:
            self.path = path_arg(source, name)

    def close(self) -> None:
        if self.temp:
            try:
                os.unlink(self.temp)
            except OSError:
                pass
            self.temp = None

    def __enter__(self) -> "InputFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_CLASSES = {"input": InputError, "usage": OptionError, "output": OutputError, "simulate": CannotSimulateError}


def finish(outcome: Any, temp: Optional[str] = None) -> str:
    """The command's stdout, or its error raised as the class of overlap_sim.errors its kind names."""
    rc, out, err, (kind, message, file, line, key, detail) = outcome
    if kind in _CLASSES:
        if temp and file == temp:
            # A dict: no file to open, and line numbers of a file the caller never saw.
            file, line = DICT_FILE, 0
            message = f"{DICT_FILE}: {key}: {detail}" if key else f"{DICT_FILE}: {detail}"
        elif temp:
            message = message.replace(temp, DICT_FILE)
        raise _CLASSES[kind](shown_message(message), file or None, line if line and line > 0 else None, key or None,
                             shown_message(detail))
    if kind == "memory":
        raise OutOfMemoryError(f"overlap-sim: {message}")
    if kind == "internal":
        raise InternalError(f"overlap-sim internal error: {shown_message(message)}")
    if rc != 0:
        # `run` with some schemes failed (their rows say FAILED) and the others reported.
        text = err.strip()
        if temp:
            text = text.replace(temp, DICT_FILE)
        warnings.warn(text or f"overlap-sim exited with status {rc}", SchemeFailedWarning, stacklevel=3)
    return out


def shown_message(message: str) -> str:
    """A message from the core with any NUL a value brought in written as \\0 (the core keeps it whole)."""
    return message.replace("\0", "\\0")
