"""Hypothesis settings profiles: `dev` by default; `--hypothesis-profile` or HYPOTHESIS_PROFILE choose another.

The profiles live in `sessionspec.testing.profiles` so the conformance runner loads the same ones.
Hypothesis's pytest plugin applies `--hypothesis-profile` after this module has registered them.
"""

from sessionspec.testing import profiles

profiles.load()
