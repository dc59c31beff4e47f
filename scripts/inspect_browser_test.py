#!/usr/bin/env python3
"""Drives the `gabp inspect` page in headless Chromium (WebDriver over plain HTTP, chromedriver) against the
demo mod: identity shown, world/place_block from its form, the world/block_change event in the log, a bad
value's -32602 field error next to the field, world/render's picture, an attention item acknowledged from the
page, the clock paused and stepped 3 ticks (each sheep walks exactly three blocks), and the page coming back
after the game restarts; with --mock-mod, the clock disabled for a mod without time control. A screenshot of
each step goes to the output directory; the page's load time (navigation start to ready and connected) is
printed.

Usage: inspect_browser_test.py GABP_BINARY [--out DIR] [--chromium PATH] [--chromedriver PATH] [--mock-mod PATH]
"""

import argparse
import base64
import json
import os
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

PATIENCE = 60.0
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class Failure(Exception):
    pass


class Group:
    """A child process in its own process group, killed with all it started."""

    def __init__(self, name, argv, env, stdout=subprocess.PIPE):
        self.name = name
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                                     stderr=self.log, start_new_session=True, text=True)
        self.pgid = self.proc.pid

    def first_line(self, pattern):
        """Waits for the first stdout line; returns the match of `pattern` in it."""
        line = self.proc.stdout.readline()
        match = re.search(pattern, line)
        if not match:
            raise Failure(f"{self.name}: expected /{pattern}/ on stdout, got {line!r}; stderr: {self.stderr()}")
        return match

    def stderr(self):
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-2000:]

    def stop(self):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.pgid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                continue
            if not alive(self.pgid):
                break
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def gone(self):
        """Whether no process of the group is left (waits for the stragglers to be reaped)."""
        deadline = time.monotonic() + 20
        while alive(self.pgid) and time.monotonic() < deadline:
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        return not alive(self.pgid)


def alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriver:
    def __init__(self):
        self.base = None
        self.session = None

    def request(self, method, path, body=None):
        url = self.base + (f"/session/{self.session}" if self.session else "") + path
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as response:
                return json.load(response)["value"]
        except urllib.error.HTTPError as e:
            raise Failure(f"WebDriver {method} {path}: {e.code} {e.read().decode()[:500]}") from None

    def start(self, port, chromium, profile):
        self.base = f"http://127.0.0.1:{port}"
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1100", f"--user-data-dir={profile}", "--no-first-run"],
        }}}}
        self.session = self.request("POST", "/session", caps)["sessionId"]

    def quit(self):
        if self.session:
            try:
                self.request("DELETE", "")
            except (Failure, OSError):
                pass
            self.session = None

    def go(self, url):
        self.request("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.request("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        return self.request("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css):
        self.js("arguments[0].scrollIntoView({block: 'center'})", {ELEMENT: self.find(css)})
        self.request("POST", f"/element/{self.find(css)}/click", {})

    def type(self, css, text):
        element = self.find(css)
        self.request("POST", f"/element/{element}/clear", {})
        self.request("POST", f"/element/{element}/value", {"text": text})

    def select(self, css, option_text):
        select = self.find(css)
        options = self.request("POST", f"/element/{select}/elements",
                               {"using": "css selector", "value": "option"})
        for option in options:
            if self.request("GET", f"/element/{option[ELEMENT]}/text") == option_text:
                self.request("POST", f"/element/{option[ELEMENT]}/click", {})
                return
        raise Failure(f"{css} has no option {option_text!r}")

    def wait(self, what, script, *args):
        """Polls `script` until it returns something truthy; fails after PATIENCE."""
        deadline = time.monotonic() + PATIENCE
        while True:
            value = self.js(script, *args)
            if value:
                return value
            if time.monotonic() > deadline:
                raise Failure(f"the page never showed {what}")
            time.sleep(0.05)

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.request("GET", "/screenshot")))
        print(f"screenshot: {path}")


def text_of(css):
    return f"const e = document.querySelector({json.dumps(css)}); return e ? e.textContent : null;"


def tool(name):
    return f'details[data-tool="{name}"]'


def show(driver, css):
    driver.js("document.querySelector(arguments[0]).scrollIntoView({block: 'start'})", css)


def entities(driver):
    """world/entities, called from the page's own origin as its forms do: (tick, {id: (x, z, moves)})."""
    answer = driver.request("POST", "/execute/async", {"args": [], "script": """
        const done = arguments[arguments.length - 1];
        fetch("api/call", {method: "POST", headers: {"content-type": "application/json"},
                           body: JSON.stringify({name: "world/entities", arguments: {}})})
          .then((r) => r.json()).then(done, (e) => done({error: {message: String(e)}}));"""})
    if "result" not in answer:
        raise Failure(f"world/entities answered {answer!r}")
    flock = {e["id"]: (e["x"], e["z"], e["moves"]) for e in answer["result"]["entities"]}
    return answer["result"]["tick"], flock


def clock(driver, out):
    driver.wait("the clock enabled", "return document.querySelector('#time-section').dataset.available === 'true'"
                " && !document.querySelector('#time-step').disabled")
    show(driver, "#time-section")
    driver.click("#time-pause")
    driver.wait("time paused", "return document.querySelector('#time-state').dataset.state === 'paused'")
    driver.wait("time/changed in the log", text_of('#log li[data-channel="time/changed"] .payload'))
    tick = int(driver.wait("the tick counter", "return document.querySelector('#tick').dataset.tick"))
    if not driver.js("return document.querySelector('#time-pause').disabled"
                     " && !document.querySelector('#time-resume').disabled"):
        raise Failure("paused, the pause button should be disabled and resume enabled")
    paused_at, before = entities(driver)
    if paused_at != tick or not before:
        raise Failure(f"paused at tick {tick}, world/entities says tick {paused_at} with {before!r}")
    driver.type("#step-ticks", "3")
    driver.click("#time-step")
    driver.wait("the tick counter 3 ticks on", f"return document.querySelector('#tick').dataset.tick === '{tick + 3}'")
    stepped_at, after = entities(driver)
    if stepped_at != tick + 3 or driver.js(text_of("#time-state")) != "paused":
        raise Failure(f"after time/step 3 from tick {tick}: world tick {stepped_at}, "
                      f"state {driver.js(text_of('#time-state'))!r}")
    for sheep, (x, z, moves) in before.items():
        x1, z1, moves1 = after[sheep]
        # One block per tick: three blocks walked, so the sheep stands 1 or 3 blocks away (each step changes
        # the parity of x + z).
        if moves1 - moves != 3 or abs(x1 - x) + abs(z1 - z) not in (1, 3):
            raise Failure(f"{sheep} went from {(x, z)} ({moves} moves) to {(x1, z1)} ({moves1}) in 3 ticks")
    driver.screenshot(os.path.join(out, "08-clock-stepped.png"))
    driver.click("#time-resume")
    driver.wait("time running", "return document.querySelector('#time-state').dataset.state === 'running'")
    print(f"clock: paused at tick {tick}, stepped 3 ticks; {len(before)} sheep walked 3 blocks each")


def without_time_control(args, groups, driver, env):
    """A mod without the extension (the testkit's mock mod, spawned by gabp inspect): the clock is disabled."""
    inspect = Group("gabp inspect (mock mod)", [args.gabp, "inspect", "--spawn", args.mock_mod], env)
    groups.append(inspect)
    url = inspect.first_line(r"inspector at (http://127\.0\.0\.1:\d+/s/[0-9a-f]+/)").group(1)
    driver.go(url)
    driver.wait("the mock mod's page", "return document.documentElement.dataset.readyMs"
                " && document.querySelector('#status').dataset.state === 'connected'")
    enabled = driver.js("return ['#time-pause', '#time-resume', '#step-ticks', '#time-step']"
                        ".filter((id) => !document.querySelector(id).disabled)")
    if enabled or driver.js("return document.querySelector('#time-section').dataset.available") != "false":
        raise Failure(f"a mod without time control left {enabled} enabled")
    note = driver.js(text_of("#time-note"))
    if "does not advertise time control" not in note:
        raise Failure(f"the clock's note is {note!r}")
    show(driver, "#time-section")
    driver.screenshot(os.path.join(args.out, "11-no-time-control.png"))
    inspect.stop()
    print("clock: disabled for a mod without time control")


def run(args, groups, driver, home):
    token = secrets.token_hex(32)
    env = dict(os.environ, XDG_CONFIG_HOME=home, HOME=home, XDG_RUNTIME_DIR=home, GABP_TOKEN=token,
               RUST_LOG="warn")
    for name in ("GABP_SERVER_PORT", "GABS_GAME_ID"):
        env.pop(name, None)
    game = Group("gabp mod", [args.gabp, "mod", "--listen", "tcp://127.0.0.1:0", "--no-bridge-json"], env)
    groups.append(game)
    endpoint = game.first_line(r"listening on (\S+)").group(1)
    inspect = Group("gabp inspect", [args.gabp, "inspect", "--connect", endpoint], env)
    groups.append(inspect)
    url = inspect.first_line(r"inspector at (http://127\.0\.0\.1:\d+/s/[0-9a-f]+/)").group(1)
    driver_port = free_port()
    chromedriver = Group("chromedriver", [args.chromedriver, f"--port={driver_port}"], env,
                         stdout=subprocess.DEVNULL)
    groups.append(chromedriver)
    deadline = time.monotonic() + PATIENCE
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{driver_port}/status", timeout=5) as r:
                if json.load(r)["value"]["ready"]:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise Failure(f"chromedriver did not start: {chromedriver.stderr()}")
        time.sleep(0.1)
    driver.start(driver_port, args.chromium, os.path.join(home, "chromium-profile"))
    out = args.out
    os.makedirs(out, exist_ok=True)
    ready = ("return document.documentElement.dataset.readyMs"
             " && document.querySelector('#status').dataset.state === 'connected'"
             " ? Number(document.documentElement.dataset.readyMs) : null")

    # Load time: navigation start to the page loaded and showing "connected", over a few loads.
    loads = []
    for _ in range(5):
        driver.go(url)
        loads.append(driver.wait("the page ready and connected", ready))
    print(f"page load time (navigation start to ready and connected), ms: {loads}; "
          f"first {loads[0]}, median {statistics.median(loads)}, max {max(loads)}")

    identity = driver.js(text_of("#identity"))
    if "GABP Voxel Demo" not in identity or "voxel-demo" not in identity:
        raise Failure(f"the identity does not name the demo game: {identity!r}")
    driver.wait("the tool list", "return document.querySelectorAll('details.tool').length >= 10")
    driver.screenshot(os.path.join(out, "01-connected.png"))

    # world/place_block from its form.
    place = tool("world/place_block")
    driver.click(f"{place} > summary")
    for field, value in (("x", "3"), ("y", "4"), ("z", "5")):
        driver.type(f'{place} input[name="{field}"]', value)
    driver.select(f'{place} select[name="blockType"]', "oak_planks")
    driver.click(f"{place} button.call")
    result = driver.wait("the result of world/place_block", text_of(f"{place} .outcome.ok .result"))
    if json.loads(result) != {"success": True, "blockPlaced": "oak_planks"}:
        raise Failure(f"world/place_block showed {result!r}")
    show(driver, place)
    driver.screenshot(os.path.join(out, "02-place-block-result.png"))

    # The world/block_change event in the live log, and the channel filter.
    line = '#log li.event[data-channel="world/block_change"]'
    payload = driver.wait("the world/block_change event in the log", text_of(f"{line} .payload"))
    if json.loads(payload) != {"x": 3, "y": 4, "z": 5, "block": "oak_planks"}:
        raise Failure(f"the log shows world/block_change {payload!r}")
    driver.select("#channel-filter", "world/block_change")
    hidden = driver.js("return [...document.querySelectorAll('#log li.event')]"
                       ".filter(l => l.dataset.channel !== 'world/block_change' && !l.hidden).length")
    if hidden != 0:
        raise Failure(f"the channel filter left {hidden} events of other channels visible")
    show(driver, "#events-section")
    driver.screenshot(os.path.join(out, "03-event-log.png"))
    driver.select("#channel-filter", "all channels")

    # A bad value: the mod's -32602 field error next to the field.
    driver.type(f'{place} input[name="x"]', "three")
    driver.click(f"{place} button.call")
    error = driver.wait("the field error of x", text_of(f'{place} .field.invalid[data-field="x"] .field-error'))
    if "not of type" not in error:
        raise Failure(f"the field error of x is {error!r}")
    label = driver.js(text_of(f"{place} .outcome.error .label"))
    if not label or "-32602" not in label:
        raise Failure(f"the outcome does not show -32602: {label!r}")
    others = driver.js(f"return document.querySelectorAll('{place} .field.invalid').length")
    if others != 1:
        raise Failure(f"{others} fields are highlighted, expected only x")
    show(driver, place)
    driver.screenshot(os.path.join(out, "04-field-error.png"))

    # world/render: the picture of the result shown as an image.
    render = tool("world/render")
    driver.click(f"{render} > summary")
    driver.type(f'{render} input[name="scale"]', "4")
    driver.click(f"{render} button.call")
    size = driver.wait("the rendered picture", f"const i = document.querySelector('{render} .outcome img');"
                       " return i && i.complete && i.naturalWidth > 0 ? [i.naturalWidth, i.naturalHeight] : null")
    show(driver, render)
    driver.screenshot(os.path.join(out, "05-render-image.png"))
    print(f"world/render picture: {size[0]}x{size[1]}")

    # An attention item, opened by demo/raise_error, acknowledged from the page.
    raise_error = tool("demo/raise_error")
    driver.click(f"{raise_error} > summary")
    driver.type(f'{raise_error} input[name="message"]', "the lava reached the village")
    driver.click(f"{raise_error} button.call")
    driver.wait("the result of demo/raise_error", text_of(f"{raise_error} .outcome.ok .result"))
    summary = driver.wait("the open attention item", text_of("#attention .item .summary"))
    show(driver, "#identity-section")
    driver.screenshot(os.path.join(out, "06-attention-open.png"))
    driver.click("#attention button.ack")
    driver.wait("the attention cleared", text_of("#attention .clear"))
    driver.wait("attention/cleared in the log", text_of('#log li[data-channel="attention/cleared"]'))
    show(driver, "#identity-section")
    driver.screenshot(os.path.join(out, "07-attention-acknowledged.png"))
    print(f"attention item shown and acknowledged: {summary!r}")

    # The clock: pause the demo, step 3 ticks, and every sheep has walked exactly three blocks (one per tick).
    clock(driver, out)

    # The game restarts at the same place: the page shows it lost, then back.
    game.stop()
    driver.wait("the lost connection", "return document.querySelector('#status').dataset.state === 'reconnecting'")
    driver.screenshot(os.path.join(out, "09-game-gone.png"))
    restarted = Group("gabp mod (restarted)",
                      [args.gabp, "mod", "--listen", endpoint, "--no-bridge-json"], env)
    groups.append(restarted)
    restarted.first_line(r"listening on ")
    driver.wait("the connection back", "return document.querySelector('#status').dataset.state === 'connected'"
                " && document.querySelector('#status-detail').textContent.includes('#2')")
    driver.wait("the tools again", "return document.querySelectorAll('details.tool').length >= 10")
    driver.screenshot(os.path.join(out, "10-game-back.png"))

    if args.mock_mod:
        without_time_control(args, groups, driver, env)
    else:
        print("skipped: the clock of a mod without time control (no --mock-mod)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("gabp")
    parser.add_argument("--out", default="target-ci-artifacts/inspect")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    parser.add_argument("--mock-mod", help="gabp-testkit-mock-mod, a mod without time control")
    args = parser.parse_args()
    groups = []
    driver = None
    status = 0
    with tempfile.TemporaryDirectory() as home:
        try:
            driver = WebDriver()
            run(args, groups, driver, home)
            print("PASS: the inspector page works in headless Chromium")
        except Failure as e:
            print(f"FAIL: {e}", file=sys.stderr)
            for group in groups:
                print(f"--- {group.name} stderr:\n{group.stderr()}", file=sys.stderr)
            status = 1
        finally:
            if driver is not None:
                driver.quit()
            for group in reversed(groups):
                group.stop()
            left = [g.name for g in groups if not g.gone()]
            if left:
                print(f"FAIL: processes left behind by: {', '.join(left)}", file=sys.stderr)
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
