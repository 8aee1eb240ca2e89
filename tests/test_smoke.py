"""The README's main job runs, and its session is the one the spec describes."""

from sessionspec.cli.demo import example_session


def test_demo_session_has_a_compaction_and_a_pruning() -> None:
    session = example_session("model")
    assert session.surface.replace_generation == 2
    assert len(session.derive_messages()) == 1
    assert [e.seq for e in session.transcript()] == [1, 4, 6]
