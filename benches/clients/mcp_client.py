#!/usr/bin/env python3
"""Drives one MCP server over stdio with the official Python SDK client
(`mcp` on PyPI: `ClientSession` over `stdio_client`) and prints calls/s.

    mcp_client.py --tool bash --arguments '{"command": "echo hi"}' \
        [--calls 400] [--concurrency 8] [--warmup 20] [--expect hi] \
        [--control] -- SERVER [ARGS...]

The server gets this process's environment and working directory. Its
stderr goes to /dev/null (some servers log every request there).

One-shot (default): start the server, initialize, list tools, make
`--warmup` calls sequentially and `--warmup` with `--concurrency` in flight
(not counted), then `--calls` calls with `--concurrency` in flight, print one
JSON line and exit.

`--control` (what `benches/run` uses): after the warm-up print a JSON line
`{"ready": ...}`, then read lines `CALLS CONCURRENCY` from stdin and answer
each with one JSON line, until stdin ends. The harness keeps every client
and server running and gives them turns.

A call whose answer is an error (`isError`, an exception, or no `--expect`
text in the content) counts as a failure, not as a fast call.

Each result line holds `calls_per_second` (successful calls over the wall
time of the run), `failures`, `first_failure`, and where a call's time goes
in this client: `call_ms` (mean time from `call_tool` to its result) and
`validate_ms` (the part of it spent validating `structuredContent` against
the tool's `outputSchema`, which some SDK versions do on every call).
"""

import argparse
import asyncio
import datetime
import importlib.metadata
import json
import os
import platform
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def call_timeout():
    """30 seconds, as the SDK takes it: a `timedelta` before mcp 2, a float
    from 2 on."""
    try:
        major = int(importlib.metadata.version("mcp").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        major = 2
    return datetime.timedelta(seconds=30) if major < 2 else 30.0


CALL_TIMEOUT = call_timeout()


def versions():
    found = {"python": platform.python_version()}
    for package in ("mcp", "jsonschema", "pydantic"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


class Timer:
    """Sums time spent in the SDK's output-schema validation, by wrapping the
    session's validation method (named differently across SDK versions)."""

    def __init__(self, session):
        self.seconds = 0.0
        for name in ("validate_tool_result", "_validate_tool_result"):
            original = getattr(session, name, None)
            if original is not None:
                setattr(session, name, self._wrap(original))
                break

    def _wrap(self, original):
        async def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


def failure_of(result, expect):
    """Why an answer is not a success, or None."""
    is_error = getattr(result, "is_error", None)
    if is_error is None:
        is_error = getattr(result, "isError", False)
    text = "".join(getattr(block, "text", "") or "" for block in result.content)
    if is_error or expect not in text:
        return f"error answer: {text[:200]!r}"
    return None


async def run(session, timer, tool, arguments, calls, concurrency, expect):
    gate = asyncio.Semaphore(concurrency)
    failures = []
    busy = [0.0]

    async def one():
        async with gate:
            start = time.perf_counter()
            try:
                result = await session.call_tool(tool, arguments, read_timeout_seconds=CALL_TIMEOUT)
                reason = failure_of(result, expect)
            except Exception as error:  # noqa: BLE001 - any failure is reported, not raised
                reason = f"{type(error).__name__}: {error}"
            busy[0] += time.perf_counter() - start
            if reason is not None:
                failures.append(reason)

    validated_before = timer.seconds
    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(calls)))
    seconds = time.perf_counter() - start
    succeeded = calls - len(failures)
    return {
        "calls": calls,
        "concurrency": concurrency,
        "seconds": seconds,
        "calls_per_second": succeeded / seconds if seconds > 0 else 0.0,
        "failures": len(failures),
        "first_failure": failures[0] if failures else None,
        "call_ms": busy[0] * 1000 / calls,
        "validate_ms": (timer.seconds - validated_before) * 1000 / calls,
    }


def emit(line):
    print(json.dumps(line), flush=True)


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool", required=True)
    parser.add_argument("--arguments", required=True, help="the tool's arguments, as JSON")
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--expect", default="hi")
    parser.add_argument("--control", action="store_true")
    parser.add_argument("server", nargs="+")
    options = parser.parse_args()
    arguments = json.loads(options.arguments)

    parameters = StdioServerParameters(
        command=options.server[0],
        args=options.server[1:],
        env=dict(os.environ),
        cwd=os.getcwd(),
    )
    with open(os.devnull, "w") as server_stderr:
        async with stdio_client(parameters, errlog=server_stderr) as streams:
            read_stream, write_stream = streams[0], streams[1]
            async with ClientSession(read_stream, write_stream) as session:
                await session.initialize()
                await session.list_tools()
                timer = Timer(session)
                warm = [
                    await run(session, timer, options.tool, arguments, options.warmup, 1, options.expect),
                    await run(
                        session, timer, options.tool, arguments,
                        options.warmup, options.concurrency, options.expect,
                    ),
                ]
                failed = next((line for line in warm if line["failures"]), None)
                if not options.control:
                    line = failed or await run(
                        session, timer, options.tool, arguments,
                        options.calls, options.concurrency, options.expect,
                    )
                    emit({"client": "python", "versions": versions(), **line})
                    return
                emit({
                    "ready": failed is None,
                    "client": "python",
                    "versions": versions(),
                    "first_failure": failed and failed["first_failure"],
                })
                loop = asyncio.get_running_loop()
                while True:
                    request = await loop.run_in_executor(None, sys.stdin.readline)
                    if not request:
                        break
                    calls, concurrency = (int(field) for field in request.split())
                    emit(await run(
                        session, timer, options.tool, arguments, calls, concurrency, options.expect,
                    ))


if __name__ == "__main__":
    asyncio.run(main())
