"""The testee: SCP v0 over stdin/stdout for any implementation in `sessionspec.testing.implementations`.

One answer per request line, in order, flushed at once (the runner waits for each); EOF ends it.
Nothing a line contains can end the loop early: a bad line is an answer, not a crash, because
a testee that dies on garbage would make every later vector look like a divergence.
"""

from __future__ import annotations

from typing import BinaryIO

from sessionspec.conformance.protocol import Testee
from sessionspec.testing import implementations as impls


def testee_for(name: str) -> Testee:
    """The protocol over the named implementation (`model`, `live`, `planted:NAME`)."""
    return Testee(name, impls.factory(name))


def serve(testee: Testee, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Answer every line of `stdin` on `stdout` until EOF; returns the number of requests answered."""
    count = 0
    write, flush = stdout.write, stdout.flush
    for raw in stdin:
        line = raw[:-1] if raw.endswith(b"\n") else raw
        if line.endswith(b"\r"):
            line = line[:-1]
        write(testee.answer_line(line) + b"\n")
        flush()
        count += 1
    return count
