#!/usr/bin/env bash
# The sessionspec conformance step, for any CI: the composite action (action.yml) runs this script, and any
# other CI can run it as it is. Everything comes from the environment, so a CI's own variables carry it:
#
#   SESSIONSPEC_TESTEE     the testee command line, run by bash (required): "node my-testee.js"
#   SESSIONSPEC_FAILURES   the failure list (optional; a file that does not exist is exit 2, as conform says)
#   SESSIONSPEC_BASELINE   a previous --json report: only what it lacks fails (optional; a missing file is no baseline)
#   SESSIONSPEC_LEVEL      required or recommended (default recommended)
#   SESSIONSPEC_JSON, SESSIONSPEC_JUNIT, SESSIONSPEC_MARKDOWN   where the reports go (optional)
#   SESSIONSPEC_SMOKE      "false" skips the adapter's smoke check first (default: it runs, and stops the step on a finding)
#   SESSIONSPEC_ARGS       more conform options, as words (optional): "--examples 50 --verify 2"
#   SESSIONSPEC_INSTALL    what to pip install first (optional; empty: sessionspec is installed already)
#   SESSIONSPEC_PYTHON     the interpreter sessionspec is installed in (default: python3)
#
# Exit: the conform run's (0 no unexpected failure, 1 unexpected failures, 2 cannot run); a smoke finding is 1.
set -euo pipefail

python="${SESSIONSPEC_PYTHON:-python3}"
if [ -z "${SESSIONSPEC_TESTEE:-}" ]; then
    echo "sessionspec-action: set SESSIONSPEC_TESTEE (the action's testee input) to the testee's command" >&2
    exit 2
fi
if [ -n "${SESSIONSPEC_INSTALL:-}" ]; then
    "$python" -m pip install --quiet "$SESSIONSPEC_INSTALL"
fi
# The testee as one word list: bash runs the command line as written (quotes, variables), exec keeps its signals.
testee=(bash -c "exec $SESSIONSPEC_TESTEE")

if [ "${SESSIONSPEC_SMOKE:-true}" != "false" ]; then
    "$python" -m sessionspec.cli conform --smoke -- "${testee[@]}"
fi

options=(--level "${SESSIONSPEC_LEVEL:-recommended}")
[ -n "${SESSIONSPEC_FAILURES:-}" ] && options+=(--failures "$SESSIONSPEC_FAILURES")
if [ -n "${SESSIONSPEC_BASELINE:-}" ]; then
    if [ -f "$SESSIONSPEC_BASELINE" ]; then
        options+=(--baseline "$SESSIONSPEC_BASELINE")
    else
        echo "sessionspec-action: no baseline at $SESSIONSPEC_BASELINE yet: every failure counts" >&2
    fi
fi
[ -n "${SESSIONSPEC_JSON:-}" ] && options+=(--json "$SESSIONSPEC_JSON")
[ -n "${SESSIONSPEC_JUNIT:-}" ] && options+=(--junit "$SESSIONSPEC_JUNIT")
[ -n "${SESSIONSPEC_MARKDOWN:-}" ] && options+=(--markdown "$SESSIONSPEC_MARKDOWN")
if [ -n "${SESSIONSPEC_ARGS:-}" ]; then
    read -r -a extra <<< "$SESSIONSPEC_ARGS"
    options+=("${extra[@]}")
fi
exec "$python" -m sessionspec.cli conform "${options[@]}" -- "${testee[@]}"
