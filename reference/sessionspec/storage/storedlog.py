"""The load gate's fast form for a JSONL log: vouch for every record as `sessionspec check` does, build none.

`storage.load` of a long log used to build an immutable Event with a frozen copy of its data for
every record, then seed a session with all of them: 8.7 s and 780 MB for the 112 MB log of a
20,000-turn session, where `sessionspec check` proves the same rules in 1.0 s and 22 MB
(benchmarks/README.md, issue 36). The difference is what is kept, not what is checked. So a
JSONL log is first read here the way the checker reads it: each block parsed at once and proven
canonical (`live.fasttext.parse_block`), surveyed with no state (`storage.survey`), its runs
folded onto the surface in log order (`storage.surfacefold`), and every record no run takes
read through the reference's own functions (the gate's reading, `parse_event`'s fast form, the
catalog, `shapes.check_content`, `surface.plan`). What is kept is the file's blocks, as bytes;
the events are built from them when they are read (`storage.storedevents.StoredEvents`).

This form only ever accepts. Anything it does not vouch for, valid or not (a record a legacy
upgrade could change, a type the catalog does not know, a replace or a rule the reference
refuses, a torn tail, an open tail turn, which gets closers), makes it answer None, and the load
reads the log again through the gate itself (`storage.load_from`), which loads it as it always
did or refuses it with its rule, line and seq. So a log it accepts is one the gate accepts, with
the same events, no closers, no torn tail and no upgrades; tests/test_07_storedlog.py holds the
two to each other on generated logs, each also broken once.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from pathlib import Path

from sessionspec.catalog import END_SEED, RETIRED_TYPES, SURFACE_TYPES, TOOL_RESULT, Catalog
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenList, Json
from sessionspec.legacy import may_upgrade
from sessionspec.live.fastpath import implies, rule_ids
from sessionspec.live.fastrecord import stored_event
from sessionspec.live.fasttext import parse_block
from sessionspec.shapes import check_content
from sessionspec.storage import collector_paused, load_from
from sessionspec.storage.chunkrows import CHUNK
from sessionspec.storage.gate import LoadResult
from sessionspec.storage.jsonlread import JsonlReader, Stopped, Surveyed
from sessionspec.storage.storedevents import StoredBlocks, StoredEvents, records_of
from sessionspec.storage.surfacefold import CurrentNodes, SurfaceFold
from sessionspec.storage.survey import survey
from sessionspec.surface import ReplacePlan, plan


class Unvouched(Exception):
    """A record this form does not vouch for: the gate itself decides the log."""


class StoredLoad(SurfaceFold):
    """One JSONL log read as the checker reads it, its blocks kept; the JSONL reader's run taker (`RunTaker`)."""

    def __init__(self, catalog: Catalog) -> None:
        super().__init__()
        self.catalog = catalog
        self.blocks: list[bytes] = []
        self.firsts: array[int] = array("q")
        """The seq of each block's first event: blocks are consumed in order, each whole before the next is read."""
        self._plain = frozenset(catalog.types - SURFACE_TYPES - RETIRED_TYPES - {"", "request/header", END_SEED})
        """The log-only types the survey takes with nothing but the four envelope keys (as the checker's)."""
        self._rows = CHUNK in catalog.types
        self._view = CurrentNodes(self)

    def surveyed(self, chunks: Iterator[bytes | Stopped]) -> Iterator[tuple[bytes | Stopped, Surveyed]]:
        """Each block with its survey, made here; the block is kept, with the seq its first event has."""
        plain, rows, blocks, firsts = self._plain, self._rows, self.blocks, self.firsts
        for chunk in chunks:
            if not isinstance(chunk, bytes):
                yield chunk, None
                continue
            firsts.append(self.next_seq)
            blocks.append(chunk)
            values = parse_block(chunk)
            yield chunk, None if values is None else (len(values), survey(values, plain, rows), values)

    def exact(self, record: Json) -> None:
        """A record no run took, through the reference's functions in the gate's and seeding's order; raises Unvouched."""
        seq = self.next_seq
        raw_seq = record.get("seq") if isinstance(record, dict) else None
        # The gate: the envelope (SESSION-EVENT-ENVELOPE), as `gate_events` reads it.
        event = stored_event(record, raw_seq if type(raw_seq) is int else 0)
        # SESSION-LEGACY-UPGRADE: an event an upgrade could change is the gate's (it reports each upgrade).
        if event.seq != seq or may_upgrade(event.type, event.data):
            raise Unvouched
        # SESSION-UNKNOWN-EVENT-GATE.1, then seeding: the content (SESSION-MESSAGE-SHAPE ...) and the surface.
        if not (self.catalog.knows(event.type) or event.ignorable):
            raise Unvouched
        check_content(event)
        step = plan(self.nodes, self._view, event)
        self.next_seq = seq + 1
        if step is None:
            return
        if isinstance(step, ReplacePlan):
            for node in step.shadowed:
                del self.info[node]
            self.nodes[step.first : step.last + 1] = [seq]
            self.replace_generation += 1
        else:
            self.nodes.append(seq)
        self.info[seq] = (event.type, event.data if event.type == TOOL_RESULT else None)


def turn_open(blocks: list[bytes]) -> bool:
    """Whether the log's last turn bound is a `turn/start` (SESSION-CRASH-REPAIR.1: its turn needs closers).

    Read from the end, a block at a time, by the records' types (no Event is built).
    """
    for block in reversed(blocks):
        for record in reversed(records_of(block)):
            kind = record.get("type")
            if kind == "turn/end":
                return False
            if kind == "turn/start":
                return True
    return False


@implies(reference=load_from, rules=(
    *rule_ids("SESSION-LOSSLESS-TEXT", 1, 6), *rule_ids("SESSION-LOSSLESS-JSON", 1, 6), *rule_ids("SESSION-EVENT-ENVELOPE", 1, 8),
    *rule_ids("SESSION-CORE-EVENTS", 1, 2), *rule_ids("SESSION-SURFACE-PROJECTION", 1, 5),
    *rule_ids("SESSION-SURFACE-PROVENANCE", 1, 6), *rule_ids("SESSION-SURFACE-REPLACE", 1, 4),
    *rule_ids("SESSION-SURFACE-TOOL-RESULT", 1, 3), *rule_ids("SESSION-MESSAGE-SHAPE", 1, 9),
    *rule_ids("SESSION-REQUEST-HEADER", 1, 4), *rule_ids("SESSION-CHUNK-ROWS", 1, 5), "SESSION-CHUNK-ROWS.8",
    *rule_ids("SESSION-LEGACY-UPGRADE", 1, 6), *rule_ids("SESSION-TORN-TAIL", 1, 3), "SESSION-STORAGE-SEQ.1",
    "SESSION-STORAGE-LOAD.2", "SESSION-SEED-ACCEPTANCE.2", "SESSION-SURFACE-FOLD.1", "SESSION-UNKNOWN-EVENT-GATE.1"))
def load_jsonl(name: str, session_id: str | None, catalog: Catalog) -> LoadResult | None:
    """The loaded log, as the gate would load it (`load_from` with the store's seeding), if this form vouches for
    every record of it; else None.

    The header is read by the JSONL reader (the gate's header checks); a refusal of anything
    after it is left to the gate, which reads the log again and names the rule.
    """
    taker = StoredLoad(catalog)
    reader = JsonlReader(Path(name), session_id, runs=taker)
    try:
        with collector_paused():
            for _, record in reader.records():
                taker.exact(record)
    except (SpecViolation, Unvouched):
        reader.close()
        return None
    if reader.torn is not None or turn_open(taker.blocks):
        return None
    events = StoredEvents(StoredBlocks(taker.blocks, taker.firsts, taker.next_seq))
    return LoadResult(name, reader.format, reader.header, events, FrozenList(), None, (), 0, reader.revision)


__all__ = ["StoredLoad", "Unvouched", "load_jsonl", "turn_open"]
