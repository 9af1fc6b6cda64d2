"""Scenario: a scenario file (or dict) and the fields set on it, and its runs (overlap_sim/_document.py
says how fields are set, checked and read)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from . import _core
from ._calls import InputFile, assignments, finish, jobs_arg
from ._document import Source, _Document
from .profile import Profile

if TYPE_CHECKING:  # pragma: no cover
    from .results import RunResult, SweepResult, TuneResult


class Scenario(_Document):
    """A scenario: a file (a path, or a name under scenarios/ or scenarios/papers/ as on the command
    line), a dict holding the YAML tree a file would, or None for the default scenario (Llama-3-70B
    MLP, TP 8 on 8x H100); then fields set on it, and runs.

    >>> s = Scenario("llama3-70b-tp8-mlp")
    >>> s.workload.tokens = 16384                 # or s["workload.tokens"] = 16384
    >>> s.hardware = "h200-sxm-8x-nvswitch"       # a built-in name, a path, or a Profile
    >>> s.run().schemes                           # a DataFrame, one row per scheme

    The key ``sweep`` shares its name with the method: read and set it as ``s["sweep"]``.
    """

    _what = "scenario"
    _OWN = ("source", "sets", "set", "update", "check", "copy", "to_dict", "get", "keys", "load", "from_dict",
            "run", "sweep", "tune")

    def __init__(self, source: Union[Source, "Scenario"] = None,
                 sets: Union[None, str, Sequence[str], Mapping[str, Any]] = None) -> None:
        super().__init__(source, sets)

    @classmethod
    def load(cls, source: Union[None, str, "os.PathLike[str]"] = None, **fields: Any) -> "Scenario":
        """A scenario file or shipped name (None: the default); keyword arguments set top-level fields
        (``Scenario.load("x", fidelity="steps")``)."""
        return cls(source, fields or None)

    @classmethod
    def from_dict(cls, tree: Mapping[str, Any]) -> "Scenario":
        """A scenario written as the dict its YAML file would hold."""
        return cls(tree)

    def set(self, key: str, value: Any, *, check: bool = True) -> "Scenario":
        """Sets a field (see :meth:`_Document.set`). A :class:`Profile` as ``hardware`` brings its
        fields along."""
        if key == "hardware" and isinstance(value, Profile):
            return self.update(value.assignments_for_scenario(), check=check)  # type: ignore[return-value]
        return super().set(key, value, check=check)  # type: ignore[return-value]

    def update(self, fields: Union[str, Sequence[str], Mapping[str, Any]], *, check: bool = True) -> "Scenario":
        if isinstance(fields, Mapping) and isinstance(fields.get("hardware"), Profile):
            rest = {k: v for k, v in fields.items() if k != "hardware"}
            return super().update(fields["hardware"].assignments_for_scenario() + assignments(rest),  # type: ignore
                                  check=check)
        return super().update(fields, check=check)  # type: ignore[return-value]

    def check(self) -> None:
        with InputFile(self._source) as f:
            finish(_core.check_scenario(f.path, self._sets), f.temp)

    def _load_tree(self) -> Dict[str, Any]:
        with InputFile(self._source) as f:
            return json.loads(finish(_core.scenario_tree(f.path, self._sets), f.temp))

    # -- running -----------------------------------------------------------------------------------
    def run(self, scheme: Optional[str] = None, *, fidelity: Optional[str] = None,
            params: Union[None, Sequence[str], Mapping[str, Any]] = None,
            placeholder_check: str = "auto") -> "RunResult":
        """``overlap-sim run``: every scheme of the scenario (or only ``scheme``, with its knobs
        ``params``), as a :class:`RunResult`; ``placeholder_check`` as :func:`overlap_sim.run`'s."""
        from . import run
        from .results import RunResult
        return RunResult(run(self._source, self._sets, scheme=scheme, fidelity=fidelity, params=params,
                             placeholder_check=placeholder_check), self)

    def sweep(self, axes: Union[None, str, Sequence[str], Mapping[str, Sequence[Any]]] = None, *,
              only_axes: bool = False, no_axes: Sequence[str] = (), jobs: int = 0) -> "SweepResult":
        """``overlap-sim sweep``: the scenario's sweep grid and ``axes`` ({key: [v1, v2]} or
        "key=v1,v2"; ``only_axes`` drops the scenario's own), every scheme, as a :class:`SweepResult`."""
        from . import sweep
        from .results import SweepResult
        return SweepResult(sweep(self._source, axes, self._sets, no_axes=no_axes, only_axes=only_axes,
                                 jobs=jobs_arg(jobs)), self)

    def tune(self, *, jobs: int = 0, export: Optional[Tuple[str, Union[str, "os.PathLike[str]"]]] = None) -> "TuneResult":
        """``overlap-sim tune SCENARIO``: every scheme's best knobs, as a :class:`TuneResult`."""
        from . import tune
        from .results import TuneResult
        return TuneResult(tune(self._source, self._sets, jobs=jobs_arg(jobs), export=export), self)

    def __repr__(self) -> str:
        src = "dict" if isinstance(self._source, dict) else repr(self._source)
        return f"Scenario({src}{', sets=' + repr(self._sets) if self._sets else ''})"
