"""Bounded exhaustive exploration: every sequence of abstract operations up to a depth, TLC style.

Random testing samples the state space; this walks all of it up to a bound. From the empty
session, breadth first, every operation of a small alphabet is applied to the implementation
under test and to the reference model (`sessionspec.model`) side by side, and every distinct
state is checked with the invariants. Because the search is breadth first, the first violation
found is one of the shortest; it comes with the conformance-protocol requests that reproduce it
(`Violation.requests`), which `write_trace` writes as a replayable trace and `to_itf` as an
Informal Trace Format document. proofs/README.md says what is explored, why merging states is
sound, and what it costs.

The modules, in the order a state goes through them:

- `alphabet`: the letters offered in a state, as protocol requests with their x-hooks;
- `sessions`: running a request on a session (hooks armed), outcomes, and copies of a session;
- `oracle`: the reference model's side, its answers remembered by what they read;
- `observation`: a session's views as canonical bytes, and a state's digest;
- `invariants`: what must hold in every distinct state;
- `search`: the breadth-first search (`Explorer`, `explore`), `subtrees`: its deep levels, in
  worker processes when there are several;
- `report`: the state table, violations and the report; `export`: trace file and ITF.
"""

from sessionspec.testing.explore.alphabet import (
    ALPHABETS,
    SESSION_ID,
    Request,
    Step,
    append_request,
    assistant_message,
    default_alphabet,
    letter_key,
    letters,
    log_letters,
    steps,
    surface_letters,
    tool_result,
    user_message,
)
from sessionspec.testing.explore.export import to_itf, to_trace, write_trace
from sessionspec.testing.explore.invariants import INVARIANTS, check_state
from sessionspec.testing.explore.observation import View, events_bytes, observe, state_key
from sessionspec.testing.explore.oracle import Oracle, Reference
from sessionspec.testing.explore.report import Frontier, Report, StateTable, Violation
from sessionspec.testing.explore.search import SPLIT_AT, Explorer, explore
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
    "ALPHABETS", "INVARIANTS", "NESTED_REJECTED", "SESSION_ID", "SPLIT_AT", "Explorer", "Frontier", "NestedAppend",
    "Oracle", "Outcome", "Reference", "Report", "Request", "StateTable", "Step", "View", "Violation", "append",
    "append_request", "assistant_message", "check_state", "clone", "create", "default_alphabet", "events_bytes",
    "explore", "freeze", "letter_key", "letters", "log_letters", "observe", "state_key", "steps", "surface_letters", "thaw_frozen", "to_itf", "to_trace", "tool_result",
    "user_message", "veto", "write_trace",
]
