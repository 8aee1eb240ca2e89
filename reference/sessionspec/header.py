"""The session header: spec/02's SESSION-FORMAT-HEADER and the fail-closed format version.

The header is stored beside the log by every backend and read before any event, so it is closed
(a new field is a version bump, decision 8) and its version is checked first: a reader meets a
newer format before it misreads one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from sessionspec.jsonvalue import FrozenDict, Json, is_nonempty_str, is_nonneg_safe_int, snapshot, thaw
from sessionspec.preview import shown
from sessionspec.rules import check

SESSION_FORMAT_VERSION: Final = 0
HEADER_KEYS: Final = (
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "origin",
    "delegationDepth",
    "agentPreset",
)


def default_header(session_id: str, created_at: int) -> FrozenDict:
    """SESSION-FORMAT-HEADER: the header of a session created without one."""
    return validate_header({"version": SESSION_FORMAT_VERSION, "id": session_id, "createdAt": created_at}, session_id)


def validate_header(raw: Json, session_id: str) -> FrozenDict:
    """SESSION-FORMAT-HEADER.1-.11, in order; returns the frozen header."""
    header: FrozenDict = snapshot(raw)  # always a fresh frozen copy: a caller-built FrozenDict may hold mutable parts
    # .1 The header is a JSON record: stored beside the log, read by every backend.
    check(isinstance(header, dict), "SESSION-FORMAT-HEADER.1", "session header is not a JSON object")
    version = header.get("version")
    # .2 Version 0 only: fail closed on any other format, there is no upgrade chain.
    check(type(version) is int and version == SESSION_FORMAT_VERSION, "SESSION-FORMAT-HEADER.2",
          f"session header version must be {SESSION_FORMAT_VERSION}, got {shown(version)}")
    # .3 The header names the session it belongs to.
    check(is_nonempty_str(session_id) and header.get("id") == session_id and type(header.get("id")) is str,
          "SESSION-FORMAT-HEADER.3", f"session header id {shown(header.get('id'))} does not match session id {shown(session_id)}")
    # .4 createdAt is epoch milliseconds.
    check(is_nonneg_safe_int(header.get("createdAt")), "SESSION-FORMAT-HEADER.4",
          "session header createdAt must be a non-negative safe integer")
    if "cwd" in header:
        cwd = header["cwd"]
        # .5 The working directory is absolute (POSIX form on every host, so validity is not platform dependent).
        check(type(cwd) is str and cwd.startswith("/"), "SESSION-FORMAT-HEADER.5",
              f"session header cwd must be an absolute path, got {shown(cwd)}")
    # .6 The parent of a fork is a session id ...
    check("parentSession" not in header or type(header["parentSession"]) is str, "SESSION-FORMAT-HEADER.6",
          "session header parentSession must be a string")
    # .12 ... and an empty one names no session (decision: the upstream checks only that it is a string).
    check(header.get("parentSession") != "", "SESSION-FORMAT-HEADER.12", "session header parentSession must not be empty")
    # .7 seedLength counts the inherited prefix.
    check("seedLength" not in header or is_nonneg_safe_int(header["seedLength"]), "SESSION-FORMAT-HEADER.7",
          "session header seedLength must be a non-negative safe integer")
    # .8 The only origin is a subagent.
    check("origin" not in header or (header["origin"] == "subagent" and type(header["origin"]) is str),
          "SESSION-FORMAT-HEADER.8", 'session header origin must be "subagent"')
    # .9 delegationDepth keeps a resumed subagent from passing as top level.
    check("delegationDepth" not in header or is_nonneg_safe_int(header["delegationDepth"]), "SESSION-FORMAT-HEADER.9",
          "session header delegationDepth must be a non-negative safe integer")
    # .10 agentPreset names the preset a resume must restore.
    check("agentPreset" not in header or type(header["agentPreset"]) is str, "SESSION-FORMAT-HEADER.10",
          "session header agentPreset must be a string")
    # .11 The header is closed: a new field is a version bump (decision 8).
    extra = sorted(set(header) - set(HEADER_KEYS))
    check(not extra, "SESSION-FORMAT-HEADER.11", f"session header has unknown keys {shown(extra)}")
    return header


def header_to_json(header: Mapping[str, Json]) -> dict[str, Json]:
    """The plain header in the canonical key order."""
    return {key: thaw(header[key]) for key in HEADER_KEYS if key in header}


__all__ = ["HEADER_KEYS", "SESSION_FORMAT_VERSION", "default_header", "header_to_json", "validate_header"]
