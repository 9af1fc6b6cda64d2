"""overlap_sim: the overlap-sim simulator called from Python.

Each function runs the overlap-sim command of the same name in this process, through the C++ core
the command line links (tools/cmd_*.hpp), and returns what that command prints with
``--format json``, parsed into plain Python data: the numbers are the CLI's to the last digit.
A scenario is a file path (or a name under scenarios/, as on the command line) or a dict holding
the scenario's YAML tree. Bad input raises :class:`InputError` with the CLI's message and its
location; the simulations release the GIL. See docs/guide/python.md.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Union

# An installed wheel carries the scenarios it was built with (overlap_sim/data/scenarios: hardware
# profiles, model configs, paper scenarios; python/CMakeLists.txt); the C++ core finds them through
# $OVERLAP_HOME (cost_model/source_paths.cpp) unless the caller set it. An import from the build tree
# (PYTHONPATH=build/python) has no data/ and reads the source tree it was built from.
_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
if not os.environ.get("OVERLAP_HOME") and os.path.isdir(os.path.join(_DATA, "scenarios", "hardware")):
    os.environ["OVERLAP_HOME"] = _DATA

from . import _core  # noqa: E402  (after $OVERLAP_HOME is set)

__all__ = [
    "InputError",
    "Report",
    "run",
    "tune",
    "sweep",
    "collective",
    "validate",
    "profile_show",
    "profile_list",
    "source_dir",
]

__version__ = "0.1.0"

# The name an error in a dict scenario gives as its file (the dict is loaded from a temporary file).
DICT_FILE = "<dict>"


class InputError(ValueError):
    """A mistake in the input: what the CLI reports with exit status 2.

    ``str(e)`` is the CLI's message (``file:line: key: message`` for a scenario or profile value);
    ``file``, ``line`` and ``key`` locate it (None when the mistake has no such place, e.g. an option
    value). For a dict scenario, ``file`` is ``"<dict>"`` and ``line`` is None: ``key`` names the
    entry.
    """

    def __init__(self, message: str, file: Optional[str] = None, line: Optional[int] = None,
                 key: Optional[str] = None, detail: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.key = key
        self.detail = detail if detail is not None else message


class Report(dict):
    """A command's JSON report as a dict, with :meth:`to_dataframe` for its table of rows."""

    #: The key of the report's list of rows (one per scheme, sweep point or message size).
    rows_key: Optional[str] = None

    def to_dataframe(self):
        """The report's rows as a pandas DataFrame (nested values flattened to dotted columns).

        Needs pandas (imported only here)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_dataframe() needs pandas (pip install pandas)") from e
        rows = self.get(self.rows_key, []) if self.rows_key else []
        return pd.json_normalize(rows)


def _report(data: Any, rows_key: Optional[str], as_dataframe: bool):
    r = Report(data)
    r.rows_key = rows_key
    return r.to_dataframe() if as_dataframe else r


def _set_list(sets: Union[None, Sequence[str], Mapping[str, Any]]) -> list:
    """``--set`` assignments from a list of "key=value" strings or a {key: value} mapping (values
    written as YAML flow text: strings as they are, booleans true/false, lists and maps as JSON)."""
    if sets is None:
        return []
    if isinstance(sets, str):
        return [sets]
    if isinstance(sets, Mapping):
        return [f"{k}={_yaml_value(v)}" for k, v in sets.items()]
    return [str(s) for s in sets]


def _yaml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(v)


class _Scenario:
    """A scenario argument as a path the loader reads: a path as given, or a dict written as JSON
    (a YAML document) to a temporary file removed afterwards. A relative ``hardware:`` path in a dict
    is made absolute from the current directory, where the caller means it."""

    def __init__(self, scenario: Union[None, str, os.PathLike, Mapping[str, Any]]) -> None:
        self.temp: Optional[str] = None
        if scenario is None:
            self.path = ""
        elif isinstance(scenario, Mapping):
            tree = dict(scenario)
            hw = tree.get("hardware")
            if isinstance(hw, str) and ("/" in hw or hw.endswith(".yaml")) and os.path.exists(hw):
                tree["hardware"] = os.path.abspath(hw)
            fd, self.temp = tempfile.mkstemp(prefix="overlap_sim-", suffix=".yaml")
            with os.fdopen(fd, "w") as f:
                json.dump(tree, f, indent=2)
            self.path = self.temp
        else:
            self.path = os.fspath(scenario)

    def __enter__(self) -> "_Scenario":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.temp:
            try:
                os.unlink(self.temp)
            except OSError:
                pass


def _finish(outcome, temp: Optional[str] = None) -> str:
    """The command's stdout, or its error raised: InputError for the user's input, RuntimeError for
    an internal error (the CLI's exit 1)."""
    rc, out, err, (kind, message, file, line, key, detail) = outcome
    if kind == "input":
        if temp and file == temp:
            # A dict scenario: no file to open, and line numbers of a file the caller never saw.
            file, line = DICT_FILE, 0
            message = f"{DICT_FILE}: {key}: {detail}" if key else f"{DICT_FILE}: {detail}"
        elif temp:
            message = message.replace(temp, DICT_FILE)
        raise InputError(message, file or None, line if line and line > 0 else None, key or None, detail)
    if kind == "internal":
        raise RuntimeError(f"overlap-sim internal error: {message}")
    if rc != 0:
        # `run` with some schemes failed (their rows say FAILED) and the others reported.
        text = err.strip()
        if temp:
            text = text.replace(temp, DICT_FILE)
        warnings.warn(text or f"overlap-sim exited with status {rc}", RuntimeWarning, stacklevel=3)
    return out


def run(scenario: Union[None, str, os.PathLike, Mapping[str, Any]] = None,
        sets: Union[None, Sequence[str], Mapping[str, Any]] = None,
        scheme: Optional[str] = None, fidelity: Optional[str] = None,
        params: Union[None, Sequence[str], Mapping[str, Any]] = None, *, as_dataframe: bool = False):
    """``overlap-sim run SCENARIO --format json``: every scheme of the scenario (or only ``scheme``,
    with its knobs ``params``) evaluated. None: the default scenario (Llama-3-70B MLP, TP 8)."""
    with _Scenario(scenario) as sc:
        out = _finish(_core.run(sc.path, _set_list(sets), scheme or "", fidelity or "", _set_list(params)), sc.temp)
    return _report(json.loads(out), "results", as_dataframe)


def _export(export: Optional[Tuple[str, Union[str, os.PathLike]]]) -> list:
    """``--export FORMAT FILE`` as the command takes it: a (format, path) pair, or nothing."""
    if export is None:
        return []
    if isinstance(export, (str, bytes, os.PathLike)) or len(export) != 2:
        raise InputError("export takes a (FORMAT, FILE) pair, e.g. ('te-userbuffers', 'ub.yaml')",
                         detail="export takes a (FORMAT, FILE) pair")
    return [str(export[0]), os.fspath(export[1])]


def tune(scenario: Union[None, str, os.PathLike, Mapping[str, Any]] = None,
         sets: Union[None, Sequence[str], Mapping[str, Any]] = None, *, hardware: Optional[str] = None,
         gemm: Optional[str] = None, dtype: str = "bf16", primitive: Optional[str] = None, ranks: int = 0,
         search: str = "simulate", budget: int = 40, top: int = 10, jobs: int = 0, sm_margin: bool = False,
         export: Optional[Tuple[str, Union[str, os.PathLike]]] = None,
         export_flashoverlap: Union[None, str, os.PathLike] = None, as_dataframe: bool = False):
    """``overlap-sim tune --format json``: every scheme's knobs for a scenario (scheme level), or
    FlashOverlap's wave groups for one GEMM (operator level: ``hardware``, ``gemm``, ``primitive``,
    ``ranks``, no scenario). ``export=("te-userbuffers", FILE)`` writes TransformerEngine's ub_cfgs
    YAML of the best te_userbuffers setting (``--export``); ``export_flashoverlap=FILE`` the operator
    level's FlashOverlap JSON. Files are written atomically; a directory, device or socket is refused
    (InputError) before anything runs."""
    with _Scenario(scenario) as sc:
        out = _finish(_core.tune(sc.path, _set_list(sets), hardware or "", gemm or "", dtype, primitive or "",
                                 ranks, search, budget, top, jobs, sm_margin, _export(export),
                                 "" if export_flashoverlap is None else os.fspath(export_flashoverlap)), sc.temp)
    data = json.loads(out)
    return _report(data, "schemes" if "schemes" in data else "candidates", as_dataframe)


def sweep(scenario: Union[None, str, os.PathLike, Mapping[str, Any]] = None,
          sweeps: Union[None, Sequence[str], Mapping[str, Any]] = None,
          sets: Union[None, Sequence[str], Mapping[str, Any]] = None, *, no_axes: Sequence[str] = (),
          only_axes: bool = False, jobs: int = 0, as_dataframe: bool = False):
    """``overlap-sim sweep --format json``: the scenario's sweep grid (and ``sweeps``: "key=v1,v2" or
    {key: [v1, v2]}) for every scheme; ``rows`` holds one row per point and scheme."""
    if isinstance(sweeps, Mapping):
        sweeps = [f"{k}={','.join(_yaml_value(v) for v in vals)}" for k, vals in sweeps.items()]
    with _Scenario(scenario) as sc:
        out = _finish(_core.sweep(sc.path, _set_list(sweeps), _set_list(sets), list(no_axes), only_axes, jobs), sc.temp)
    return _report(json.loads(out), "rows", as_dataframe)


def collective(primitive: str, hardware: str = "h100-sxm-8x-nvswitch", ranks: Optional[int] = None, *,
               min_bytes: Union[str, int] = "8", max_bytes: Union[str, int] = "8G",
               step_factor: Union[str, int, float] = "2", step_bytes: Union[None, str, int] = None,
               dtype: str = "float", algorithm: str = "auto", protocol: str = "auto",
               sets: Union[None, Sequence[str], Mapping[str, Any]] = None,
               export: Optional[Tuple[str, Union[str, os.PathLike]]] = None, as_dataframe: bool = False):
    """``overlap-sim collective PRIMITIVE --format json``: the collective model's times over a size
    sweep, as nccl-tests' JSON (``-b min_bytes -e max_bytes -f step_factor`` or ``-i step_bytes``).
    ``export=("nccl-tuner", FILE)`` also writes NCCL's example tuner plugin CSV of the per-size choice
    (atomically; a directory, device or socket is refused)."""
    out = _finish(_core.collective(primitive, hardware, ranks, str(min_bytes), str(max_bytes), str(step_factor),
                                   "" if step_bytes is None else str(step_bytes), dtype, algorithm, protocol,
                                   _set_list(sets), _export(export)))
    data = json.loads(out)
    return _report(data, "results", as_dataframe)


def validate(dir: Union[None, str, os.PathLike] = None, *, papers: bool = False,
             sources: Iterable[str] = (), as_dataframe: bool = False):
    """``overlap-sim validate DIR --format json`` (a calibration results directory) or
    ``validate --papers [--source S]...`` (the sources' published figures against our predictions)."""
    out = _finish(_core.validate("" if dir is None else os.fspath(dir), papers, list(sources)))
    data = json.loads(out)
    return _report(data, "rows" if "rows" in data else "groups", as_dataframe)


def profile_show(name: Union[str, os.PathLike], sets: Union[None, Sequence[str], Mapping[str, Any]] = None) -> dict:
    """``overlap-sim profile show NAME|PATH --format json``: the resolved hardware profile."""
    return json.loads(_finish(_core.profile_show(os.fspath(name), _set_list(sets))))


def profile_list() -> Any:
    """``overlap-sim profile list --format json``: the built-in hardware profiles."""
    return json.loads(_finish(_core.profile_list()))


def source_dir() -> str:
    """The source tree whose scenarios/ the package reads ($OVERLAP_HOME when set, else the tree it
    was built from)."""
    return _core.source_dir()
