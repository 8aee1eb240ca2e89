"""The testee loop: SCP v0 over stdin/stdout for an executor over any implementation (the caller chooses which).

Exactly one answer per request line, in order, flushed at once; EOF ends it. Nothing a line
holds can end the loop early or go unanswered: a line that is not JSON, nested 100,000 deep, over
the line bound (SESSION-CONFORMANCE-PROTOCOL.7) or that crashes the implementation is an answer,
because a testee that dies on garbage would make every later request look like a divergence.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO, Final

from sessionspec.errors import Kind, SpecViolation
from sessionspec.wire.executor import Executor
from sessionspec.wire.protocol import LINE_BOUND, MAX_LINE_BYTES, dumps, error_answer, line_error, loads

OVERLONG: Final = b"\x00overlong"
"""What `lines` yields for a line over the bound: its bytes were read and dropped, never held."""


def answer_line(executor: Executor, line: bytes) -> bytes:
    """The answer to one request line, as a line (without its newline); never raises."""
    try:
        try:
            request = loads(line)
        except SpecViolation as violation:
            return dumps(line_error(violation))
        return dumps(executor.run(request))
    except Exception as error:  # an answer that will not encode, or memory for a value: still one answer
        return dumps(error_answer(error))


def lines(stream: BinaryIO, bound: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """The request lines of `stream` without their terminators; an over-long one as OVERLONG, read in bounded pieces."""
    while True:
        line = stream.readline(bound + 1)
        if not line:
            return
        if len(line) > bound and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stream.readline(1 << 20)
            yield OVERLONG
            continue
        line = line[:-1] if line.endswith(b"\n") else line
        yield line[:-1] if line.endswith(b"\r") else line


def serve(executor: Executor, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Answer every line of `stdin` on `stdout` until EOF; returns the number of requests answered."""
    count = 0
    write, flush = stdout.write, stdout.flush
    for line in lines(stdin):
        if line is OVERLONG:
            refusal = SpecViolation(LINE_BOUND, Kind.JSON, f"request line over {MAX_LINE_BYTES:,} bytes")
            write(dumps(line_error(refusal)) + b"\n")
        else:
            write(answer_line(executor, line) + b"\n")
        flush()
        count += 1
    return count
