"""The lossless JSON domain: snapshot, freeze, thaw and JSON equality.

Every implementation of the session model, in every language, must read a logged value back as
the same value. So the write boundary accepts only what JSON carries exactly
(SESSION-LOSSLESS-JSON) and freezes what it accepted (SESSION-IMMUTABILITY): a value that could
change after it was logged, or that a JSON round trip would change, would make a replay differ
from the session it replays.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, NoReturn, TypeAlias

from sessionspec.errors import SpecViolation
from sessionspec.preview import INT_BITS, clipped, shown
from sessionspec.rules import kind_of

Json: TypeAlias = Any
"""A lossless JSON value. `Any` because the recursive union cannot be narrowed cheaply."""

MAX_SAFE_INTEGER = 2**53 - 1


def is_safe_int(value: object) -> bool:
    """An exact `int` (never a bool) within +-(2**53-1): a number every JSON reader reads the same.

    SESSION-LOSSLESS-JSON.8: never a float, even one of integral value (1.0 is not 1)."""
    return type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def is_nonneg_safe_int(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER


def is_nonempty_str(value: object) -> bool:
    """An exact `str` with at least one character: an identifier, a name or a kind that names something."""
    return type(value) is str and value != ""


def _immutable(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is immutable: accepted session values cannot change (SESSION-IMMUTABILITY.1)")


class FrozenDict(dict[str, Any]):
    """A JSON object that cannot change. Equal to the plain dict with the same items."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> FrozenDict:
        self = dict.__new__(cls)
        dict.__init__(self, *args, **kwargs)
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Filled once, in `__new__`: calling `__init__` again on a frozen value must not refill it."""

    __setattr__ = _immutable
    __delattr__ = _immutable
    __setitem__ = _immutable
    __delitem__ = _immutable
    __ior__ = _immutable
    clear = _immutable
    pop = _immutable
    popitem = _immutable
    setdefault = _immutable
    update = _immutable

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: object) -> FrozenDict:
        return self

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, Any]]]:
        return (FrozenDict, (dict(self),))

    def __repr__(self) -> str:
        return dict.__repr__(self)


class FrozenList(list[Any]):
    """A JSON array (or a returned sequence) that cannot change. Equal to the plain list."""

    __slots__ = ()

    def __new__(cls, *args: Any) -> FrozenList:
        self = list.__new__(cls)
        list.__init__(self, *args)
        return self

    def __init__(self, *args: Any) -> None:
        """Filled once, in `__new__`: `list.__init__` would clear and refill a frozen value."""

    __setattr__ = _immutable
    __delattr__ = _immutable
    __setitem__ = _immutable
    __delitem__ = _immutable
    __iadd__ = _immutable
    __imul__ = _immutable
    append = _immutable
    extend = _immutable
    insert = _immutable
    pop = _immutable
    remove = _immutable
    clear = _immutable
    sort = _immutable
    reverse = _immutable

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: object) -> FrozenList:
        return self

    def __reduce__(self) -> tuple[type[FrozenList], tuple[list[Any]]]:
        return (FrozenList, (list(self),))

    def __repr__(self) -> str:
        return list.__repr__(self)


_set_item = dict.__setitem__
_list_append = list.append
_CONTAINERS = (dict, FrozenDict, list, FrozenList)


PATH_ENDS = 8
"""A path in a message keeps this many steps at each end: the value may be 100,000 levels deep."""


def _path(frames: list[tuple[Any, ...]], key: object) -> str:
    """Where the bad value is (`$.message.content[3]`): bounded, as a message must be, with the levels of a deep path
    between its two ends counted and each key cut (a key, too, can be a 64 MiB string)."""
    depth = len(frames)  # the steps: one a frame below the root, and `key`
    if depth <= 2 * PATH_ENDS:
        steps = [_step(frame[3]) for frame in frames[1:]]
    else:
        skipped = depth - 2 * PATH_ENDS
        steps = [*(_step(frame[3]) for frame in frames[1:PATH_ENDS + 1]), f"...({skipped} levels)...",
                 *(_step(frame[3]) for frame in frames[depth - PATH_ENDS + 1:])]
    return "".join(["$", *steps, _step(key)])


def _step(key: object) -> str:
    return f"[{key}]" if isinstance(key, int) else f".{clipped(str(key), 40)}"


def _reject(rule: str, what: str, where: str) -> NoReturn:
    raise SpecViolation(rule, kind_of(rule), f"{what} at {where}")


def _is_lossless_scalar(value: object) -> bool:
    """Whether `_check_scalar` accepts `value` (without building the message it would raise)."""
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return True
    if kind is int:
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER  # type: ignore[operator]
    if kind is float:
        return math.isfinite(value) and not (value == 0.0 and math.copysign(1.0, value) < 0)  # type: ignore[arg-type]
    return False


def _check_scalar(value: object, where: str) -> None:
    """Validate one non-container value, `where` the path to it."""
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return
    if kind is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:  # type: ignore[operator]
            return
        # .2 Integers beyond 2**53-1 are read differently by JavaScript readers.
        number = f"integer {value}" if value.bit_length() <= INT_BITS else shown(value)  # type: ignore[attr-defined]
        _reject("SESSION-LOSSLESS-JSON.2", f"{number} is outside +-(2**53-1)", where)
    if kind is float:
        # .3 NaN and the infinities have no JSON text.
        if not math.isfinite(value):  # type: ignore[arg-type]
            _reject("SESSION-LOSSLESS-JSON.3", f"float {value} is not finite", where)
        # .4 -0.0 is written "-0.0" by some writers and read as 0 by others.
        if value == 0.0 and math.copysign(1.0, value) < 0:
            _reject("SESSION-LOSSLESS-JSON.4", "negative zero", where)
        return
    # .1 Anything else (tuples, sets, bytes, Decimal, datetime, subclasses, objects with hooks)
    #    would be changed, or dropped, by a JSON round trip.
    _reject("SESSION-LOSSLESS-JSON.1", f"{kind.__module__}.{kind.__qualname__} is not a JSON type", where)


def snapshot(value: object, *, frozen: bool = True) -> Json:
    """Validate `value` as lossless JSON and copy it, in one pass, without recursion (SESSION-LOSSLESS-JSON.7).

    Each slot is read exactly once and the value read is both checked and copied, so nothing can
    change between the check and the copy. Shared (acyclic) sub-values become independent copies.
    With `frozen` (the default) the copy is built of FrozenDict and FrozenList.
    Raises SpecViolation naming the SESSION-LOSSLESS-JSON rule and the path of the first bad value.
    """
    kind = type(value)
    if kind not in _CONTAINERS:
        _check_scalar(value, "$")
        return value
    make_dict = FrozenDict if frozen else dict
    make_list = FrozenList if frozen else list
    root_out: Any = make_dict() if isinstance(value, dict) else make_list()
    # A frame: (source container, iterator over its items, output container, key in parent).
    container: Any = value
    root_items: Iterator[Any] = iter(container.items()) if isinstance(container, dict) else iter(enumerate(container))
    frames: list[tuple[Any, Iterator[Any], Any, object]] = [(value, root_items, root_out, None)]
    on_path: set[int] = {id(value)}
    while frames:
        source, items, out, _ = frames[-1]
        is_dict_out = isinstance(out, dict)
        for key, child in items:
            if is_dict_out and type(key) is not str:
                # .5 JSON object keys are strings; other keys would be coerced or dropped.
                _reject("SESSION-LOSSLESS-JSON.5", f"object key {shown(key)} is not a string", _path(frames, "<key>"))
            child_kind = type(child)
            if child_kind in _CONTAINERS:
                if id(child) in on_path:
                    # .6 A value that contains itself has no JSON text.
                    _reject("SESSION-LOSSLESS-JSON.6", "cycle: a value contains itself", _path(frames, key))
                child_out: Any = make_dict() if isinstance(child, dict) else make_list()
                if is_dict_out:
                    _set_item(out, key, child_out)
                else:
                    _list_append(out, child_out)
                child_items = iter(child.items()) if isinstance(child, dict) else iter(enumerate(child))
                frames.append((child, child_items, child_out, key))
                on_path.add(id(child))
                break
            if not _is_lossless_scalar(child):
                _check_scalar(child, _path(frames, key))  # raises: the path is built only for a value refused
            if is_dict_out:
                _set_item(out, key, child)
            else:
                _list_append(out, child)
        else:
            frames.pop()
            on_path.discard(id(source))
    return root_out


def is_json(value: object) -> bool:
    """Whether `snapshot` would accept `value`."""
    try:
        snapshot(value, frozen=False)
    except SpecViolation:
        return False
    return True


def is_frozen(value: object) -> bool:
    """Whether `value` is frozen lossless JSON: what `snapshot` returns, so that `snapshot(thaw(value))` equals it.

    FrozenDict and FrozenList all the way down (exactly those classes: a subclass may change what
    it holds), string keys, and the scalars `snapshot` accepts. Iterative, like `snapshot`. A
    container met twice (shared, or a cycle made by going round the frozen classes' guards) is
    not vouched for: `snapshot` itself must say what it is. Copies nothing, so a value already
    accepted and frozen is read once more, never copied again (SESSION-LOSSLESS-JSON.7).
    """
    kind = type(value)
    if kind is not FrozenDict and kind is not FrozenList:
        return _is_lossless_scalar(value)
    seen = {id(value)}
    stack: list[Any] = [value]
    while stack:
        container = stack.pop()
        if type(container) is FrozenDict:
            for key in container:
                if type(key) is not str:
                    return False
            children = container.values()
        else:
            children = container
        for child in children:
            child_kind = type(child)
            if child_kind is FrozenDict or child_kind is FrozenList:
                if id(child) in seen:
                    return False
                seen.add(id(child))
                stack.append(child)
            elif not _is_lossless_scalar(child):
                return False
    return True


def thaw(value: Json) -> Json:
    """SESSION-IMMUTABILITY.2: a plain, mutable deep copy (dict and list) of a frozen or plain JSON value. Iterative."""
    if not isinstance(value, (dict, list)):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, out = stack.pop()
        if isinstance(source, dict):
            for key, child in source.items():
                if isinstance(child, (dict, list)):
                    child_out: Any = {} if isinstance(child, dict) else []
                    out[key] = child_out
                    stack.append((child, child_out))
                else:
                    out[key] = child
        else:
            for child in source:
                if isinstance(child, (dict, list)):
                    child_out = {} if isinstance(child, dict) else []
                    out.append(child_out)
                    stack.append((child, child_out))
                else:
                    out.append(child)
    return root


def freeze(value: Json) -> Json:
    """Freeze an already-valid plain JSON value in place of a copy (used after a trusted parse)."""
    if not isinstance(value, (dict, list)):
        return value
    return snapshot(value)


def _json_class(value: object) -> int:
    if value is None:
        return 0
    if type(value) is bool:
        return 1
    if isinstance(value, (int, float)):
        return 2
    if isinstance(value, str):
        return 3
    if isinstance(value, list):
        return 4
    return 5


def json_equal(left: Json, right: Json) -> bool:
    """JSON equality: key order ignored, arrays positional, `true` never equals `1`.

    Python's `==` says `True == 1` and `1 == 1.0`; JSON readers agree on the second and not on the
    first, so this is the equality the spec means wherever it compares logged values.
    """
    stack = [(left, right)]
    while stack:
        a, b = stack.pop()
        ca, cb = _json_class(a), _json_class(b)
        if ca != cb:
            return False
        if ca == 4:
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif ca == 5:
            if a.keys() != b.keys():
                return False
            stack.extend((a[k], b[k]) for k in a)
        elif a != b:
            return False
    return True
