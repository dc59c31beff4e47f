"""Drives `gabp mcp` with the official MCP Python SDK, a client nobody on this project wrote.

Usage: python mcp_python_client.py PATH/TO/gabp

Covers what an MCP host does: launch a game, list and call tools, the attention block and its
acknowledgement, events by cursor, a crash and a restart, stop, bad input, and MCP over streamable HTTP with
a bearer key. Prints one line per check and ends with `N passed, M failed`; exits 1 when any failed.
"""

import asyncio
import base64
import json
import logging
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

GABP = os.path.abspath(sys.argv[1])
RESULTS = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    if condition:
        RESULTS["passed"] += 1
        print(f"ok   {name}")
    else:
        RESULTS["failed"] += 1
        print(f"FAIL {name}: {detail}")


def write_config(directory, ids):
    games = {
        gid: {
            "id": gid,
            "name": f"Demo {gid}",
            "launchMode": "DirectPath",
            "target": GABP,
            "args": ["mod"],
            "env": {"RUST_LOG": "warn"},
        }
        for gid in ids
    }
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({"version": "1.0", "games": games}, f)


def structured(result):
    return result.structured_content or {}


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Listener:
    def __init__(self):
        self.tool_list_changed = 0

    async def __call__(self, message):
        method = getattr(getattr(message, "root", message), "method", None)
        if method == "notifications/tools/list_changed":
            self.tool_list_changed += 1


async def stdio_session(directory):
    listener = Listener()
    params = StdioServerParameters(
        command=GABP,
        args=["mcp", "--config-dir", directory, "--mirror-tools"],
        env={"PATH": os.environ.get("PATH", ""), "HOME": directory},
    )
    pids = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=listener) as s:
            init = await s.initialize()
            check("initialize names the server", init.server_info.name == "gabp-mcp", init.server_info)
            names = {t.name for t in (await s.list_tools()).tools}
            gabs = {"games_list", "games_show", "games_start", "games_stop", "games_kill",
                    "games_status", "games_connect", "games_tools", "games_tool_names",
                    "games_tool_detail", "games_call_tool", "games_get_attention",
                    "games_ack_attention"}
            check("the 13 GABS tools are listed", gabs <= names, gabs - names)

            listed = await s.call_tool("games_list", {})
            check("games_list", "voxel" in listed.content[0].text, listed.content[0].text)

            started = await s.call_tool("games_start", {"gameId": "voxel"})
            check("games_start connects", structured(started).get("code") == "started_connected",
                  started.content[0].text)
            for _ in range(100):
                if listener.tool_list_changed:
                    break
                await asyncio.sleep(0.05)
            check("tools/list_changed after the start", listener.tool_list_changed > 0)
            names = {t.name for t in (await s.list_tools()).tools}
            check("game tools are mirrored", "voxel_world_get_block" in names, sorted(names))

            block = await s.call_tool("games_call_tool", {
                "tool": "voxel_world_get_block", "arguments": {"x": 0, "y": 0, "z": 0}})
            check("games_call_tool by mirrored name", structured(block).get("block") == "stone",
                  block.content[0].text)
            echo = await s.call_tool("voxel_demo_echo", {"value": [1, 2]})
            check("a mirrored tool called directly", structured(echo).get("value") == [1, 2],
                  echo.content[0].text)

            picture = await s.call_tool("voxel_world_render", {"scale": 8})
            images = [c for c in picture.content if c.type == "image"]
            png = base64.b64decode(images[0].data) if images else b""
            check("a game picture arrives as MCP image content",
                  len(images) == 1 and images[0].mime_type == "image/png" and png.startswith(b"\x89PNG")
                  and "_content" not in structured(picture), [c.type for c in picture.content])

            times = []
            for _ in range(200):
                t = time.perf_counter()
                await s.call_tool("games_call_tool", {"tool": "voxel_demo_echo", "arguments": {"value": "x" * 100}})
                times.append(time.perf_counter() - t)
            p50 = statistics.median(times) * 1e6
            print(f"info games_call_tool round trip from the Python SDK: p50 {p50:.0f} us over 200 calls")

            reports = []

            async def on_progress(progress, total, message):
                reports.append((progress, total))

            slept = await s.call_tool("games_call_tool", {"tool": "voxel_demo_sleep", "arguments": {"ms": 500}},
                                      progress_callback=on_progress)
            check("the game's progress reaches the client",
                  not slept.is_error and len(reports) >= 3 and all(t == 500 for _, t in reports), reports)

            await s.call_tool("games_call_tool", {
                "tool": "voxel_demo_raise_error", "arguments": {"message": "the autosave failed"}})
            place = {"tool": "voxel_world_place_block",
                     "arguments": {"x": 2, "y": 5, "z": 2, "blockType": "glass"}}
            blocked = await s.call_tool("games_call_tool", place)
            check("a blocking attention item refuses the call",
                  blocked.is_error and structured(blocked).get("code") == "blocked_by_attention",
                  blocked.content[0].text)
            attention = structured(await s.call_tool("games_get_attention", {"gameId": "voxel"}))
            check("games_get_attention shows the item", attention.get("blocking") is True, attention)
            attention_id = (attention.get("attention") or {}).get("attentionId", "")
            acked = await s.call_tool("games_ack_attention", {"gameId": "voxel", "attentionId": attention_id})
            check("games_ack_attention", structured(acked).get("acknowledged") is True, acked.content[0].text)
            placed = await s.call_tool("games_call_tool", place)
            check("calls flow again after the ack", structured(placed).get("success") is True,
                  placed.content[0].text)

            await s.call_tool("games_subscribe", {"gameId": "voxel", "channels": ["world/block_change"]})
            await s.call_tool("games_call_tool", {"tool": "voxel_world_place_block",
                                                  "arguments": {"x": 3, "y": 6, "z": 3, "blockType": "sand"}})
            events = structured(await s.call_tool("games_events", {"gameId": "voxel", "waitMs": 5000}))
            got = [e["payload"].get("x") for e in events.get("events", [])]
            check("games_events returns the event", 3 in got, events)
            again = structured(await s.call_tool("games_events", {"gameId": "voxel", "cursor": events.get("cursor")}))
            check("the same cursor gives no event twice", again.get("events") == [], again)

            bad = await s.call_tool("games_start", {"gameId": "nope"})
            check("an unknown game is a clear error",
                  bad.is_error and structured(bad).get("code") == "game_not_found", bad.content[0].text)
            bad = await s.call_tool("games_call_tool", {"gameId": "voxel", "tool": "no/such_tool"})
            check("an unknown tool is a clear error", bad.is_error, bad.content[0].text)
            bad = await s.call_tool("games_call_tool", {"tool": "voxel_world_get_block",
                                                        "arguments": {"x": "one"}})
            check("wrong argument types keep the game's code",
                  bad.is_error and structured(bad).get("gabpError", {}).get("code") == -32602,
                  bad.content[0].text)

            status = structured(await s.call_tool("games_status", {"gameId": "voxel"}))
            pid = status.get("pid")
            pids.append(pid)
            os.kill(pid, signal.SIGKILL)
            crashed = time.monotonic()
            state = None
            while time.monotonic() - crashed < 5:
                state = structured(await s.call_tool("games_status", {"gameId": "voxel"})).get("status")
                if state == "exited":
                    break
                await asyncio.sleep(0.05)
            check("a crash is noticed within a second",
                  state == "exited" and time.monotonic() - crashed < 1.5, state)
            restarted = await s.call_tool("games_start", {"gameId": "voxel"})
            check("the game starts again", structured(restarted).get("code") == "started_connected",
                  restarted.content[0].text)
            pids.append(structured(await s.call_tool("games_status", {"gameId": "voxel"})).get("pid"))

            stopped = await s.call_tool("games_stop", {"gameId": "voxel"})
            check("games_stop", structured(stopped).get("code") == "terminated", stopped.content[0].text)
            check("the game process is gone after games_stop", not alive(pids[-1]), pids)
    return pids


async def store_launch_and_orphans(directory):
    """A SteamAppId game through a fake xdg-open (found and stopped by stopProcessName), then a hub killed with
    SIGKILL: the game it started ends within 2 s."""
    bin_dir = os.path.join(directory, "bin")
    os.makedirs(bin_dir)
    name = f"gp{os.getpid() % 100000}-st"
    os.symlink(GABP, os.path.join(bin_dir, name))
    opener = os.path.join(bin_dir, "xdg-open")
    with open(opener, "w") as f:
        f.write(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > '{directory}/argv'\nenv > '{directory}/env'\n"
                f"'{bin_dir}/{name}' mod >/dev/null 2>&1 &\necho $! > '{directory}/game.pid'\nexit 0\n")
    os.chmod(opener, 0o755)
    games = {"shop": {"launchMode": "SteamAppId", "target": "294100", "stopProcessName": name,
                      "env": {"RUST_LOG": "warn"}},
             "voxel": {"target": GABP, "args": ["mod"], "env": {"RUST_LOG": "warn"}}}
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({"games": games}, f)
    params = StdioServerParameters(
        command=GABP, args=["mcp", "--config-dir", directory],
        env={"PATH": bin_dir + ":" + os.environ.get("PATH", ""), "HOME": directory})
    game, killed = None, False
    try:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                started = await s.call_tool("games_start", {"gameId": "shop"})
                check("a SteamAppId game starts through xdg-open and connects",
                      structured(started).get("code") == "started_connected", started.content[0].text)
                with open(os.path.join(directory, "argv")) as f:
                    argv = f.read().split()
                check("xdg-open got steam://rungameid/<target>", argv == ["steam://rungameid/294100"], argv)
                with open(os.path.join(directory, "env")) as f:
                    env = dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)
                with open(os.path.join(directory, "shop", "bridge.json")) as f:
                    bridge = json.load(f)
                check("the launcher's environment carries the game's GABP settings, as bridge.json does",
                      env.get("GABP_SERVER_PORT") == str(bridge["port"]) and env.get("GABS_GAME_ID") == "shop"
                      and env.get("GABP_TOKEN") == bridge["token"], sorted(env))
                with open(os.path.join(directory, "game.pid")) as f:
                    game = int(f.read())
                status = structured(await s.call_tool("games_status", {"gameId": "shop"}))
                check("the store game is found by stopProcessName", status.get("pid") == game, status)
                stopped = await s.call_tool("games_stop", {"gameId": "shop"})
                check("games_stop stops the store game found by name",
                      structured(stopped).get("code") == "terminated" and not alive(game),
                      stopped.content[0].text)

                await s.call_tool("games_start", {"gameId": "voxel"})
                voxel = structured(await s.call_tool("games_status", {"gameId": "voxel"})).get("pid")
                with open(os.path.join(directory, "voxel", "runtime.json")) as f:
                    record = json.load(f)
                check("the runtime record names the game and its hub", record.get("pid") == voxel, record)
                os.kill(record["hubPid"], signal.SIGKILL)
                killed = True
                deadline = time.monotonic() + 2
                while alive(voxel) and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
                check("a game ends within 2 s of its hub killed with SIGKILL", not alive(voxel), voxel)
    except Exception as e:  # the session ends with its killed server
        if not killed:
            check("the store launch session ran to its end", False, repr(e))
    finally:
        if game and alive(game):
            os.kill(game, signal.SIGKILL)


class CapturedLog(logging.Handler):
    """Keeps what the SDK logs while it is attached."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def post_status(url, headers):
    """The HTTP status of a POST of `{}` to `url` with `headers`."""
    request = urllib.request.Request(url, data=b"{}", method="POST",
                                     headers=dict(headers, **{"Content-Type": "application/json"}))
    try:
        urllib.request.urlopen(request, timeout=10)
        return 200
    except urllib.error.HTTPError as e:
        return e.code


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def http_session(directory):
    port = free_port()
    env = dict(os.environ, GABP_MCP_API_KEY="k" * 40, HOME=directory)
    server = subprocess.Popen([GABP, "mcp", "--config-dir", directory, "--http", f"localhost:{port}"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        code = post_status(url, {})
        check("HTTP without the bearer key is 401", code == 401, code)
        headers = {"Authorization": "Bearer " + "k" * 40}
        code = post_status(url, dict(headers, Origin="http://evil.example"))
        check("HTTP from a foreign Origin is 403", code == 403, code)
        termination = CapturedLog()
        logging.getLogger().addHandler(termination)
        try:
            async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
                async with streamable_http_client(url, http_client=http) as (read, write, *_):
                    async with ClientSession(read, write) as s:
                        await s.initialize()
                        listed = await s.call_tool("games_list", {})
                        check("MCP over streamable HTTP with the key (--http localhost:PORT)",
                              "voxel" in listed.content[0].text, listed.content[0].text)
        finally:
            logging.getLogger().removeHandler(termination)
        failed = [m for m in termination.messages if "termination failed" in m.lower()]
        check("the SDK ends its HTTP session without complaint", not failed, failed)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)

    refused = subprocess.run([GABP, "mcp", "--config-dir", directory, "--http", "0.0.0.0:0"],
                             env=env, capture_output=True, text=True, timeout=60)
    check("a non-loopback address is refused at start",
          refused.returncode != 0 and "loopback" in refused.stderr, refused.stderr)
    refused = subprocess.run([GABP, "mcp", "--config-dir", directory, "--http", "localhost"],
                             env=env, capture_output=True, text=True, timeout=60)
    check("--http without a port is refused, naming the form expected",
          refused.returncode != 0 and "localhost:8080" in refused.stderr, refused.stderr)
    env.pop("GABP_MCP_API_KEY")
    refused = subprocess.run([GABP, "mcp", "--config-dir", directory, "--http", "127.0.0.1:0"],
                             env=env, capture_output=True, text=True, timeout=60)
    check("--http without a key is refused", refused.returncode != 0 and "GABP_MCP_API_KEY" in refused.stderr,
          refused.stderr)

async def gabs_config_session(directory):
    """What a GABS user's config.json asks for: stripOutputSchema, toolNormalization, brief, gab:// state."""
    write_config(directory, ["voxel"])
    path = os.path.join(directory, "config.json")
    with open(path) as f:
        config = json.load(f)
    config["stripOutputSchema"] = True
    config["toolNormalization"] = {"enableOpenAINormalization": False}
    with open(path, "w") as f:
        json.dump(config, f)
    params = StdioServerParameters(
        command=GABP,
        args=["mcp", "--config-dir", directory, "--mirror-tools"],
        env={"PATH": os.environ.get("PATH", ""), "HOME": directory},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            await s.call_tool("games.start", {"gameId": "voxel"})
            tools = {t.name: t for t in (await s.list_tools()).tools}
            check("toolNormalization off lists GABS's dotted names",
                  "games.list" in tools and "games_list" not in tools, sorted(tools))
            mirrored = [t for n, t in tools.items() if n.startswith("voxel_")]
            check("stripOutputSchema drops outputSchema from tools/list",
                  mirrored and all(t.output_schema is None for t in mirrored),
                  [(t.name, t.output_schema) for t in mirrored])
            detail = await s.call_tool("games.tool_detail", {"tool": "voxel_world_get_block"})
            check("games_tool_detail keeps the output schema",
                  isinstance(structured(detail).get("outputSchema"), dict), structured(detail))
            plain = structured(await s.call_tool("games_tool_names", {"gameId": "voxel"}))
            brief = structured(await s.call_tool("games_tool_names", {"gameId": "voxel", "brief": True}))
            check("brief adds a one-line summary per tool, as GABS does",
                  all("summary" not in t for t in plain["tools"])
                  and all(t.get("summary") for t in brief["tools"]), brief)
            for uri in ("gabp-game://voxel/state", "gab://voxel/state"):
                state = json.loads((await s.read_resource(uri)).contents[0].text)
                check(f"the state reads at {uri}",
                      state.get("gameId") == "voxel" and state.get("connected") is True, state)
            await s.call_tool("games.stop", {"gameId": "voxel"})

async def image_session(directory):
    """A screenshot over --max-image-edge arrives scaled down, with a note, never cut."""
    write_config(directory, ["voxel"])
    params = StdioServerParameters(
        command=GABP,
        args=["mcp", "--config-dir", directory, "--max-image-edge", "40"],
        env={"PATH": os.environ.get("PATH", ""), "HOME": directory},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            await s.call_tool("games_start", {"gameId": "voxel"})
            picture = await s.call_tool("voxel_world_render", {"scale": 8})
            images = [c for c in picture.content if c.type == "image"]
            png = base64.b64decode(images[0].data) if images else b""
            size = (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) if png else (0, 0)
            notes = [c.text for c in picture.content if c.type == "text" and "scaled from" in c.text]
            check("a picture over --max-image-edge is scaled down and said so",
                  len(images) == 1 and max(size) == 40 and len(notes) == 1, (size, notes))
            await s.call_tool("games_stop", {"gameId": "voxel"})


async def push_session(directory):
    """The game's console (games_logs, the logs resource, MCP logging) and pushed events, in a session of
    their own."""
    import warnings
    warnings.filterwarnings("ignore", message="The logging capability is deprecated")
    warnings.filterwarnings("ignore", message="resources/subscribe is removed")
    write_config(directory, ["voxel"])
    logs, updated = [], []

    async def on_log(params):
        logs.append(params)

    async def on_message(message):
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            updated.append(root.params.uri)

    async def until(condition, seconds=20):
        deadline = time.monotonic() + seconds
        while not condition() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return condition()

    params = StdioServerParameters(
        command=GABP, args=["mcp", "--config-dir", directory],
        env={"PATH": os.environ.get("PATH", ""), "HOME": directory},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, logging_callback=on_log, message_handler=on_message) as s:
            await s.initialize()
            await s.set_logging_level("info")
            await s.call_tool("games_start", {"gameId": "voxel"})
            check("logging: the hub says the game connected", await until(lambda: any(
                (m.data or {}).get("status") == "connected" and m.logger == "gabp-hub" for m in logs)),
                [m.data for m in logs])
            await s.set_logging_level("error")
            shown = await s.call_tool("games_logs", {"gameId": "voxel", "tail": 5, "grep": "."})
            check("games_logs answers with lines and bounds", isinstance(structured(shown).get("lines"), list)
                  and structured(shown).get("truncated") is False, shown.content[0].text)
            bad = await s.call_tool("games_logs", {"gameId": "voxel", "grep": "("})
            check("games_logs refuses a bad pattern", bad.is_error and "grep" in bad.content[0].text,
                  bad.content[0].text)
            resource = await s.read_resource("gabp-game://voxel/logs")
            check("the logs resource reads as text", resource.contents[0].mime_type == "text/plain",
                  resource.contents[0])

            uri = "gabp-game://voxel/events/world/block_change"
            await s.call_tool("games_subscribe", {"gameId": "voxel", "channels": ["world/block_change"]})
            listed = {str(r.uri) for r in (await s.list_resources()).resources}
            check("a subscribed channel is a resource", uri in listed, sorted(listed))
            await s.subscribe_resource(uri)
            place = {"tool": "voxel_world_place_block",
                     "arguments": {"x": 3, "y": 6, "z": 0, "blockType": "sand"}}
            await s.call_tool("games_call_tool", place)
            check("resources/updated for the event resource within 2 s",
                  await until(lambda: uri in updated, 2), updated)
            first = json.loads((await s.read_resource(uri)).contents[0].text)
            check("reading it returns the new event", [e["payload"]["x"] for e in first["events"]] == [3], first)
            second = json.loads((await s.read_resource(uri)).contents[0].text)
            check("a second read returns none", second["events"] == [], second)

            before = len(logs)
            await s.call_tool("games_stop", {"gameId": "voxel"})
            check("logging: at error, a stop (info) is not sent", all(
                m.level == "error" for m in logs[before:]), [m.data for m in logs[before:]])

async def config_reload_session():
    """A broken config.json is reported by the tools, a fixed one read again within 2 s, a broken edit keeps the
    last valid one; tool call time limits come from timeouts.toolCallSeconds and `_meta` gabp/timeoutSeconds."""
    from mcp.shared.exceptions import MCPError

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "config.json")
        write_config(directory, ["voxel"])
        with open(path) as f:
            valid = json.load(f)
        valid["timeouts"] = {"toolCallSeconds": 1.5}
        broken = json.loads(json.dumps(valid))
        broken["games"]["voxel"]["launchMode"] = "Steam"

        def write(config):
            with open(path + ".tmp", "w") as f:
                json.dump(config, f)
            os.replace(path + ".tmp", path)

        write(broken)
        params = StdioServerParameters(command=GABP, args=["mcp", "--config-dir", directory],
                                       env={"PATH": os.environ.get("PATH", ""), "HOME": directory})
        async with stdio_client(params) as (read, write_stream):
            async with ClientSession(read, write_stream) as s:
                await s.initialize()
                listed = await s.call_tool("games_list", {})
                text = listed.content[0].text
                check("a broken config.json: the tools answer config_invalid naming the file and the field",
                      listed.is_error and text.startswith(f"config_invalid: {path}: ")
                      and "field /games/voxel/launchMode: expected" in text,
                      text)
                write(valid)
                fixed = time.monotonic()
                while time.monotonic() - fixed < 10:
                    listed = await s.call_tool("games_list", {})
                    if not listed.is_error:
                        break
                    await asyncio.sleep(0.05)
                check("a fixed config.json is read again within 2 s",
                      not listed.is_error and time.monotonic() - fixed <= 2
                      and "voxel" in listed.content[0].text, listed.content[0].text)
                write(broken)
                for _ in range(200):
                    listed = await s.call_tool("games_list", {})
                    if "configProblem" in structured(listed):
                        break
                    await asyncio.sleep(0.05)
                check("a broken edit keeps the last valid config, and games_list says what is wrong",
                      not listed.is_error and "voxel" in listed.content[0].text
                      and structured(listed).get("configProblem", {}).get("field") == "/games/voxel/launchMode",
                      listed.content[0].text)

                started = await s.call_tool("games_start", {"gameId": "voxel"})
                check("the game starts from the last valid config",
                      structured(started).get("code") == "started_connected", started.content[0].text)
                slow = {"ms": 20000}
                t = time.monotonic()
                late = await s.call_tool("voxel_demo_sleep", slow)
                check("timeouts.toolCallSeconds limits a mirrored call",
                      late.is_error and structured(late).get("code") == "timeout"
                      and "within 1.5 s" in late.content[0].text and time.monotonic() - t < 10,
                      late.content[0].text)
                t = time.monotonic()
                late = await s.call_tool("games_call_tool", {"tool": "voxel_demo_sleep", "arguments": slow},
                                         meta={"gabp/timeoutSeconds": 0.5})
                check("_meta gabp/timeoutSeconds limits a call",
                      late.is_error and "within 0.5 s" in late.content[0].text and time.monotonic() - t < 10,
                      late.content[0].text)
                try:
                    await s.call_tool("voxel_demo_echo", {"value": 1}, meta={"gabp/timeoutSeconds": -1})
                    refused = None
                except MCPError as e:
                    refused = e
                check("a bad _meta gabp/timeoutSeconds is invalid params naming it",
                      refused is not None and refused.error.code == -32602
                      and "_meta/gabp/timeoutSeconds" in refused.error.message, refused)


def main():
    with tempfile.TemporaryDirectory() as directory:
        write_config(directory, ["voxel"])
        pids = asyncio.run(stdio_session(directory))
        deadline = time.monotonic() + 10
        while any(p and alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        check("no game process is left after the session", not any(p and alive(p) for p in pids), pids)
        asyncio.run(http_session(directory))
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(gabs_config_session(directory))
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(image_session(directory))
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(store_launch_and_orphans(directory))
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(push_session(directory))
    asyncio.run(config_reload_session())
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    sys.exit(1 if RESULTS["failed"] else 0)


if __name__ == "__main__":
    main()
