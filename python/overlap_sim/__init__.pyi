# Type hints of overlap_sim (python/overlap_sim/__init__.py); the module _core is private.
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Union, overload, Literal

import pandas

Scenario = Union[None, str, os.PathLike[str], Mapping[str, Any]]
Sets = Union[None, str, Sequence[str], Mapping[str, Any]]
Export = Optional[Tuple[str, Union[str, os.PathLike[str]]]]

__version__: str
DICT_FILE: str

class InputError(ValueError):
    message: str
    file: Optional[str]
    line: Optional[int]
    key: Optional[str]
    detail: str
    def __init__(self, message: str, file: Optional[str] = ..., line: Optional[int] = ..., key: Optional[str] = ...,
                 detail: Optional[str] = ...) -> None: ...

class Report(dict[str, Any]):
    rows_key: Optional[str]
    def to_dataframe(self) -> pandas.DataFrame: ...

@overload
def run(scenario: Scenario = ..., sets: Sets = ..., scheme: Optional[str] = ..., fidelity: Optional[str] = ...,
        params: Sets = ..., *, as_dataframe: Literal[False] = ...) -> Report: ...
@overload
def run(scenario: Scenario = ..., sets: Sets = ..., scheme: Optional[str] = ..., fidelity: Optional[str] = ...,
        params: Sets = ..., *, as_dataframe: Literal[True]) -> pandas.DataFrame: ...
@overload
def tune(scenario: Scenario = ..., sets: Sets = ..., *, hardware: Optional[str] = ..., gemm: Optional[str] = ...,
         dtype: str = ..., primitive: Optional[str] = ..., ranks: int = ..., search: str = ..., budget: int = ...,
         top: int = ..., jobs: int = ..., sm_margin: bool = ..., export: Export = ...,
         export_flashoverlap: Union[None, str, os.PathLike[str]] = ..., as_dataframe: Literal[False] = ...) -> Report: ...
@overload
def tune(scenario: Scenario = ..., sets: Sets = ..., *, hardware: Optional[str] = ..., gemm: Optional[str] = ...,
         dtype: str = ..., primitive: Optional[str] = ..., ranks: int = ..., search: str = ..., budget: int = ...,
         top: int = ..., jobs: int = ..., sm_margin: bool = ..., export: Export = ...,
         export_flashoverlap: Union[None, str, os.PathLike[str]] = ..., as_dataframe: Literal[True]) -> pandas.DataFrame: ...
@overload
def sweep(scenario: Scenario = ..., sweeps: Sets = ..., sets: Sets = ..., *, no_axes: Sequence[str] = ...,
          only_axes: bool = ..., jobs: int = ..., as_dataframe: Literal[False] = ...) -> Report: ...
@overload
def sweep(scenario: Scenario = ..., sweeps: Sets = ..., sets: Sets = ..., *, no_axes: Sequence[str] = ...,
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
