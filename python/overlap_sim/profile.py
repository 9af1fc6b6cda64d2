"""Profile: a hardware profile (a built-in name, a YAML file or a dict) and the fields set on it,
read and checked through ``profile show`` (the profile schema, cost_model/profile_schema.hpp)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _core
from ._calls import InputFile, assignments, finish
from ._document import _Document

if TYPE_CHECKING:  # pragma: no cover
    from .results import GemmTuneResult


class Profile(_Document):
    """A hardware profile: a built-in name (``Profile.names()``), a YAML file, or a dict, and the
    fields set on it. Fields read the resolved profile (``profile show``: every key with its value,
    defaults filled in); setting one checks it through the profile schema at once.

    >>> p = Profile("h100-sxm-8x-nvswitch")
    >>> p.gpu.sm_count = 100          # or p["gpu.sm_count"] = 100
    >>> scenario.hardware = p         # the scenario now runs on it
    """

    _what = "hardware profile"
    _OWN = ("source", "sets", "set", "update", "check", "copy", "to_dict", "get", "keys", "names", "load", "tune_gemm",
            "from_dict", "collective", "assignments_for_scenario")

    def __init__(self, source: Union[str, "os.PathLike[str]", Mapping[str, Any], "Profile"] = "h100-sxm-8x-nvswitch",
                 sets: Union[None, str, Sequence[str], Mapping[str, Any]] = None) -> None:
        super().__init__(source, sets)

    @classmethod
    def load(cls, source: Union[str, "os.PathLike[str]"], **fields: Any) -> "Profile":
        """A built-in profile by name, or a profile YAML file; keyword arguments set top-level fields."""
        return cls(source, fields or None)

    @classmethod
    def from_dict(cls, tree: Mapping[str, Any]) -> "Profile":
        """A profile written as the dict its YAML file would hold."""
        return cls(tree)

    @staticmethod
    def names() -> List[str]:
        """The built-in profiles' names."""
        return [p["name"] if isinstance(p, dict) else p for p in _profile_list()]

    def _show(self) -> Dict[str, Any]:
        with InputFile(self._source, "profile") as f:
            return json.loads(finish(_core.profile_show(f.path, self._sets), f.temp))

    def check(self) -> None:
        self._show()

    def _load_tree(self) -> Dict[str, Any]:
        return self._show()

    def assignments_for_scenario(self) -> List[str]:
        """This profile as a scenario's ``--set`` assignments: ``hardware=NAME|PATH|{...}`` and each
        field set here under ``hardware.``."""
        src = self._source
        if isinstance(src, dict):
            first = f"hardware={json.dumps(src)}"
        else:
            assert src is not None
            is_path = "/" in src or src.endswith(".yaml")
            first = f"hardware={os.path.abspath(src) if is_path and os.path.exists(src) else src}"
        rest = [a if a.startswith("hardware.") else f"hardware.{a}" for a in self._sets]
        return [first] + rest

    def collective(self, primitive: str, ranks: Optional[int] = None, **options: Any):
        """``overlap-sim collective PRIMITIVE`` on this profile: the model's time per message size as a
        DataFrame (nccl-tests' JSON rows; ``options`` as :func:`overlap_sim.collective` takes them)."""
        from . import collective
        from .report import frame
        if isinstance(self._source, dict):
            raise NotImplementedError("collective() needs a named or file profile (the command reads a name or path)")
        sets = list(self._sets) + assignments(options.pop("sets", None))
        report = collective(primitive, self._source, ranks, sets=sets, **options)
        return frame(report["results"])

    def tune_gemm(self, gemm: str, primitive: str, ranks: int, *, dtype: str = "bf16", search: str = "simulate",
                  sm_margin: bool = False, budget: int = 40, top: int = 10,
                  export_flashoverlap: Union[None, str, "os.PathLike[str]"] = None) -> "GemmTuneResult":
        """``overlap-sim tune --gemm MxNxK --primitive P --ranks R`` on this profile: FlashOverlap's wave
        groups for one GEMM, as a :class:`GemmTuneResult`."""
        from . import tune
        from .results import GemmTuneResult
        if isinstance(self._source, dict) or self._sets:
            raise NotImplementedError("tune_gemm() needs a named or file profile without fields set (the command "
                                      "reads a name or path)")
        return GemmTuneResult(tune(hardware=self._source, gemm=gemm, dtype=dtype, primitive=primitive, ranks=ranks,
                                   search=search, budget=budget, top=top, sm_margin=sm_margin,
                                   export_flashoverlap=export_flashoverlap))

    def __repr__(self) -> str:
        src = "dict" if isinstance(self._source, dict) else repr(self._source)
        return f"Profile({src}{', sets=' + repr(self._sets) if self._sets else ''})"


def _profile_list() -> List[Any]:
    data = json.loads(finish(_core.profile_list()))
    return data["profiles"] if isinstance(data, dict) and "profiles" in data else data
