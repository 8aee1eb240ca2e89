"""pytest plugin for the lane's pytest stages: the `ci` profile without the shrink phase.

A mutant is killed by the first failing example; shrinking it only makes the report shorter, and
on a mutant that breaks everything it can take minutes. The examples generated are the ci
profile's (derandomized, no database), so a survivor here survives `HYPOTHESIS_PROFILE=ci` too.
Loaded with `-p mutation_profile --hypothesis-profile=mutation` (oracle.py puts this folder on the path).

The machine's persistence rule is off in the lane while the legacy-shape gap is open (REPORT.md,
"The nightly lane, run by hand"): both stores commit a `turn/end` whose reason the load gate's
legacy upgrade refuses, the derandomized ci run draws one, and so the unmutated tree failed the
machine stage and no mutant could be run past it. That leaves out what the rule checks of live
(a saved log loads, and seeds the same surface and messages); the rest of the machine is as in
the suite. Turn it back on (delete the line) when append refuses what the load gate would.
"""

from __future__ import annotations

from hypothesis import Phase, settings
from sessionspec.testing import machine_logs, profiles

profiles.register()
settings.register_profile("mutation", settings(settings.get_profile("ci"), print_blob=False,
                                               phases=[Phase.explicit, Phase.reuse, Phase.generate]))
machine_logs.PERSIST_PER_EXAMPLE = 0
