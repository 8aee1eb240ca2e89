"""SCP v0, the sessionspec conformance protocol, and nothing else (spec/10-conformance.md).

The request and answer shapes (`protocol`), the one op executor (`executor`), the testee loop
(`serve`), the runner's side of the pipe (`client`), the reference as the runner runs it
(`oracle`), answer comparison (`compare`, `divergence`, `exchange`), the trace format (`trace`)
and the immutability checks (`immutability`). It stands on the spec modules and `live` (the one
line reader, `live.fasttext`) and on nothing above: the machines (`testing/`) and the runner
(`conformance/`) stand on it; which implementation a testee serves is chosen above it (`cli`).
"""
