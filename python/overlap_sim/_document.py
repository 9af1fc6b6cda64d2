"""What Scenario and Profile share: a source and the fields set on it since.

Each holds its source (a file path, a built-in name, a dict, or nothing for the default) and the
fields set since, as the ``--set KEY=VALUE`` assignments the command line would be given. So a field
set from Python is checked exactly as ``--set`` is (the same loader, the same message), and an error
names where the bad value came from: the file and line when it was written there, the assignment
(``--set workload.tokenz=8``) when it was set here. A field is checked when it is set (loading a
scenario takes milliseconds), unless ``check=False`` leaves it to the run.

Reading a field gives the value in the tree after the assignments: the keys as written, not what the
loader derives from them (``workload.model: llama3-70b`` gives no ``workload.d_model``).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, Mapping, Sequence, Tuple, Union

from ._calls import assignments, path_arg, plain, text_arg

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
