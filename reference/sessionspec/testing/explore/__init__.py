"""Bounded exhaustive exploration: every sequence of abstract operations up to a depth, TLC style.

Random testing samples the state space; this walks all of it up to a bound. From the empty
session, breadth first, every operation of a small alphabet is applied to the implementation
under test and to the reference model (`sessionspec.model`) side by side:

- append of each surface type (user, assistant, tool result) and of two log-only events (one ignorable);
- replace over every ordered (start, end) pair of the current surface, with full provenance and
  with incomplete provenance (so both the accepted and the rejected branch of every range);
- tool-result rewrites of each tool result on the surface, one that changes only the inner
  content and one that forges the message id;
- an append that the sessions' one precommit validator vetoes (see `veto`);
- reseed (a new session seeded with the current log) and repair (append the crash closers).

Both sides must accept or reject each operation alike, with the same rule, and a rejection must
leave the implementation exactly as it was. Every distinct state (deduplicated by a canonical
hash of the model's log and the implementation's observable views) is checked with the
invariants below. Because the search is breadth first, the first violation found is one of the
shortest, and it is reported as a replayable trace of protocol requests and, optionally, as an
Informal Trace Format file for TLA+ and Quint tooling.

What the search costs, and why it is built as it is (measurements in proofs/README.md):

- Nearly every accepted sequence is its own state: the log records order, so two letters that
  commute on the surface still make two logs. The state space is a tree of about 10 children per
  state for the full alphabet; there is no sound merging of its nodes short of forgetting part of
  the log, which the invariants read. Depth 7 of the full alphabet is about 3.8 million states.
  The `compact` alphabet (`ALPHABETS`) is the smaller one for depth 7: it is a bound on the
  alphabet (a TLC state constraint), not a reduction, and says so in every report.
- A frontier state is a recipe, not a live object: the model's log as a tuple of interned events
  and the implementation's seed and appends as a tuple of interned requests. Expanding it
  rebuilds the model from its log (a list copy) and the implementation by one replay, which is
  pickled (`freeze`); every step then runs on a fresh unpickling, a third of a replay's cost and
  a small fraction of a re-seed's. Done states keep only a parent index and a step label
  (`StateTable`); the visited set holds 16-byte digests.
- Views are compared as canonical JSON bytes made by orjson straight from the frozen values (no
  thaw), and the model's are computed from one fold, only for a state not seen before.
- The model runs without its contracts (`model_append`): they check the model against itself,
  which its own tests do, and they were a third of the model's cost per append.
- Two invariants moved from states to transitions, where they cost nothing extra: the reentrancy
  guard is probed by an observer on every session (`NestedAppend`) after every accepted append,
  and `fresh-rebuild-agrees` is the reseed letter's check (a session seeded with a state's log
  shows that state's surface and messages). A state at the last depth has no successors, so it
  is not re-seeded, as no other letter is applied to it.
"""

from sessionspec.testing.explore.alphabet import (
    ALPHABETS,
    SESSION_ID,
    Request,
    Step,
    append_request,
    assistant_message,
    default_alphabet,
    steps,
    tool_result,
    user_message,
)
from sessionspec.testing.explore.invariants import INVARIANTS, check_state
from sessionspec.testing.explore.itf import to_itf
from sessionspec.testing.explore.observation import View, events_bytes, observe, state_key
from sessionspec.testing.explore.report import Frontier, Report, StateTable, Violation
from sessionspec.testing.explore.search import Explorer, explore
from sessionspec.testing.explore.sessions import (
    NESTED_REJECTED,
    NestedAppend,
    Outcome,
    append,
    clone,
    create,
    freeze,
    thaw_frozen,
    veto,
)

__all__ = [
    "ALPHABETS", "INVARIANTS", "NESTED_REJECTED", "SESSION_ID", "Explorer", "Frontier", "NestedAppend", "Outcome",
    "Report", "Request", "StateTable", "Step", "View", "Violation", "append", "append_request", "assistant_message",
    "check_state", "clone", "create", "default_alphabet", "events_bytes", "explore", "freeze", "observe", "state_key",
    "steps", "thaw_frozen", "to_itf", "tool_result", "user_message", "veto",
]

