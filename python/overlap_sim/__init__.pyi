# Type hints of overlap_sim (python/overlap_sim/__init__.py); the module _core is private. The object
# API's modules (scenario.py, results.py, profiler_trace.py, errors.py, report.py) carry their own
# annotations; py.typed marks the package as typed.
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Union, overload, Literal

import pandas

from . import _core as _core
from .errors import (CannotSimulateError as CannotSimulateError, InputError as InputError,
                     InternalError as InternalError, OptionError as OptionError, OutOfMemoryError as OutOfMemoryError,
                     OutputError as OutputError, OverlapSimError as OverlapSimError,
                     SchemeFailedWarning as SchemeFailedWarning)
from .profiler_trace import Trace as Trace
from .report import Report as Report
from .results import (GemmTuneResult as GemmTuneResult, RunResult as RunResult, SweepResult as SweepResult,
                      TuneResult as TuneResult)
from .validation import Validation as Validation
from ._document import Fields as Fields
from .profile import Profile as Profile
from .scenario import Scenario as Scenario

ScenarioArg = Union[None, str, os.PathLike[str], Mapping[str, Any]]
Sets = Union[None, str, Sequence[str], Mapping[str, Any]]
Export = Optional[Tuple[str, Union[str, os.PathLike[str]]]]

__version__: str
DICT_FILE: str
MAX_JOBS: int
MAX_ASSIGNMENT_BYTES: int
MAX_ASSIGNMENTS_TOTAL_BYTES: int

@overload
def run(scenario: ScenarioArg = ..., sets: Sets = ..., scheme: Optional[str] = ..., fidelity: Optional[str] = ...,
        params: Sets = ..., *, placeholder_check: str = ..., as_dataframe: Literal[False] = ...) -> Report: ...
@overload
def run(scenario: ScenarioArg = ..., sets: Sets = ..., scheme: Optional[str] = ..., fidelity: Optional[str] = ...,
        params: Sets = ..., *, placeholder_check: str = ..., as_dataframe: Literal[True]) -> pandas.DataFrame: ...
@overload
def tune(scenario: ScenarioArg = ..., sets: Sets = ..., *, hardware: Optional[str] = ..., gemm: Optional[str] = ...,
         dtype: str = ..., primitive: Optional[str] = ..., ranks: int = ..., search: str = ..., budget: int = ...,
         top: int = ..., jobs: int = ..., sm_margin: bool = ..., export: Export = ...,
         export_flashoverlap: Union[None, str, os.PathLike[str]] = ..., as_dataframe: Literal[False] = ...) -> Report: ...
@overload
def tune(scenario: ScenarioArg = ..., sets: Sets = ..., *, hardware: Optional[str] = ..., gemm: Optional[str] = ...,
         dtype: str = ..., primitive: Optional[str] = ..., ranks: int = ..., search: str = ..., budget: int = ...,
         top: int = ..., jobs: int = ..., sm_margin: bool = ..., export: Export = ...,
         export_flashoverlap: Union[None, str, os.PathLike[str]] = ..., as_dataframe: Literal[True]) -> pandas.DataFrame: ...
@overload
def sweep(scenario: ScenarioArg = ..., sweeps: Sets = ..., sets: Sets = ..., *, no_axes: Sequence[str] = ...,
          only_axes: bool = ..., jobs: int = ..., as_dataframe: Literal[False] = ...) -> Report: ...
@overload
def sweep(scenario: ScenarioArg = ..., sweeps: Sets = ..., sets: Sets = ..., *, no_axes: Sequence[str] = ...,
          only_axes: bool = ..., jobs: int = ..., as_dataframe: Literal[True]) -> pandas.DataFrame: ...
@overload
def collective(primitive: str, hardware: str = ..., ranks: Optional[int] = ..., *, min_bytes: Union[str, int] = ...,
               max_bytes: Union[str, int] = ..., step_factor: Union[str, int, float] = ...,
               step_bytes: Union[None, str, int] = ..., dtype: str = ..., algorithm: str = ..., protocol: str = ...,
               sets: Sets = ..., export: Export = ..., as_dataframe: Literal[False] = ...) -> Report: ...
@overload
def collective(primitive: str, hardware: str = ..., ranks: Optional[int] = ..., *, min_bytes: Union[str, int] = ...,
               max_bytes: Union[str, int] = ..., step_factor: Union[str, int, float] = ...,
               step_bytes: Union[None, str, int] = ..., dtype: str = ..., algorithm: str = ..., protocol: str = ...,
               sets: Sets = ..., export: Export = ..., as_dataframe: Literal[True]) -> pandas.DataFrame: ...
@overload
def validate(dir: Union[None, str, os.PathLike[str]] = ..., *, papers: bool = ..., sources: Iterable[str] = ...,
             as_dataframe: Literal[False] = ...) -> Report: ...
@overload
def validate(dir: Union[None, str, os.PathLike[str]] = ..., *, papers: bool = ..., sources: Iterable[str] = ...,
             as_dataframe: Literal[True]) -> pandas.DataFrame: ...
def profile_show(name: Union[str, os.PathLike[str]], sets: Sets = ...) -> dict[str, Any]: ...
def profile_list() -> Any: ...
def source_dir() -> str: ...
@overload
def trace(files: Union[str, os.PathLike[str], Iterable[Union[str, os.PathLike[str]]]], *, hardware: Optional[str] = ...,
          kernels: bool = ..., step_prefix: str = ..., comm_kernels: Iterable[str] = ...,
          compute_kernels: Iterable[str] = ..., as_dataframe: Literal[False] = ...) -> Report: ...
@overload
def trace(files: Union[str, os.PathLike[str], Iterable[Union[str, os.PathLike[str]]]], *, hardware: Optional[str] = ...,
          kernels: bool = ..., step_prefix: str = ..., comm_kernels: Iterable[str] = ...,
          compute_kernels: Iterable[str] = ..., as_dataframe: Literal[True]) -> pandas.DataFrame: ...
