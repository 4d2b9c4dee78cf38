"""Tokens of an observation reply and time per tool call: `errand mcp --launch`
against the Playwright MCP server (`@playwright/mcp`, `browser_snapshot`), on
the same corpus pages in the same Chromium, both driven by the official `mcp`
client. See BENCHMARKS.md ("errand mcp") for the command and the results.

Usage: bench.py ERRAND_BINARY PLAYWRIGHT_MCP_CLI_JS CHROMIUM CORPUS_PAGES_DIR PAGE...
Tokens are estimated as characters / 4 for both (the same rule for both sides).
"""

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

RUNS = 5


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def timed(session, name, args):
    t = time.perf_counter()
    result = await session.call_tool(name, args)
    return result, (time.perf_counter() - t) * 1000


async def errand(binary, pages, base):
    env = dict(os.environ)
    tmp = tempfile.mkdtemp(prefix="errand-bench-")
    env["ERRAND_DATA_DIR"] = os.path.join(tmp, "data")
    env["ERRAND_CONFIG_DIR"] = os.path.join(tmp, "config")
    params = StdioServerParameters(command=binary, args=["mcp", "--launch"], env=env)
    rows = {}
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            for page in pages:
                gotos, observes, again, clicks = [], [], [], []
                for _ in range(RUNS):
                    _, ms = await timed(s, "goto", {"url": f"{base}/{page}"})
                    gotos.append(ms)
                    whole, ms = await timed(s, "observe", {"full": True, "max_tokens": 10**7})
                    observes.append(ms)
                    capped, _ = await timed(s, "observe", {"full": True})
                    diff, ms = await timed(s, "observe", {})
                    again.append(ms)
                    _, ms = await timed(s, "scroll", {"direction": "down"})
                    clicks.append(ms)
                rows[page] = {
                    "whole": len(text_of(whole)) // 4,
                    "capped": len(text_of(capped)) // 4,
                    "again": len(text_of(diff)) // 4,
                    "goto_ms": statistics.median(gotos),
                    "observe_ms": statistics.median(observes),
                    "again_ms": statistics.median(again),
                    "action_ms": statistics.median(clicks),
                }
    return rows


async def playwright(cli, chromium, pages, base):
    args = [cli, "--headless", "--isolated", "--no-sandbox", "--executable-path", chromium]
    # It writes each snapshot into `.playwright-mcp/` of its working folder.
    scratch = tempfile.mkdtemp(prefix="playwright-mcp-bench-")
    params = StdioServerParameters(command="node", args=args, env=dict(os.environ), cwd=scratch)
    rows = {}
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            for page in pages:
                gotos, snaps, scrolls = [], [], []
                for _ in range(RUNS):
                    nav, ms = await timed(s, "browser_navigate", {"url": f"{base}/{page}"})
                    gotos.append(ms)
                    snap, ms = await timed(s, "browser_snapshot", {})
                    snaps.append(ms)
                    _, ms = await timed(s, "browser_press_key", {"key": "PageDown"})
                    scrolls.append(ms)
                rows[page] = {
                    "snapshot": len(text_of(snap)) // 4,
                    "navigate_reply": len(text_of(nav)) // 4,
                    "goto_ms": statistics.median(gotos),
                    "snapshot_ms": statistics.median(snaps),
                    "action_ms": statistics.median(scrolls),
                }
    return rows


async def main():
    binary, cli, chromium, corpus = sys.argv[1:5]
    pages = sys.argv[5:]
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", corpus],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = server.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N ..."
        port = line.split(" port ")[1].split()[0]
        base = f"http://127.0.0.1:{port}"
        e = await errand(binary, pages, base)
        p = await playwright(cli, chromium, pages, base)
    finally:
        server.terminate()
    print("| page | Errand observe, whole (≈tokens) | Errand observe reply, default cap | Errand observe again (diff) | Playwright browser_snapshot (≈tokens) | Playwright browser_navigate reply | goto / navigate ms (Errand / Playwright) | observe / snapshot ms | a scroll ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for page in pages:
        a, b = e[page], p[page]
        print(
            f"| {page} | {a['whole']} | {a['capped']} | {a['again']} | {b['snapshot']} | {b['navigate_reply']} "
            f"| {a['goto_ms']:.0f} / {b['goto_ms']:.0f} | {a['observe_ms']:.0f} / {b['snapshot_ms']:.0f} "
            f"| {a['action_ms']:.0f} / {b['action_ms']:.0f} |"
        )


asyncio.run(main())
