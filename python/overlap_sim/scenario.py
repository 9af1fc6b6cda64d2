"""Scenario and Profile: a scenario file (or a hardware profile) and the fields changed on it.

Each holds its source (a file path, a built-in name, a dict, or nothing for the default) and the
fields set since, as the ``--set KEY=VALUE`` assignments the command line would be given. So a field
set from Python is checked exactly as ``--set`` is (the same loader, the same message), and an error
names where the bad value came from: the file and line when it was written there, the assignment
(``--set workload.tokenz=8``) when it was set here. A field is checked when it is set (loading a
scenario takes milliseconds), unless ``check=False`` leaves it to the run.

Reading a field gives the value in the scenario's tree after the assignments: the keys as written,
not what the loader derives from them (``workload.model: llama3-70b`` gives no ``workload.d_model``).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _core
from ._calls import InputFile, assignments, finish, jobs_arg, path_arg, plain, text_arg

Source = Union[None, str, "os.PathLike[str]", Mapping[str, Any]]
_MISSING = object()


class Fields:
    """A map inside a scenario or profile (``scenario.workload``): its keys read and set as attributes
    or items, each set going through the owner's check."""

    __slots__ = ("_owner", "_prefix")

    def __init__(self, owner: "_Document", prefix: str) -> None:
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_prefix", prefix)

    def _key(self, name: str) -> str:
        return f"{self._prefix}.{name}"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._owner[self._key(name)]
        except KeyError:
            raise AttributeError(f"{self._prefix} has no key {name!r} (keys: {', '.join(self.keys())})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self._owner[self._key(name)] = value

    def __getitem__(self, key: str) -> Any:
        return self._owner[self._key(key)]

    def __setitem__(self, key: str, value: Any) -> None:
        self._owner[self._key(key)] = value

    def __contains__(self, key: str) -> bool:
        return self._owner.get(self._key(key), _MISSING) is not _MISSING

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __dir__(self) -> List[str]:
        return self.keys()

    def keys(self) -> List[str]:
        return list(self.to_dict())

    def to_dict(self) -> Dict[str, Any]:
        """This map's keys and values, as plain data."""
        v = self._owner._lookup(self._prefix, raw=True)
        return v if isinstance(v, dict) else {}

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Fields):
            other = other.to_dict()
        return self.to_dict() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{self._prefix}: {self.to_dict()!r}"


class _Document:
    """What Scenario and Profile share: a source, the assignments set on it, item and attribute access
    to its fields."""

    # Names that are the class's own (methods, properties): setting one as an attribute is refused,
    # use item access for a key of that name (``scenario["sweep"] = ...``).
    _OWN: Tuple[str, ...] = ()
    _what = "scenario"

    def __init__(self, source: Source, sets: Union[None, str, Sequence[str], Mapping[str, Any]] = None) -> None:
        if isinstance(source, _Document):
            object.__setattr__(self, "_source", source._source)
            object.__setattr__(self, "_sets", list(source._sets))
        else:
            if isinstance(source, Mapping):
                source = plain(source, "")  # checked and copied: later changes to the caller's dict do not leak in
            elif source is not None:
                source = path_arg(source, self._what)
            object.__setattr__(self, "_source", source)
            object.__setattr__(self, "_sets", [])
        object.__setattr__(self, "_tree", None)
        if sets:
            self.update(sets)

    # -- the source and the assignments ------------------------------------------------------------
    @property
    def source(self) -> Union[None, str, Dict[str, Any]]:
        """The file or name it was loaded from, the dict it was built from, or None (the default)."""
        return self._source

    @property
    def sets(self) -> List[str]:
        """The fields set since loading, as ``--set KEY=VALUE`` assignments, in order."""
        return list(self._sets)

    def set(self, key: str, value: Any, *, check: bool = True) -> "_Document":
        """Sets the field at dotted ``key`` (``"workload.tokens"``, ``"schemes.0.params.chunks"``) to
        ``value`` (a number, string, bool, list or dict), as ``--set key=value`` does. With ``check``
        the whole scenario is loaded again at once and a bad key or value raises InputError (the field
        is then left as it was); without, the run reports it. Returns self."""
        return self.update({key: value}, check=check)

    def update(self, fields: Union[str, Sequence[str], Mapping[str, Any]], *, check: bool = True) -> "_Document":
        """Sets several fields together (a {key: value} mapping, or "key=value" assignments) and checks
        them once: for changes that are only valid together (a workload's kind with its keys)."""
        new = assignments(fields)
        before = list(self._sets)
        self._sets.extend(new)
        object.__setattr__(self, "_tree", None)
        if check:
            try:
                self.check()
            except BaseException:
                self._sets[:] = before
                object.__setattr__(self, "_tree", None)
                raise
        return self

    def check(self) -> None:
        """Loads it with every assignment, raising what a run would raise before simulating."""
        raise NotImplementedError

    def copy(self, **fields: Any) -> "_Document":
        """A copy (same source, same assignments); keyword arguments set top-level fields on it."""
        c = type(self)(self)
        if fields:
            c.update(fields)
        return c

    # -- reading fields ----------------------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        """The whole tree after the assignments, as plain data."""
        if self._tree is None:
            object.__setattr__(self, "_tree", self._load_tree())
        return json.loads(json.dumps(self._tree))

    def _load_tree(self) -> Dict[str, Any]:
        raise NotImplementedError

    def _lookup(self, key: str, raw: bool = False) -> Any:
        if self._tree is None:
            object.__setattr__(self, "_tree", self._load_tree())
        node: Any = self._tree
        for part in key.split("."):
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise KeyError(key)
        if isinstance(node, dict) and not raw:
            return Fields(self, key)
        return json.loads(json.dumps(node)) if isinstance(node, (dict, list)) else node

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self._lookup(key)
        except KeyError:
            return default

    def __getitem__(self, key: str) -> Any:
        return self._lookup(text_arg(key, "key"))

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def __contains__(self, key: str) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def keys(self) -> List[str]:
        return list(self.to_dict())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._lookup(name)
        except KeyError:
            raise AttributeError(f"this {self._what} has no key {name!r} (keys: {', '.join(self.keys())})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_") or name in self._OWN:
            raise AttributeError(f"{name!r} is a {type(self).__name__} method or property; set the key with "
                                 f"item access: obj[{name!r}] = ...")
        self.set(name, value)

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self.keys()))


class Profile(_Document):
    """A hardware profile: a built-in name (``Profile.names()``), a YAML file, or a dict, and the
    fields set on it. Fields read the resolved profile (``profile show``: every key with its value,
    defaults filled in); setting one checks it through the profile schema at once.

    >>> p = Profile("h100-sxm-8x-nvswitch")
    >>> p.gpu.sm_count = 100          # or p["gpu.sm_count"] = 100
    >>> scenario.hardware = p         # the scenario now runs on it
    """

    _what = "hardware profile"
    _OWN = ("source", "sets", "set", "update", "check", "copy", "to_dict", "get", "keys", "names", "load",
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

    def __repr__(self) -> str:
        src = "dict" if isinstance(self._source, dict) else repr(self._source)
        return f"Profile({src}{', sets=' + repr(self._sets) if self._sets else ''})"


def _profile_list() -> List[Any]:
    data = json.loads(finish(_core.profile_list()))
    return data["profiles"] if isinstance(data, dict) and "profiles" in data else data


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
            params: Union[None, Sequence[str], Mapping[str, Any]] = None) -> "RunResult":
        """``overlap-sim run``: every scheme of the scenario (or only ``scheme``, with its knobs
        ``params``), as a :class:`RunResult`."""
        from . import run
        from .results import RunResult
        return RunResult(run(self._source, self._sets, scheme=scheme, fidelity=fidelity, params=params), self)

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


# For type checkers and the forward references above.
from .results import RunResult, SweepResult, TuneResult  # noqa: E402,F401
