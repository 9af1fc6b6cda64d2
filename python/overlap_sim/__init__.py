"""overlap_sim: the overlap-sim simulator called from Python.

Two layers over one C++ core (the one the command line links, tools/cmd_*.hpp):

- objects (overlap_sim/scenario.py, results.py, profiler_trace.py, validation.py): load or build a
  :class:`Scenario` and a :class:`Profile`, change fields (checked at once as ``--set`` checks them),
  run, and read the results as pandas DataFrames (:class:`RunResult`, :class:`SweepResult`,
  :class:`TuneResult`, :class:`GemmTuneResult`, :class:`Trace`, :class:`Validation`);
- commands (this file): each function runs the overlap-sim command of the same name and returns
  what it prints with ``--format json``, parsed into plain Python data.

Either way the numbers are the CLI's to the last digit, and the CLI's errors are raised as the
exceptions of overlap_sim/errors.py (:class:`InputError` with file, line and key, ...). The
simulations release the GIL. See docs/guide/python.md.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Union

# An installed wheel carries the scenarios it was built with (overlap_sim/data/scenarios: hardware
# profiles, model configs, paper scenarios; python/CMakeLists.txt); the C++ core finds them through
# $OVERLAP_HOME (cost_model/source_paths.cpp) unless the caller set it. An import from the build tree
# (PYTHONPATH=build/python) has no data/ and reads the source tree it was built from.
_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
if not os.environ.get("OVERLAP_HOME") and os.path.isdir(os.path.join(_DATA, "scenarios", "hardware")):
    os.environ["OVERLAP_HOME"] = _DATA

from . import _core  # noqa: E402  (after $OVERLAP_HOME is set)
from ._calls import (DICT_FILE, MAX_ASSIGNMENT_BYTES, MAX_ASSIGNMENTS_TOTAL_BYTES, MAX_JOBS,  # noqa: E402
                     InputFile, assignments, finish, jobs_arg, path_arg, text_arg, yaml_value)
from .errors import (CannotSimulateError, InputError, InternalError, OptionError, OutOfMemoryError,  # noqa: E402
                     OutputError, OverlapSimError, SchemeFailedWarning)
from . import errors  # noqa: E402
from .report import Report  # noqa: E402

__all__ = [
    # objects
    "Scenario",
    "Profile",
    "RunResult",
    "SweepResult",
    "TuneResult",
    "GemmTuneResult",
    "Trace",
    "Validation",
    # errors (errors.py lists them)
    *errors.__all__,
    # commands
    "Report",
    "run",
    "tune",
    "sweep",
    "collective",
    "validate",
    "trace",
    "profile_show",
    "profile_list",
    "source_dir",
    # limits
    "MAX_JOBS",
    "MAX_ASSIGNMENT_BYTES",
    "MAX_ASSIGNMENTS_TOTAL_BYTES",
    "DICT_FILE",
]

__version__ = "0.1.0"


def _report(data: Any, rows_key: Optional[str], as_dataframe: bool):
    r = Report(data)
    r.rows_key = rows_key
    return r.to_dataframe() if as_dataframe else r


def run(scenario: Union[None, str, os.PathLike, Mapping[str, Any]] = None,
        sets: Union[None, Sequence[str], Mapping[str, Any]] = None,
        scheme: Optional[str] = None, fidelity: Optional[str] = None,
        params: Union[None, Sequence[str], Mapping[str, Any]] = None, *, placeholder_check: str = "auto",
        as_dataframe: bool = False):
    """``overlap-sim run SCENARIO --format json``: every scheme of the scenario (or only ``scheme``,
    with its knobs ``params``) evaluated. None: the default scenario (Llama-3-70B MLP, TP 8).
    ``placeholder_check`` is ``--placeholder-check``: "auto" (the default: on runs of at most a million
    engine events), "always" or "never" (whether a guessed profile value decides the ranking: each
    guess re-runs the schemes it reaches at both ends of its range)."""
    if placeholder_check not in ("auto", "always", "never"):
        raise OptionError(f"placeholder_check must be auto, always or never (got {placeholder_check!r})",
                          key="placeholder_check", detail="placeholder_check must be auto, always or never")
    with InputFile(scenario) as sc:
        out = finish(_core.run(sc.path, assignments(sets), text_arg(scheme or "", "scheme"),
                               text_arg(fidelity or "", "fidelity"), assignments(params, "params"), "json",
                               placeholder_check), sc.temp)
    return _report(json.loads(out), "results", as_dataframe)


def _export(export: Optional[Tuple[str, Union[str, os.PathLike]]]) -> list:
    """``--export FORMAT FILE`` as the command takes it: a (format, path) pair, or nothing."""
    if export is None:
        return []
    if isinstance(export, (str, bytes, os.PathLike)) or len(export) != 2:
        raise OptionError("export takes a (FORMAT, FILE) pair, e.g. ('te-userbuffers', 'ub.yaml')", key="export",
                          detail="export takes a (FORMAT, FILE) pair")
    return [text_arg(export[0], "export"), path_arg(export[1], "export")]


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
    jobs = jobs_arg(jobs)
    with InputFile(scenario) as sc:
        out = finish(_core.tune(sc.path, assignments(sets), path_arg(hardware, "hardware"), text_arg(gemm or "", "gemm"),
                                text_arg(dtype, "dtype"), text_arg(primitive or "", "primitive"), ranks,
                                text_arg(search, "search"), budget, top, jobs, sm_margin, _export(export),
                                path_arg(export_flashoverlap, "export_flashoverlap")), sc.temp)
    data = json.loads(out)
    return _report(data, "schemes" if "schemes" in data else "candidates", as_dataframe)


def _axes(sweeps: Union[None, str, Sequence[str], Mapping[str, Any]]) -> list:
    """``--sweep`` axes from "key=v1,v2" strings or {key: [v1, v2]}."""
    if isinstance(sweeps, Mapping):
        sweeps = [f"{text_arg(k, 'sweeps')}={','.join(yaml_value(v) for v in vals)}" for k, vals in sweeps.items()]
    return assignments(sweeps, "sweeps")


def sweep(scenario: Union[None, str, os.PathLike, Mapping[str, Any]] = None,
          sweeps: Union[None, Sequence[str], Mapping[str, Any]] = None,
          sets: Union[None, Sequence[str], Mapping[str, Any]] = None, *, no_axes: Sequence[str] = (),
          only_axes: bool = False, jobs: int = 0, as_dataframe: bool = False):
    """``overlap-sim sweep --format json``: the scenario's sweep grid (and ``sweeps``: "key=v1,v2" or
    {key: [v1, v2]}) for every scheme; ``rows`` holds one row per point and scheme."""
    jobs = jobs_arg(jobs)
    axes = _axes(sweeps)
    with InputFile(scenario) as sc:
        out = finish(_core.sweep(sc.path, axes, assignments(sets), [text_arg(a, "no_axes") for a in no_axes],
                                 only_axes, jobs), sc.temp)
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
    out = finish(_core.collective(text_arg(primitive, "primitive"), path_arg(hardware, "hardware"), ranks,
                                  text_arg(min_bytes, "min_bytes"), text_arg(max_bytes, "max_bytes"),
                                  text_arg(step_factor, "step_factor"),
                                  "" if step_bytes is None else text_arg(step_bytes, "step_bytes"),
                                  text_arg(dtype, "dtype"), text_arg(algorithm, "algorithm"),
                                  text_arg(protocol, "protocol"), assignments(sets), _export(export)))
    data = json.loads(out)
    return _report(data, "results", as_dataframe)


def validate(dir: Union[None, str, os.PathLike] = None, *, papers: bool = False,
             sources: Iterable[str] = (), as_dataframe: bool = False):
    """``overlap-sim validate DIR --format json`` (a calibration results directory) or
    ``validate --papers [--source S]...`` (the sources' published figures against our predictions)."""
    out = finish(_core.validate(path_arg(dir, "dir"), papers, [text_arg(s, "sources") for s in sources]))
    data = json.loads(out)
    return _report(data, "rows" if "rows" in data else "groups", as_dataframe)


def profile_show(name: Union[str, os.PathLike], sets: Union[None, Sequence[str], Mapping[str, Any]] = None) -> dict:
    """``overlap-sim profile show NAME|PATH --format json``: the resolved hardware profile."""
    return json.loads(finish(_core.profile_show(path_arg(name, "name"), assignments(sets))))


def profile_list() -> Any:
    """``overlap-sim profile list --format json``: the built-in hardware profiles."""
    return json.loads(finish(_core.profile_list()))


def source_dir() -> str:
    """The source tree whose scenarios/ the package reads ($OVERLAP_HOME when set, else the tree it
    was built from)."""
    return _core.source_dir()


def trace(files: Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]], *, hardware: Optional[str] = None,
          kernels: bool = False, step_prefix: str = "ProfilerStep#", comm_kernels: Iterable[str] = (),
          compute_kernels: Iterable[str] = (), as_dataframe: bool = False):
    """``overlap-sim trace FILE... --format json``: compute, communication and unoverlapped
    communication per rank and step of profiler traces (one file per rank); ``kernels=True`` is
    ``--kernels`` (every kernel group per rank). :class:`Trace` reads both as DataFrames."""
    if isinstance(files, (str, bytes, os.PathLike)):
        files = [files]
    out = finish(_core.trace([path_arg(f, "files") for f in files], text_arg(step_prefix, "step_prefix"),
                             path_arg(hardware, "hardware"), kernels, [text_arg(r, "comm_kernels") for r in comm_kernels],
                             [text_arg(r, "compute_kernels") for r in compute_kernels]))
    return _report(json.loads(out), "ranks", as_dataframe)


# The object API, built on the functions above.
from .profile import Profile  # noqa: E402
from .scenario import Scenario  # noqa: E402
from .results import GemmTuneResult, RunResult, SweepResult, TuneResult  # noqa: E402
from .profiler_trace import Trace  # noqa: E402
from .validation import Validation  # noqa: E402
