"""The C# voxel mod (VoxelMod.exe on Mono) driven through `gabp mcp` by the official MCP Python SDK: started
from config.json, a main-thread tool, an event, and the attention gate.

Usage: python mcp_check.py PATH/TO/gabp PATH/TO/VoxelMod.exe LIBGABP_DIR
Prints one line per check and `N passed, M failed`; exits 1 when any failed.
"""

import asyncio
import json
import os
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

GABP, EXE, LIB = (os.path.abspath(p) for p in sys.argv[1:4])
RESULTS = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    RESULTS["passed" if condition else "failed"] += 1
    print(f"ok   {name}" if condition else f"FAIL {name}: {detail}")


def structured(result):
    return result.structured_content or {}


async def session(directory):
    config = {"version": "1.0", "games": {"voxel": {
        "id": "voxel", "name": "Voxel (C#)", "launchMode": "DirectPath", "target": "/usr/bin/mono",
        "args": [EXE], "env": {"LD_LIBRARY_PATH": LIB}}}}
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f)
    params = StdioServerParameters(command=GABP, args=["mcp", "--config-dir", directory],
                                   env={"PATH": os.environ.get("PATH", ""), "HOME": directory})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            started = await s.call_tool("games_start", {"gameId": "voxel"})
            check("gabp mcp starts the C# mod from config.json",
                  structured(started).get("code") == "started_connected", started.content[0].text)
            names = structured(await s.call_tool("games_tool_names", {"gameId": "voxel"}))
            listed = {t["localName"] for t in names.get("tools", [])}
            check("its tools are listed", {"world/get_block", "world/place_block", "player/teleport",
                                           "demo/raise_error", "demo/echo"} <= listed, listed)

            await s.call_tool("games_subscribe", {"gameId": "voxel", "channels": ["world/block_change"]})
            place = {"tool": "voxel_world_place_block", "arguments": {"x": 2, "y": 5, "z": 2, "blockType": "glass"}}
            placed = await s.call_tool("games_call_tool", place)
            check("a main-thread tool of the C# mod answers", structured(placed).get("success") is True,
                  placed.content[0].text)
            block = await s.call_tool("games_call_tool", {"tool": "voxel_world_get_block",
                                                          "arguments": {"x": 2, "y": 5, "z": 2}})
            check("the world changed", structured(block).get("block") == "glass", block.content[0].text)
            events = structured(await s.call_tool("games_events", {"gameId": "voxel", "waitMs": 5000}))
            got = [e["payload"] for e in events.get("events", [])]
            check("its event arrives", {"x": 2, "y": 5, "z": 2, "block": "glass"} in got, events)

            await s.call_tool("games_call_tool", {"tool": "voxel_demo_raise_error",
                                                  "arguments": {"message": "the autosave failed"}})
            blocked = await s.call_tool("games_call_tool", place)
            check("its blocking attention item refuses the call",
                  blocked.is_error and structured(blocked).get("code") == "blocked_by_attention",
                  blocked.content[0].text)
            attention = structured(await s.call_tool("games_get_attention", {"gameId": "voxel"}))
            attention_id = (attention.get("attention") or {}).get("attentionId", "")
            acked = await s.call_tool("games_ack_attention", {"gameId": "voxel", "attentionId": attention_id})
            check("the item is acknowledged", structured(acked).get("acknowledged") is True, acked.content[0].text)
            again = await s.call_tool("games_call_tool", place)
            check("calls flow again after the ack", structured(again).get("success") is True, again.content[0].text)
            stopped = await s.call_tool("games_stop", {"gameId": "voxel"})
            check("the C# mod stops", not stopped.is_error, stopped.content[0].text)


def main():
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(session(directory))
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    sys.exit(1 if RESULTS["failed"] else 0)


if __name__ == "__main__":
    main()
