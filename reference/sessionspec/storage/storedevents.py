"""The events of a loaded JSONL log, kept as the bytes they were stored as and built when read.

A loaded log used to be a list of fully built Events, each with a frozen copy of its data: about
seven bytes of memory for each byte of the file, and most of a load's time (benchmarks/README.md,
issue 36). The load gate's fast form (`storage.storedlog`) vouches for every record of the file
without building one, so the loaded events can stay as the file's own blocks of lines and be
built when they are read, each by the same fast form of `parse_event` the gate reads a record
with (`live.fastrecord.stored_event`): `events[i]` is the Event the gate would have built, equal
to it, and immutable (decision 5). The sequence itself is immutable too, compares equal to the
list of those Events, and a slice of it is another such sequence over the same bytes.

Memory is the file's bytes (its blocks, as `storage.jsonlread.read_blocks` yields them) and the
first seq of each block; building is one block at a time (a parse of its lines and the expansion
of its packed rows), the last block read kept, so reading the events in order parses each block
once.
"""

from __future__ import annotations

import operator
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, overload

from sessionspec.envelope import Event, EventSequence
from sessionspec.jsonvalue import FrozenList, Json
from sessionspec.live.fastrecord import stored_event
from sessionspec.live.fasttext import parse_block, read_line
from sessionspec.storage.chunkrows import decode

SHOWN = 20
"""Events a `repr` shows in full."""


def records_of(block: bytes) -> list[Json]:
    """The storage records of a block of complete lines, packed rows expanded: the gate's reading of each line.

    The block was read and vouched for by the load (every line lossless, every row well formed),
    so the fast reading of it is the one the load made: one parse of the block where it is
    canonical, else each line by the lossless reader.
    """
    values = parse_block(block)
    if values is None:
        values = [read_line(raw) for raw in block.split(b"\n")]
    records: list[Json] = []
    for value in values:
        records.extend(decode(value))
    return records


def _immutable(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is immutable: accepted session values cannot change (SESSION-IMMUTABILITY.1)")


class StoredBlocks:
    """The blocks of a loaded log and the first seq of each: what every `StoredEvents` view of it reads."""

    __slots__ = ("_cached", "blocks", "count", "firsts")

    def __init__(self, blocks: list[bytes], firsts: array[int], count: int) -> None:
        self.blocks = blocks
        self.firsts = firsts
        self.count = count
        self._cached: tuple[int, list[Json], list[Event | None]] = (-1, [], [])

    def event(self, seq: int) -> Event:
        """The event at `seq`, built from its block (kept for the next read)."""
        block = bisect_right(self.firsts, seq) - 1
        at, records, built = self._cached
        if at != block:
            records = records_of(self.blocks[block])
            built = [None] * len(records)
            self._cached = (block, records, built)
        offset = seq - self.firsts[block]
        event = built[offset]
        if event is None:
            event = built[offset] = stored_event(records[offset], seq)
        return event

    def events(self, start: int, stop: int) -> Iterator[Event]:
        """The events start..stop-1 in order, each block built once."""
        seq = start
        while seq < stop:
            event = self.event(seq)
            yield event
            seq += 1


class StoredEvents(EventSequence):
    """Events start..stop-1 of a loaded log, built when read (see the module docstring). Immutable, like FrozenList."""

    __slots__ = ("_start", "_stop", "_store")
    _store: StoredBlocks
    _start: int
    _stop: int

    def __init__(self, store: StoredBlocks, start: int = 0, stop: int | None = None) -> None:
        setter = object.__setattr__
        setter(self, "_store", store)
        setter(self, "_start", start)
        setter(self, "_stop", store.count if stop is None else stop)

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> Event: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Event]: ...
    def __getitem__(self, index: int | slice) -> Event | Sequence[Event]:
        if isinstance(index, slice):
            first, last, step = index.indices(len(self))
            if step == 1:
                return StoredEvents(self._store, self._start + first, self._start + max(first, last))
            return FrozenList(self[position] for position in range(first, last, step))
        size = len(self)
        position = operator.index(index)
        if position < 0:
            position += size
        if not 0 <= position < size:
            raise IndexError("event index out of range")
        return self._store.event(self._start + position)

    def __iter__(self) -> Iterator[Event]:
        return self._store.events(self._start, self._stop)

    def __reversed__(self) -> Iterator[Event]:
        event = self._store.event
        for seq in range(self._stop - 1, self._start - 1, -1):
            yield event(seq)

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same Events in the same order (a list, a FrozenList, another view)."""
        if isinstance(other, StoredEvents) and other._store is self._store:
            return (self._start, self._stop) == (other._start, other._stop) or len(self) == len(other) == 0
        if not isinstance(other, (list, tuple, StoredEvents)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]  # a list is not hashable either

    def __repr__(self) -> str:
        """As a list's, up to SHOWN events (a test's failure reads it); a longer log by its length."""
        if len(self) <= SHOWN:
            return repr(list(self))
        return f"<{len(self)} stored events: {self[0]!r} ... {self[-1]!r}>"

    def __reduce__(self) -> tuple[type[FrozenList], tuple[list[Any]]]:
        return (FrozenList, (list(self),))

    def __copy__(self) -> StoredEvents:
        return self

    def __deepcopy__(self, memo: object) -> StoredEvents:
        return self

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


__all__ = ["StoredBlocks", "StoredEvents", "records_of"]
