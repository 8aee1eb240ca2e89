"""The chapter tests have teeth: every planted bug of `live` fails a chapter test run against it.

The chapter tests run against each implementation through the `create` fixture (conftest.py). A
chapter test that quietly went back to building `model` sessions would pass any broken `live`;
here each planted bug (sessionspec.testing.planted) is held to a chapter test that catches it, and
the correct `live` to passing that same test. A new planted bug names the chapter test that
catches it (and if none does, that chapter is missing a test).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import test_01_json
import test_02_envelope
import test_03_surface
import test_04_append
import test_05_seed
import test_06_views
from sessionspec.testing import implementations as impls
from sessionspec.testing.builders import tool_result, with_change
from sessionspec.testing.planted import PLANTED

ChapterTest = Callable[[impls.SessionFactory], None]


def _rewrite_changing_turn(create: impls.SessionFactory) -> None:
    test_03_surface.test_a_tool_result_rewrite_may_change_only_the_inner_content(
        create, with_change(tool_result(), ["turn"], 2))


def _every_shape_case(create: impls.SessionFactory) -> None:
    for event_type, data, rule in test_02_envelope.SHAPE_CASES:
        test_02_envelope.test_message_shapes_are_checked_on_append_and_seed(create, event_type, data, rule)


def _every_bad_ignorable(create: impls.SessionFactory) -> None:
    for bad in (False, "yes", 1, None):
        test_02_envelope.test_ignorable_is_absent_or_exactly_true(create, bad)


def _a_negative_source(create: impls.SessionFactory) -> None:
    test_03_surface.test_sources_are_non_negative_safe_integers(create, -1)


def _every_bad_leaf(create: impls.SessionFactory) -> None:
    for param in test_01_json.BAD_LEAVES:
        bad, rule = param.values
        test_01_json.test_a_session_rejects_what_snapshot_rejects_wherever_it_sits(create, bad, rule)


CAUGHT_BY: dict[str, ChapterTest] = {
    "stale-derived-cache": test_06_views.test_derived_messages_follow_every_append_and_replace,
    "off-by-one-splice": test_03_surface.test_splice_keeps_the_surrounding_order,
    "provenance-unchecked": test_03_surface.test_a_replacement_names_every_node_it_shadows,
    "plan-for-another-event": test_04_append.test_a_veto_of_a_replace_leaves_surface_generation_and_messages,
    "events-snapshot-not-invalidated": test_03_surface.test_replace_generation_counts_committed_replacements,
    "double-marker": test_05_seed.test_reopening_is_idempotent,
    "tool-result-rewrite-compares-only-id": _rewrite_changing_turn,
    "no-reentrancy-guard": test_04_append.test_an_append_from_an_observer_is_rejected_and_recorded,
    "mutable-messages": test_01_json.test_events_messages_and_returned_lists_are_immutable,
    "ignorable-dropped": test_04_append.test_ignorable_only_on_log_only_events,
    "stale-surface-view": test_03_surface.test_ranges_are_positional_not_numeric,
    "message-id-type-unchecked": _every_shape_case,
    "role-compared-by-order": _every_shape_case,
    "tool-result-block-count-unchecked": _every_shape_case,
    "ignorable-truthy": _every_bad_ignorable,
    "negative-sources-accepted": _a_negative_source,
    "unsafe-integers-accepted": _every_bad_leaf,
    "negative-zero-accepted": _every_bad_leaf,
    "non-json-crashes": _every_bad_leaf,
    "top-level-data-not-copied": test_01_json.test_caller_mutation_after_append_changes_nothing,
}
"""Planted bug -> a chapter test (taking `create`) that fails on it."""


def test_every_planted_bug_names_a_chapter_test_that_catches_it() -> None:
    assert sorted(CAUGHT_BY) == sorted(PLANTED)


@pytest.mark.parametrize("name", sorted(CAUGHT_BY))
def test_a_planted_bug_fails_its_chapter_test_and_live_passes_it(name: str) -> None:
    chapter_test = CAUGHT_BY[name]
    chapter_test(impls.factory("live"))
    with pytest.raises((Exception, pytest.fail.Exception)):
        chapter_test(impls.factory(f"planted:{name}"))
