"""What ``overlap-sim validate`` reports, as an object: the sources' published figures against the
model's predictions (``--papers``), or a calibration results directory's predictions against its
measurements. The rows are the command's JSON rows as a DataFrame (overlap_sim/report.py's rule)."""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Optional, Union

from .report import Report, frame


class Validation:
    """``overlap-sim validate``.

    >>> v = Validation.papers("dtp")            # the delayed-TP blog's figures; no source: all of them
    >>> v.rows[["figure", "published", "predicted", "error_pct", "verdict"]]
    >>> v.median_abs_error_pct

    - ``rows``: DataFrame, one row per figure (``--papers``), or per measured run of a results
      directory with its group's ``benchmark`` first;
    - ``summary``: ``--papers``' rows as the command's table shows them (``location``, ``figure`` with
      its variant in brackets, ``published``, ``predicted``, ``error_pct``, ``verdict``);
    - ``groups``: a results directory's groups (``benchmark``, ``rows_scored``, ``median_abs_error_pct``,
      ...; empty for ``--papers``);
    - ``median_abs_error_pct``; ``report``: the whole JSON report; ``v["key"]`` reads one of its keys.
    """

    def __init__(self, dir: Union[None, str, "os.PathLike[str]"] = None, *, sources: Iterable[str] = ()) -> None:
        from . import validate
        self.dir = None if dir is None else os.fspath(dir)
        self.sources = [str(s) for s in sources]
        if self.dir is None:
            self.report: Report = validate(papers=True, sources=self.sources)
        else:
            if self.sources:
                raise ValueError("sources select papers; a results directory is validated whole")
            self.report = validate(self.dir)
        self._frames: Dict[str, Any] = {}

    @classmethod
    def papers(cls, *sources: str) -> "Validation":
        """``validate --papers [--source S]...``: every source, or only those named."""
        return cls(sources=sources)

    @classmethod
    def results(cls, dir: Union[str, "os.PathLike[str]"]) -> "Validation":
        """``validate DIR``: a calibration results directory (calibrate/results/...)."""
        return cls(dir)

    def _frame(self, key: str, make):
        if key not in self._frames:
            self._frames[key] = make()
        return self._frames[key].copy()

    @property
    def rows(self):
        if "groups" in self.report:
            return self._frame("rows", lambda: frame([dict({"benchmark": g["benchmark"]}, **r)
                                                      for g in self.report["groups"] for r in g.get("rows", [])],
                                                     first=("benchmark",)))
        return self._frame("rows", lambda: frame(self.report.get("rows", [])))

    @property
    def groups(self):
        return self._frame("groups", lambda: frame(self.report.get("groups", []), first=("benchmark",)))

    @property
    def summary(self):
        def make():
            rows = []
            for r in self.report.get("rows", []):
                figure = r.get("figure", "")
                if r.get("variant"):
                    figure = f"{figure} [{r['variant']}]"  # "paper setting" / "shipped default" pairs
                rows.append({"location": r.get("location"), "figure": figure, "published": r.get("published"),
                             "predicted": r.get("predicted"), "error_pct": r.get("error_pct"),
                             "verdict": r.get("verdict")})
            return frame(rows)
        return self._frame("summary", make)

    @property
    def median_abs_error_pct(self) -> Optional[float]:
        return self.report.get("median_abs_error_pct")

    def __getitem__(self, key: str) -> Any:
        return self.report[key]

    def to_dataframe(self):
        return self.rows

    def _repr_html_(self) -> Optional[str]:
        try:
            return self.rows._repr_html_()
        except ImportError:  # pragma: no cover - no pandas
            return None

    def __repr__(self) -> str:
        what = self.dir if self.dir is not None else ("papers " + ", ".join(self.sources) if self.sources else "papers")
        return f"Validation({what}: {len(self.report.get('rows', []))} rows)"
