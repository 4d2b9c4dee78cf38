"""A real MCP client (the official `mcp` package from PyPI) driving `errand mcp`.

Usage:
  driver.py stdio SCENARIO_JSON -- COMMAND [ARGS...]
  driver.py http  SCENARIO_JSON URL TOKEN

SCENARIO_JSON is a list of calls: {"tool": NAME, "args": {...}}. An argument
written {"find": "words"} is replaced by the element number of the first line
of the latest `observe` or `find` reply that contains the words (any case), as
a caller reading the replies would choose it (an element's line starts with its number: `3<button>Sign in`); {"list_tools": true} as a step
lists the tools, {"wait_file": PATH} waits until the test created PATH. Prints one JSON object: {"tools": [...], "calls": [{"tool",
"text", "is_error", "images"}]}. A reply's text is kept whole.

Each request and each wait has a deadline (CALL_TIMEOUT seconds): a server
that hangs fails the test with the call it hung on, instead of hanging it.
"""

import asyncio
import json
import os
import re
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation


# Longer than any call of the tests takes (an approval answered in the side
# panel included), far shorter than the test's own limit.
CALL_TIMEOUT = float(os.environ.get("MCP_DRIVER_CALL_TIMEOUT", "90"))


async def bounded(what, awaitable):
    """`awaitable`, or exit with what hung after CALL_TIMEOUT seconds."""
    try:
        return await asyncio.wait_for(awaitable, CALL_TIMEOUT)
    except asyncio.TimeoutError:
        raise SystemExit(f"driver: {what} got no answer in {CALL_TIMEOUT:.0f} s")


def number_for(words, replies):
    """The `[N]` of the first line, in the latest replies first, holding `words`."""
    for text in reversed(replies):
        for line in text.splitlines():
            if words.lower() in line.lower():
                m = re.match(r"\s*\*?(\d+)[<>]", line)
                if m:
                    return int(m.group(1))
    raise SystemExit(f"no element reads {words!r} in the replies so far: {replies}")


def resolve(value, replies):
    if isinstance(value, dict):
        if set(value) == {"find"}:
            return number_for(value["find"], replies)
        return {k: resolve(v, replies) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, replies) for v in value]
    return value


async def run(session, scenario):
    await bounded("initialize", session.initialize())
    out = {"tools": [], "calls": []}
    replies = []
    for step in scenario:
        if "wait_file" in step:
            # The test does something meanwhile (in the side panel) and
            # then creates the file.
            async def appears(path):
                while not os.path.exists(path):
                    await asyncio.sleep(0.1)

            await bounded(f"waiting for {step['wait_file']}", appears(step["wait_file"]))
            continue
        if step.get("list_tools"):
            tools = await bounded("tools/list", session.list_tools())
            out["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools.tools
            ]
            continue
        args = resolve(step.get("args", {}), replies)
        result = await bounded(f"the call of {step['tool']}", session.call_tool(step["tool"], args))
        text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
        images = [c.mime_type for c in result.content if getattr(c, "type", "") == "image"]
        if step["tool"] in ("observe", "find") and not result.is_error:
            replies.append(text)
        out["calls"].append(
            {"tool": step["tool"], "args": args, "text": text, "is_error": bool(result.is_error), "images": images}
        )
        print(f"driver: {step['tool']} -> error={bool(result.is_error)}", file=sys.stderr, flush=True)
    return out


async def main():
    mode, scenario = sys.argv[1], json.loads(sys.argv[2])
    info = Implementation(name="mcp-test-client", version="1.0")
    if mode == "stdio":
        sep = sys.argv.index("--")
        command, args = sys.argv[sep + 1], sys.argv[sep + 2 :]
        params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, client_info=info) as session:
                out = await run(session, scenario)
    else:
        import httpx2

        url, token = sys.argv[3], sys.argv[4]
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
        async with streamable_http_client(url, http_client=client) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write, client_info=info) as session:
                out = await run(session, scenario)
    print(json.dumps(out))


def leaves(group):
    """The exceptions inside nested exception groups (anyio's task groups)."""
    for e in group.exceptions:
        yield from leaves(e) if isinstance(e, BaseExceptionGroup) else [e]


try:
    asyncio.run(main())
except BaseExceptionGroup as group:
    exits = [e for e in leaves(group) if isinstance(e, SystemExit)]
    if not exits:
        raise
    sys.exit(exits[0].code)
