"""Conformance levels: which rules the seeds state, and which this spec decided (spec/README.md, "Levels").

**Required**: the seeds (`seeds/`, cited by file and section) state the rule, or the upstream
implementation the seeds describe behaves so where the seeds are silent (notes, cited), or breaking
it makes an implementation refuse, on load or seed, a log it wrote itself (the load path named).
**Recommended**: this spec decided more than the seeds and the upstream (DESIGN's numbered
decisions and the hardening each rule's prose gives), with the reason it is a good decision.

A rule may be required where a seed is read and recommended where an append is made: the seeds
have seeds and loads check message shapes and request headers, and describe an append without a
payload schema as a trade-off (seed 004 §13); checking them on append too is decision 1. So each
ground may carry the level of an append that breaks it (`on_append`).

Like the protobuf conformance suite's REQUIRED and RECOMMENDED tests: a report separates the
two, and a runner can enforce the required level alone (`sessionspec conform --level required`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class Level(StrEnum):
    REQUIRED = "required"
    RECOMMENDED = "recommended"


R, REC = Level.REQUIRED, Level.RECOMMENDED


@dataclass(frozen=True, slots=True)
class Ground:
    """A rule's level and why: the seed sentence, the upstream's behaviour, or the decision and its reason."""

    level: Level
    why: str
    on_append: Level | None = None
    """The level where an append breaks the rule, when it differs from `level` (`why` then says both)."""

    def at(self, op: object) -> Level:
        """The level of the rule for a request of `op` (an append, or anything else: a create, fold, repair)."""
        return self.on_append if self.on_append is not None and isinstance(op, str) and op in APPEND_OPS else self.level


APPEND_OPS: Final = frozenset({"append", "x-append"})
LOG_OPS: Final = frozenset({"fold", "repair"})
"""The protocol's ops that take a log given whole: it reads their events as seed entries (SESSION-CONFORMANCE-PROTOCOL.5),
which is the protocol's decision: the upstream's foldSurface and interruptedTurnClosers take events already accepted
and check none of them but the surface transitions foldSurface makes."""
FOLDED: Final = ("SESSION-SURFACE-", "SESSION-SEED-ACCEPTANCE.2")
"""What foldSurface itself checks of the events it folds (notes §2.G, R18): the surface rules and contiguity."""


def level_of(rule_id: str, ground: Ground, op: object) -> Level:
    """The level of `rule_id` broken by a request of `op`: `ground.at(op)`, except that a log given to fold or repair
    is held to the seeds' rules only where the upstream's fold holds it (FOLDED); the rest is recommended (LOG_OPS)."""
    if isinstance(op, str) and op in LOG_OPS:
        return ground.level if op == "fold" and rule_id.startswith(FOLDED) else REC
    return ground.at(op)
DECISION_1: Final = ("decision 1: append checks what a seed checks, so every log it builds seeds again (seed 004 §13 "
                     "calls append's missing payload schema a trade-off; the upstream's own seed refuses such a log)")

FAMILIES: dict[str, Ground] = {
    "SESSION-LOSSLESS-JSON": Ground(R, "seed 004 §4: data is lossless JSON; null, booleans, strings and finite "
                                       "numbers, dense plain arrays and plain objects; -0, NaN, Infinity, cycles, "
                                       "symbol keys and class instances are refused; depth is bounded by memory"),
    "SESSION-LOSSLESS-TEXT": Ground(R, "RFC 8259 (JSON text is UTF-8, one value, no NaN or Infinity) read as seed "
                                       "004 §4 asks: a text whose value is not lossless JSON (-0, a number that "
                                       "overflows to Infinity) is refused, never repaired"),
    "SESSION-IMMUTABILITY": Ground(R, "seed 004 §4: events and nested messages are deep-frozen on acceptance; §5: "
                                      "the caller's later mutation is irrelevant; §8: a returned array never grows"),
    "SESSION-EVENT-ENVELOPE": Ground(R, "seed 004 §2: an event is {type, seq, time, data} plus only surfaceOp, "
                                        "sourceEventSeqs and ignorable: true; seq counts from 0 without holes; "
                                        "extra keys are refused on seed and load"),
    "SESSION-FORMAT-HEADER": Ground(R, "seed 004 §1 (the header's fields) and §11 (version 0, fail-closed); the "
                                       "upstream's header validation, in its order (notes §1.3)"),
    "SESSION-CORE-EVENTS": Ground(R, "seed 004 §11: version 0 is fail-closed with no upgrade chain, so retired "
                                     "types are refused (the upstream's append, seed and reader: notes §1.7)"),
    "SESSION-MESSAGE-SHAPE": Ground(R, "seed 004 §13: the always-on root deeply validates the three message types "
                                       "(on seed and load: notes §1.5); on append, " + DECISION_1, on_append=REC),
    "SESSION-REQUEST-HEADER": Ground(R, "seed 004 §12: the always-on root checks the request header's shape (on "
                                        "seed and load: notes §2.L); on append, " + DECISION_1, on_append=REC),
    "SESSION-SURFACE-PROJECTION": Ground(R, "seed 004 §2 and §6: only user/message, assistant/message and tool/result "
                                            "carry surface metadata; seed 000, Invariants: every surface-eligible "
                                            "event carries a surfaceOp; seed 000, SurfaceOp: 'append' or "
                                            "{op: 'replace', start, end}; seed 004 §8: the projection"),
    "SESSION-SURFACE-PROVENANCE": Ground(R, "seed 004 §7: a source list, when present, is dense, without duplicates, "
                                            "of non-negative safe integers strictly earlier than the event, and a "
                                            "replacement's covers every shadowed node; seed 000: [] only on "
                                            "assistant/message"),
    "SESSION-SURFACE-REPLACE": Ground(R, "seed 000, Replace: both ends are on the current surface, the range is "
                                         "removed and the new seq inserted in its place; seed 004 §6: ends on the "
                                         "surface and in order; §8: the replace generation"),
    "SESSION-SURFACE-TOOL-RESULT": Ground(R, "seed 000, Consequences: a tool/result replacement rewrites exactly one "
                                             "current tool/result and keeps every data field but content; seed 004 §6"),
    "SESSION-SURFACE-FOLD": Ground(R, "seed 004 §2: seq is the only order, contiguous from 0"),
    "SESSION-APPEND-COMMIT": Ground(R, "seed 004 §5: the two-phase append: seq = log.length and the wall time, "
                                       "precommit veto before any change, commit, contained observers, reentrant "
                                       "appends refused"),
    "SESSION-SEED-ACCEPTANCE": Ground(R, "seed 004 §10: every seed event is validated like an append plus envelope "
                                         "and contiguous seqs; first_live_seq is the seed length; one marker ends "
                                         "the seed"),
    "SESSION-READ-VIEWS": Ground(R, "seed 004 §9: the complete log, the model surface and the append-origin "
                                    "transcript"),
    "SESSION-DERIVED-CACHE": Ground(R, "seed 004 §8: derived messages always equal a from-scratch replay"),
    "SESSION-STORAGE-HEADER": Ground(R, "the upstream's stored header (seed 000, Persistence; notes §4.2): a log the "
                                        "harness writes must open here, and one written here in the harness"),
    "SESSION-FORMAT-VERSION": Ground(R, "seed 004 §11: a version that differs is refused, with no upgrade chain"),
    "SESSION-STORAGE-SEQ": Ground(R, "seed 004 §2: stored seqs continue from 0 without holes"),
    "SESSION-STORAGE-RECORD": Ground(REC, "decision: what a stored log costs a reader is bounded by its size; the "
                                          "upstream reads any record and any path (notes §4.2)"),
    "SESSION-CHUNK-ROWS": Ground(R, "the upstream's packed-row codec (notes §4.4): a log the harness packs must "
                                    "expand here to the same events"),
    "SESSION-SQLITE-SCHEMA": Ground(R, "the upstream's SQLite identity and schema (notes §4.3); seed 000, "
                                       "Persistence: a database of another build is refused, not migrated"),
    "SESSION-SQLITE-ROW": Ground(R, "the upstream's SQLite row codec (notes §4.3)"),
    "SESSION-SQLITE-READ": Ground(REC, "decision: a read-only command leaves the directory as it was (a checker is "
                                      "run over other people's files); the upstream reads through its store, which "
                                      "opens the database to write"),
    "SESSION-TORN-TAIL": Ground(R, "the upstream's torn-tail scan (notes §4.3 scanRows): a defect followed by a "
                                   "committed turn/end is corruption, else a torn tail"),
    "SESSION-LEGACY-UPGRADE": Ground(R, "the upstream's legacy import (notes §4.5): a log an older harness wrote "
                                        "loads as it loads there"),
    "SESSION-UNKNOWN-EVENT-GATE": Ground(R, "seed 004 §11: an unknown required event is refused; an ignorable one "
                                            "is kept"),
    "SESSION-STORAGE-LOAD": Ground(R, "seed 004 §10 (the marker is the constructor's, not the log's) and seed 000, "
                                      "Crash recovery (closers for orphaned calls)"),
    "SESSION-STORAGE-WRITE": Ground(REC, "decision: an acknowledged batch survives a crash and a repair commits "
                                         "only what it planned and verified; seed 004 §13 leaves durability to the "
                                         "store's flush barrier"),
    "SESSION-ZSTD-FRAMES": Ground(R, "the upstream's zstd-framed JSONL (notes §4.2)"),
    "SESSION-STORAGE-LAYOUT": Ground(R, "the upstream's encodeSegment and projectKey (notes §4.2)"),
    "SESSION-CRASH-REPAIR": Ground(R, "seed 000, Crash recovery: repair synthesizes surface-aware tool/result "
                                      "closers for orphaned calls, citing them; the upstream's repair.ts (notes §2.Q)"),
    "SESSION-FORK": Ground(R, "seed 004 §10 (fork replays a seed prefix) and the upstream's fork (notes §5.16)"),
    "SESSION-REQUEST-HEADER-FOLD": Ground(R, "the upstream's canonicalHeader, headerEquals and foldRequestHeader "
                                             "(notes §2.N)"),
    "SESSION-RELATIONAL-INVARIANT": Ground(R, "seed 004 §12: the optional invariant companion: turns from 1 and not "
                                              "overlapping, steps from 1 within a turn and closed, execution events "
                                              "in the current step, calls and results paired"),
    "SESSION-INVARIANT-COMMIT": Ground(R, "seed 004 §12: the companion stages its transition in precommit dispatch "
                                          "and applies it only when the event commits"),
    "SESSION-PROVIDER-VALIDITY": Ground(REC, "decision: findings of what a strict provider refuses (a call without "
                                             "its result); the seeds define no such rule"),
    "SESSION-CONFORMANCE-PROTOCOL": Ground(R, "the protocol's contract (spec/10): a testee that breaks it cannot be "
                                              "compared with the reference at all"),
    "SESSION-CONFORMANCE-STORAGE": Ground(R, "the protocol's storage capability (spec/10): a log one implementation "
                                             "writes must load to the same events in every other, which holds only "
                                             "when each reads and writes as the reference does"),
}
"""Each family's ground; RULES below refine single rules."""

RULES: dict[str, Ground] = {
    "SESSION-LOSSLESS-JSON.2": Ground(REC, "decision 4: integers within +-(2**53-1), so every implementation reads "
                                           "one value; seed 004 §4 accepts any finite number (the upstream takes "
                                           "2**60)"),
    "SESSION-LOSSLESS-JSON.8": Ground(REC, "decision 4: the value domain keeps integers and floats apart, as readers "
                                           "in Python, Go and Rust do; JavaScript reads 1.0 and 1 as one number, so "
                                           "the upstream cannot tell them apart, and a rejection resting on that "
                                           "spelling alone is this spec's"),
    "SESSION-LOSSLESS-TEXT.4": Ground(REC, "decision 4: an integer text beyond +-(2**53-1) is refused, because a "
                                           "JavaScript reader rounds it to another integer; the upstream reads text "
                                           "with JSON.parse, which rounds"),
    "SESSION-LOSSLESS-TEXT.6": Ground(REC, "decision: RFC 8259 §4 leaves a name given twice to the reader "
                                           "(JSON.parse keeps the last, others the first), so it is refused and "
                                           "every reader reads one value"),
    "SESSION-IMMUTABILITY.2": Ground(REC, "decision 5: frozen Python values compare equal to their plain JSON form "
                                          "and thaw back to it (a Python API's choice)"),
    "SESSION-EVENT-ENVELOPE.1": Ground(R, "seed 004 §2: extra envelope keys are refused on seed and load; on "
                                          "append (a request key the append does not know), decision 1: the "
                                          "upstream drops unknown intent keys (notes §1.2)", on_append=REC),
    "SESSION-EVENT-ENVELOPE.2": Ground(R, "seed 004 §2: the envelope is a union discriminated by its string type; "
                                          "an append that logs a type that is not a string writes a log the "
                                          "upstream's own loader refuses (its envelope check, notes §2.L step 2)"),
    "SESSION-EVENT-ENVELOPE.6": Ground(R, "seed 004 §2: ignorable is absent or exactly true; on append, decision 3 "
                                          "(append accepts ignorable=True; the seeds (004 §13) note that the "
                                          "upstream's append cannot write it at all and drops it)", on_append=REC),
    "SESSION-EVENT-ENVELOPE.7": Ground(REC, "decision: only a log-only event may be ignorable: losing an ignorable "
                                            "event must not change the rebuild (seed 004 §11), and losing a surface "
                                            "event always does; the upstream accepts it"),
    "SESSION-EVENT-ENVELOPE.8": Ground(REC, "decision: an empty type names no event; the upstream core accepts "
                                            "\"\" (notes §5.10) while its JSONL path refuses an empty segment"),
    "SESSION-CRASH-REPAIR.8": Ground(R, "the upstream's repair.ts (notes §2.Q): its scan holds `openTurn = data.turn` "
                                        "and closes nothing when that is `null`; seed 000, Crash recovery"),
    "SESSION-FORMAT-HEADER.3": Ground(R, "seed 004 §1: the header's id is the session's id (the upstream's header "
                                         "validation, notes §1.3); the empty id, which the upstream's Session "
                                         "accepts, is one its own JSONL and zstd stores cannot persist (encodeSegment "
                                         "throws: notes §4.2 and §6 item 10)"),
    "SESSION-FORMAT-HEADER.11": Ground(REC, "decision 8: the header is closed, a new field is a version bump; the "
                                            "upstream keeps unknown keys on create and drops them in the store, so "
                                            "a header round-trips differently by path (notes §5.4)"),
    "SESSION-FORMAT-HEADER.12": Ground(REC, "decision: an empty parentSession names no parent; the upstream checks "
                                            "only that it is a string"),
    "SESSION-CORE-EVENTS.1": Ground(REC, "decision: the marker carries exactly {}; the upstream types its data as an "
                                         "empty record and does not check it (notes §1.6)"),
    "SESSION-MESSAGE-SHAPE.9": Ground(R, "seed 004 §8: derivation projects each node to its message (user/message: "
                                         "the data; assistant/message and tool/result: data.message); an append "
                                         "without an object there makes the upstream's deriveMessages throw at every "
                                         "later call or silently drop the result (notes §2.C)"),
    "SESSION-REQUEST-HEADER.4": Ground(R, "seed 004 §11: fail-closed, no upgrade chain: the retired reason "
                                          "'fallback' is refused by the upstream's append and seed alike (notes "
                                          "§2.C step 3, §2.L step 5)"),
    "SESSION-APPEND-COMMIT.5": Ground(R, "seed 004 §13: the constructor is the only legitimate writer of "
                                         "session/end-seed; a plugin appending one reclassifies earlier live "
                                         "brackets as seed history"),
    "SESSION-APPEND-COMMIT.6": Ground(REC, DECISION_1),
    "SESSION-APPEND-COMMIT.7": Ground(REC, "decision: the seeds fix no order between an append's checks; spec/04's "
                                           "order makes the kind of a rejection comparable, so a request that breaks "
                                           "two rules is reported by the first (the upstream's order differs in two "
                                           "places, notes §2.C)"),
    "SESSION-SEED-ACCEPTANCE.5": Ground(REC, "decision: the seeds fix no order between a create's checks; spec/05's "
                                             "order (the session id, the header, then each seed entry in turn) makes "
                                             "the kind of a rejection comparable (the upstream checks the seed "
                                             "before the header in snapshot mode: notes §5.13)"),
    "SESSION-CONFORMANCE-PROTOCOL.8": Ground(REC, "decision: the seeds fix no order between the checks of a fold or "
                                                  "a repair; spec/10's order (an x- key the op does not take, the "
                                                  "request's shape, then its events as seed entries) makes the kind of "
                                                  "a rejection comparable"),
    "SESSION-CONFORMANCE-STORAGE.3": Ground(REC, "decision: SESSION-STORAGE-WRITE.2 across the process boundary: an "
                                                 "append answered ok and then lost to a crash is data loss no reader "
                                                 "can detect"),
    "SESSION-LEGACY-UPGRADE.5": Ground(REC, "decision: every upgrade a load applies is reported, so a reader knows "
                                            "what it did not read verbatim"),
    "SESSION-LEGACY-UPGRADE.6": Ground(REC, "decision 1 extended: append and seed refuse what a load would upgrade "
                                            "or refuse, so a log never changes on its way through storage"),
    "SESSION-CHUNK-ROWS.7": Ground(R, "self-refusal: the upstream writes an event of a row tag verbatim and its own "
                                      "reader then refuses the log (notes §4.4 decode)"),
    "SESSION-CHUNK-ROWS.8": Ground(REC, "decision: a row of more members than the bound would cost a reader far more "
                                        "than its size; the upstream's core codec has no bound (notes §5.21)"),
    "SESSION-SQLITE-ROW.4": Ground(REC, "decision: a database SQLite reports damaged is refused where the damage is "
                                        "met and is never read as a torn tail (nothing proves a writer stopped)"),
    "SESSION-STORAGE-WRITE.4": Ground(R, "the upstream's repair re-scans under the write lock and refuses a stale "
                                         "marker (notes §4.3)"),
    "SESSION-STORAGE-RECORD.4": Ground(REC, "decision: a log that changes under a reader is refused where that is "
                                            "found and never cut as a torn tail; the upstream reads a file whole, once, "
                                            "and lets a driver's error escape"),
    "SESSION-SQLITE-SCHEMA.5": Ground(REC, "decision: a trigger, view or index the format does not define would run "
                                           "code on a write or change what a read returns; the upstream compares its "
                                           "tables' DDL and nothing else (notes §4.3)"),
    "SESSION-ZSTD-FRAMES.5": Ground(REC, "decision: what a frame decodes to is bounded, so a small file cannot cost "
                                         "a reader gigabytes"),
}
"""Single rules whose ground differs from their family's."""


def ground_of(rule_id: str) -> Ground:
    """The ground of `rule_id`: its own, else its family's; KeyError when neither is written down."""
    own = RULES.get(rule_id)
    if own is not None:
        return own
    return FAMILIES[rule_id.rsplit(".", 1)[0]]
