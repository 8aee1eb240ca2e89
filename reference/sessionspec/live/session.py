"""The incremental Session: what a Python program uses as its session store.

Same API, same rules and the same errors as `sessionspec.model.Session`, which the stateful
machine holds it to, step by step. What differs is the cost: the model refolds the whole log on
every call, this one keeps

- one `SurfaceManager` (the ordered node list), to which each candidate is planned without
  changing it and the validated plan is applied on commit, never validated twice;
- a derived-message cache that projects each new node once and starts over only when
  `replace_generation` changes;
- snapshots of the events, the surface and the transcript, each built once and kept until an
  append changes it, so a returned sequence never changes (decision 5).

An append costs O(its own data), plus O(surface) for a replace; nothing on the append or derive
path reads the log as a whole. The hot path checks with `livecheck`, which hands anything not
plainly valid to the foundation's own checks, so every rejection is the reference's rejection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sessionspec.catalog import REQUEST_HEADER, SURFACE_TYPES
from sessionspec.envelope import Event, Replace
from sessionspec.jsonvalue import FrozenDict, FrozenList, Json
from sessionspec.legacy import check_current
from sessionspec.live.fastpath import check_message, current_holds, event_of, owned, request_parts
from sessionspec.live.surface import DerivedMessages, LivePlan, SurfaceManager
from sessionspec.requestheader import REQUEST_CONTEXT, RequestHeaderFold
from sessionspec.shapes import check_request_header
from sessionspec.surface import Surface
from sessionspec.transaction import Clock, Observer, SessionCore, Validator

_REQUEST_TYPES = frozenset({REQUEST_HEADER, REQUEST_CONTEXT})


class Session(SessionCore):
    """One session: a header, an append-only log, and incrementally maintained views of it.

    Creation, seeding and the append transaction are `SessionCore`'s, shared with the model;
    what is this class's own is the cost: fast forms of the checks and an incremental surface.
    """

    __slots__ = ("_derived", "_events_view", "_requests", "_surface", "_transcript", "_transcript_view")

    def __init__(self, session_id: str, header: FrozenDict, clock: Clock, validators: Sequence[Validator],
                 observers: Sequence[Observer]) -> None:
        super().__init__(session_id, header, clock, validators, observers)
        self._surface = SurfaceManager(self._log)
        self._derived = DerivedMessages(self._log, self._surface)
        self._transcript: list[Event] = []
        self._requests = RequestHeaderFold()
        self._events_view: FrozenList | None = None
        self._transcript_view: FrozenList | None = None

    @classmethod
    def create(
        cls,
        session_id: str,
        seed: Sequence[Event | Json] | None = None,
        header: Json = None,
        *,
        clock: Clock | None = None,
        validators: Sequence[Validator] = (),
        observers: Sequence[Observer] = (),
    ) -> Session:
        """SESSION-SEED-ACCEPTANCE: a new session, fresh or seeded with a prefix to replay."""
        return cls._new(session_id, seed, header, clock, validators, observers)

    # --- reads: each a snapshot kept until the next change -------------------------------------

    @property
    def events(self) -> FrozenList:
        """SESSION-READ-VIEWS.1: the complete log, a snapshot that never changes afterwards."""
        view = self._events_view
        if view is None:
            view = self._events_view = FrozenList(self._log)
        return view

    def complete_log(self) -> FrozenList:
        return self.events

    @property
    def surface(self) -> Surface:
        return self._surface.surface()

    def derive_messages(self) -> FrozenList:
        """SESSION-READ-VIEWS.2: the model view, from the derived-message cache."""
        return self._derived.messages()

    def transcript(self) -> FrozenList:
        """SESSION-READ-VIEWS.3: the append-origin events, kept as they commit."""
        view = self._transcript_view
        if view is None:
            view = self._transcript_view = FrozenList(self._transcript)
        return view

    def request_header(self) -> FrozenDict | None:
        """The canonical form of the latest request/header snapshot, folded as events commit."""
        return self._requests.header

    def request_context(self) -> FrozenDict | None:
        """The latest request/context data, folded as events commit."""
        return self._requests.context

    # --- append: SessionCore's transaction, with the fast forms of its checks ------------------

    def append(
        self,
        type: str,
        data: Json,
        *,
        surface_op: Json | Replace = None,
        source_event_seqs: Json = None,
        ignorable: bool = False,
    ) -> Event:
        """SESSION-APPEND-COMMIT: validate, plan, let validators veto, commit, then notify observers."""
        return self._append(type, data, surface_op, surface_op is not None, source_event_seqs,
                            source_event_seqs is not None, ignorable)

    def append_request(self, request: Mapping[str, Json]) -> Event:
        """An append given as the protocol's request object: {type, data, surfaceOp?, sourceEventSeqs?, ignorable?}."""
        return self._append(*request_parts(request))

    def _owned(self, value: object) -> Json:
        return owned(value)

    def _build(self, event_type: str, seq: int, time: int, data: Json, surface_op: Json, has_op: bool, sources: Json,
               has_sources: bool, ignorable: bool) -> Event:
        return event_of(event_type, seq, time, data, surface_op, has_op, sources, has_sources, ignorable)

    def _check_content(self, event: Event, *, index: int | None = None) -> None:
        if event.type in SURFACE_TYPES:
            check_message(event, index=index)
        elif event.type == REQUEST_HEADER:
            check_request_header(event, index=index)
        if not current_holds(event.type, event.data):
            check_current(event, index=index)

    def _plan(self, event: Event, *, index: int | None = None) -> LivePlan:
        return self._surface.plan(event, index=index)

    def _commit(self, event: Event, step: LivePlan) -> None:
        """Log the event and apply the plan validated for it; invalidate the snapshots it changes."""
        self._surface.commit(event, step)  # first: a plan that does not fit raises before anything changes
        self._log.append(event)
        self._events_view = None
        if type(event.surface_op) is str:  # SESSION-READ-VIEWS.3: append-origin
            self._transcript.append(event)
            self._transcript_view = None
        elif event.type in _REQUEST_TYPES:
            self._requests.feed(event)
