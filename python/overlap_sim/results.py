"""What Scenario.run, .sweep and .tune return: the command's JSON report, and its rows as pandas
DataFrames by the rule of overlap_sim/report.py (a nested map as dotted columns, lists of maps left
in the report). Every value in a frame is the report's, which is the CLI's ``--format json``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from .report import Report, frame

if TYPE_CHECKING:  # pragma: no cover
    from .scenario import Scenario


class _Result:
    """The report (``.report``, a dict) and the scenario it ran; ``to_dataframe()`` is the table a
    subclass names in ``_main_table`` (the one a notebook shows)."""

    _main_table = ""

    def __init__(self, report: Report, scenario: Optional["Scenario"] = None) -> None:
        self.report = report
        self.scenario = scenario
        self._frames: Dict[str, Any] = {}

    def _frame(self, name: str, make) -> Any:
        if name not in self._frames:
            self._frames[name] = make()
        return self._frames[name].copy()

    def __getitem__(self, key: str) -> Any:
        return self.report[key]

    def _repr_html_(self) -> Optional[str]:  # a notebook shows the main table
        try:
            return self.to_dataframe()._repr_html_()
        except ImportError:  # pragma: no cover - no pandas
            return None

    def to_dataframe(self):
        return getattr(self, self._main_table)


class RunResult(_Result):
    """``overlap-sim run``: one row per scheme (and knob setting) with its figures.

    - ``schemes``: DataFrame, columns ``scheme``, ``params.*``, then the report's figures
      (``latency_us``, ``exposed_comm_us``, ``overlap_efficiency``, ``speedup_vs_no_overlap``, ...);
    - ``best``: the best scheme (dict: ``scheme``, ``params``, ``speedup_vs_baseline``, ``tied``
      when others equal it);
    - ``report``: the whole JSON report (``collectives`` and ``utilization`` per scheme live here).
    """

    _main_table = "schemes"

    @property
    def schemes(self):
        return self._frame("schemes", lambda: frame(self.report["results"], first=("scheme",)))

    def row(self, scheme: str, **params: Any):
        """The first row of ``schemes`` for ``scheme`` whose knobs include ``params`` (as a pandas
        Series: ``r.row("async_tp", streams=1)["latency_us"]``). KeyError when none matches."""
        for i, r in enumerate(self.report["results"]):
            if r["scheme"] == scheme and all(r.get("params", {}).get(k) == v for k, v in params.items()):
                return self.schemes.iloc[i]
        raise KeyError(f"no {scheme} with {params} in {self.report.get('scenario')!r}")

    @property
    def placeholders(self) -> Dict[str, Any]:
        """Which guessed profile values were re-run at both ends of their plausible ranges and which
        change the ranking (the report's ``placeholder_sensitivity``; empty when the profile marks no
        guess): ``checked``, ``unchecked``, ``deciding``."""
        return dict(self.report.get("placeholder_sensitivity", {}))

    @property
    def best(self) -> Dict[str, Any]:
        return dict(self.report["best"])

    @property
    def baseline(self) -> Any:
        return self.report.get("baseline")

    def __repr__(self) -> str:
        b = self.report.get("best", {})
        label = b.get("label") or b.get("scheme")
        return (f"RunResult({self.report.get('scenario')!r}: {len(self.report.get('results', []))} schemes, "
                f"best {label} x{b.get('speedup_vs_baseline', float('nan')):.3f})")


class SweepResult(_Result):
    """``overlap-sim sweep``: one row per grid point and scheme.

    - ``grid``: DataFrame, columns the swept keys (``workload.tokens``, ...), ``scheme``,
      ``params.*``, then the figures (a point's ``best`` schemes as a list in each row);
    - ``swept``: the swept keys; ``points``: how many points;
    - ``report``: the whole JSON report.
    """

    _main_table = "grid"

    @property
    def swept(self) -> List[str]:
        return list(self.report.get("swept", []))

    @property
    def points(self) -> int:
        return int(self.report.get("points", 0))

    @property
    def grid(self):
        return self._frame("grid", lambda: frame(self.report["rows"], first=tuple(self.swept) + ("scheme",),
                                                 rename={"point.": ""}))

    def __repr__(self) -> str:
        return (f"SweepResult({self.report.get('scenario')!r}: {self.points} points over {', '.join(self.swept)}, "
                f"{len(self.report.get('rows', []))} rows)")


class GemmTuneResult(_Result):
    """``overlap-sim tune --gemm`` (operator level, :meth:`Profile.tune_gemm`): FlashOverlap's wave
    groups for one GEMM and collective.

    - ``candidates``: DataFrame, one row per partition tried, best first;
    - ``r["waves"]``, ``r["groups_waves"]``, ``r["speedup_vs_no_overlap"]``, ...: the chosen
      partition's figures (the report's top-level keys); ``report``: the whole JSON report.
    """

    _main_table = "candidates"

    @property
    def candidates(self):
        return self._frame("candidates", lambda: frame(self.report.get("candidates", [])))

    def __repr__(self) -> str:
        return (f"GemmTuneResult({self.report.get('waves')} waves, groups {self.report.get('groups_waves')}, "
                f"x{self.report.get('speedup_vs_no_overlap', float('nan')):.3f})")


class TuneResult(_Result):
    """``overlap-sim tune SCENARIO``: each scheme's best knobs.

    - ``schemes``: DataFrame, one row per scheme: ``scheme``, ``best.*`` (latency, params,
      speedup) and ``best_metrics.*`` (the best setting's figures);
    - ``candidates``: DataFrame, one row per scheme and knob setting tried;
    - ``best``: the best scheme over all; ``report``: the whole JSON report.
    """

    _main_table = "schemes"

    @property
    def schemes(self):
        return self._frame("schemes", lambda: frame(self.report["schemes"], first=("scheme",)))

    @property
    def candidates(self):
        def make():
            rows = [dict({"scheme": s["scheme"]}, **c) for s in self.report["schemes"] for c in s.get("candidates", [])]
            return frame(rows, first=("scheme",))
        return self._frame("candidates", make)

    @property
    def best(self) -> Dict[str, Any]:
        return dict(self.report["best"])

    def __repr__(self) -> str:
        b = self.report.get("best", {})
        return f"TuneResult({self.report.get('scenario')!r}: best {b.get('scheme')} {b.get('params')})"
