"""pytest plugin for the lane's pytest stages: the `ci` profile without the shrink phase.

A mutant is killed by the first failing example; shrinking it only makes the report shorter, and
on a mutant that breaks everything it can take minutes. The examples generated are the ci
profile's (derandomized, no database), so a survivor here survives `HYPOTHESIS_PROFILE=ci` too.
Loaded with `-p mutation_profile --hypothesis-profile=mutation` (oracle.py puts this folder on the path).
"""

from __future__ import annotations

from hypothesis import Phase, settings
from sessionspec.testing import profiles

profiles.register()
settings.register_profile("mutation", settings(settings.get_profile("ci"), print_blob=False,
                                               phases=[Phase.explicit, Phase.reuse, Phase.generate]))
