"""Trace: profiler traces of a real job (``overlap-sim trace``) read as DataFrames.

One file per rank: PyTorch profiler (Kineto) JSON, plain or gzip, or Nsight Systems SQLite exports.
The figures are the command's (calibrate/traces/): compute, communication and unoverlapped
communication (HolisticTraceAnalysis' interval overlap, not run's "exposed communication"), per rank
and step; and with ``kernels``, every kernel group per rank (``--kernels``).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple, Union

from .report import Report, frame

if TYPE_CHECKING:  # pragma: no cover
    from .profile import Profile

Files = Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]]


class Trace:
    """Traces loaded and analysed (``overlap-sim trace FILE... --format json``).

    - ``overall``: the figures over every rank (dict: ``compute_ns``, ``communication_ns``,
      ``unoverlapped_communication_ns``, ``overlap``, ...);
    - ``ranks``: DataFrame, one row per rank: ``rank``, ``file``, ``format``, the figures;
    - ``steps``: DataFrame, one row per rank and step;
    - ``kernels``: DataFrame, one row per rank and kernel group: ``rank``, ``kernel``, ``class``
      (compute, communication, memory, ...), ``kind`` (gemm, collective, ...), ``what`` (shape or
      message), ``count``, ``total_ns``, ``mean_ns``, ``min_ns``, ``max_ns``;
    - ``by_kind``: DataFrame, the kernels summed per ``class`` and ``kind`` over every rank
      (``groups``, ``count``, ``total_ns``), largest total first;
    - ``predictions``: with ``hardware``, the model's time beside each kernel class (DataFrame);
    - ``report`` / ``kernel_report``: the command's JSON, without and with ``--kernels``;
    - ``fit_profile(output, hardware=...)``: ``profile fit`` of these traces (a Profile and its keys).
    """

    def __init__(self, files: Files, *, hardware: Optional[str] = None, step_prefix: str = "ProfilerStep#",
                 comm_kernels: Iterable[str] = (), compute_kernels: Iterable[str] = ()) -> None:
        from . import trace
        if isinstance(files, (str, bytes, os.PathLike)):
            files = [files]
        self.files: List[Any] = list(files)
        self._options: Dict[str, Any] = dict(hardware=hardware, step_prefix=step_prefix,
                                             comm_kernels=list(comm_kernels), compute_kernels=list(compute_kernels))
        self.report: Report = trace(self.files, **self._options)
        self._kernel_report: Optional[Report] = None

    @classmethod
    def load(cls, files: Files, **options: Any) -> "Trace":
        """The same as ``Trace(files, **options)``."""
        return cls(files, **options)

    @property
    def kernel_report(self) -> Report:
        """``--kernels``' JSON, read when first asked for."""
        if self._kernel_report is None:
            from . import trace
            opts = {k: v for k, v in self._options.items() if k != "hardware"}
            self._kernel_report = trace(self.files, kernels=True, **opts)
        return self._kernel_report

    @property
    def overall(self) -> Dict[str, Any]:
        return dict(self.report["overall"])

    @property
    def ranks(self):
        rows = [{"rank": r["rank"], "file": r["file"], "format": r["format"], **r["figures"]} for r in self.report["ranks"]]
        return frame(rows)

    @property
    def steps(self):
        rows = [dict({"rank": r["rank"]}, **s) for r in self.report["ranks"] for s in r.get("steps", [])]
        return frame(rows, first=("rank",))

    @property
    def kernels(self):
        rows = [dict({"rank": r["rank"], "file": r["file"]}, **k) for r in self.kernel_report["ranks"]
                for k in r["kernels"]]
        return frame(rows, first=("rank", "kernel", "class", "kind", "what"))

    @property
    def by_kind(self):
        k = self.kernels
        table = (k.groupby(["class", "kind"], sort=False)
                  .agg(groups=("kernel", "size"), count=("count", "sum"), total_ns=("total_ns", "sum"))
                  .reset_index())
        return table.sort_values(["total_ns", "class", "kind"], ascending=[False, True, True], kind="stable") \
                    .reset_index(drop=True)

    @property
    def predictions(self):
        """With ``hardware``: the model's time beside each kernel class measured (``class``, ``what``,
        ``measured_ns``, ``predicted_ns``, ``not_predicted``), one row per class; empty without."""
        return frame(self.report.get("predictions", {}).get("rows", []))

    def fit_profile(self, output: Union[str, "os.PathLike[str]"], *, hardware: str = "h100-sxm-8x-nvswitch",
                    name: str = "", min_samples: int = 3) -> Tuple["Profile", Any]:
        """``overlap-sim profile fit FILE... --hardware BASE -o OUTPUT``: a profile of ``hardware`` with the
        keys these traces measure fitted to them, written to ``output`` (atomically). Returns the
        :class:`Profile` read from it and the report's keys as a DataFrame (``key``, ``fitted``,
        ``text``, ...)."""
        from . import _core
        from ._calls import finish, path_arg, text_arg
        from .profile import Profile
        out = path_arg(output, "output")
        data = json.loads(finish(_core.profile_fit([path_arg(f, "files") for f in self.files],
                                                   path_arg(hardware, "hardware"), out, text_arg(name, "name"),
                                                   int(min_samples))))
        return Profile(out), frame(data.get("keys", []))

    def to_dataframe(self):
        return self.kernels

    def _repr_html_(self) -> Optional[str]:
        try:
            return self.ranks._repr_html_()
        except ImportError:  # pragma: no cover
            return None

    def __repr__(self) -> str:
        o = self.report.get("overall", {})
        return (f"Trace({len(self.report.get('ranks', []))} ranks: compute {o.get('compute_ns')} ns, communication "
                f"{o.get('communication_ns')} ns, overlap {o.get('overlap')})")
