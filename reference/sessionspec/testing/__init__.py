"""Hypothesis strategies, the stateful machine, settings profiles and planted bugs.

Public so that implementers of the session model can reuse them: `strategies` for operations
valid and invalid, `machine.make_machine(factory)` for the model-versus-implementation machine,
`profiles` for the settings profiles, `trace` for operation traces and their replay, `planted`
for the oracle's self-test. Importing this package imports none of them (and not Hypothesis).
"""
