// The inspector page: identity, capabilities, tools, resources, attention and the live event log of one mod,
// through gabp inspect's API on the same origin (relative URLs: the secret stays in the path).
"use strict";

const { el } = Forms;
const $ = (selector) => document.querySelector(selector);
let generation = null;
const lastSeq = new Map();
const channels = new Set();
let eventCount = 0;
// The mod's time-control extension (its object in capabilities.extensions), or null without it.
let timeControl = null;

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  };
  const response = await fetch(`api/${path}`, init);
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch (e) {
    return { error: { code: null, message: `HTTP ${response.status}: ${text.slice(0, 200)}` } };
  }
}

function pretty(value) {
  return JSON.stringify(value, null, 2);
}

function describeError(error) {
  return error.code === null || error.code === undefined ? error.message : `${error.code} ${error.message}`;
}

function row(list, key, value) {
  if (value === undefined || value === null || value === "") return;
  list.append(el("dt", { text: key }), el("dd", {}, value instanceof Node ? value : String(value)));
}

function chips(values) {
  const span = el("span");
  for (const value of values || []) span.append(el("span", { class: "chip", text: value }));
  return values && values.length ? span : "none";
}

// An object as chips: `key` for a member that is itself an object (its JSON as the tooltip), else `key: value`.
function members(value) {
  if (value === null || typeof value !== "object") return el("code", { text: JSON.stringify(value) });
  const span = el("span");
  for (const [key, member] of Object.entries(value)) {
    const composite = member !== null && typeof member === "object";
    span.append(el("span", { class: "chip", title: composite ? JSON.stringify(member) : null,
      text: composite ? key : `${key}: ${member}` }));
  }
  return span;
}

async function loadInfo() {
  const info = await api("info");
  const welcome = info.welcome || {};
  const identity = $("#identity");
  identity.replaceChildren();
  const app = welcome.app || {};
  row(identity, "game", [app.name, app.version].filter(Boolean).join(" "));
  const server = welcome.serverInfo || {};
  row(identity, "mod", [server.name, server.version].filter(Boolean).join(" "));
  row(identity, "author", server.author);
  row(identity, "agent id", welcome.agentId);
  row(identity, "schema", welcome.schemaVersion);
  row(identity, "endpoint", info.endpoint);
  const caps = welcome.capabilities || {};
  const list = $("#capabilities");
  list.replaceChildren();
  row(list, "methods", chips(caps.methods));
  row(list, "events", chips(caps.events));
  row(list, "resources", chips(caps.resources));
  for (const [key, value] of Object.entries(caps)) {
    if (["methods", "events", "resources"].includes(key)) continue;
    row(list, key, Array.isArray(value) ? chips(value.map(String)) : members(value));
  }
  for (const channel of caps.events || []) addChannel(channel);
  document.title = `gabp inspect: ${app.name || welcome.agentId || "mod"}`;
  await setupTime(caps.extensions || {});
}

// The clock (SPEC/1.0 extensions.md §time-control): enabled only when the mod advertises the extension.
async function setupTime(extensions) {
  const ext = extensions["time-control"];
  timeControl = ext !== null && typeof ext === "object" ? ext : null;
  $("#time-section").dataset.available = String(timeControl !== null);
  const tick = $("#tick");
  tick.textContent = "-";
  delete tick.dataset.tick;
  const state = $("#time-state");
  state.dataset.state = "unknown";
  state.textContent = "unknown";
  if (timeControl === null) {
    state.textContent = "no time control";
    for (const id of ["#time-pause", "#time-resume", "#step-ticks", "#time-step"]) $(id).disabled = true;
    timeNote("This mod does not advertise time control: its clock cannot be paused or stepped from here.");
    return;
  }
  if (Number.isInteger(timeControl.maxStepTicks)) $("#step-ticks").max = String(timeControl.maxStepTicks);
  $("#step-ticks").disabled = false;
  $("#time-step").disabled = false;
  timeNote("");
  await callTime("time/status");
}

function timeNote(text, error) {
  const note = $("#time-note");
  note.textContent = text;
  note.className = error ? "field-error" : "muted";
}

// A time state from an answer or a time/changed event. The tick never decreases (SPEC/1.0 extensions.md
// §time-control): a state older than the one shown is left out.
function showTime(time) {
  if (timeControl === null || !time || typeof time.tick !== "number") return;
  const tick = $("#tick");
  if (tick.dataset.tick !== undefined && time.tick < Number(tick.dataset.tick)) return;
  tick.dataset.tick = String(time.tick);
  tick.textContent = String(time.tick);
  const state = $("#time-state");
  state.dataset.state = time.paused ? "paused" : "running";
  state.textContent = time.paused ? "paused" : "running";
  $("#time-pause").disabled = time.paused;
  $("#time-resume").disabled = !time.paused;
}

async function callTime(method, params) {
  const answer = await api("time", { method, ...params });
  if (answer.error) {
    timeNote(`${method}: ${describeError(answer.error)}`, true);
    return;
  }
  timeNote("");
  showTime(answer.time);
}

async function loadTools() {
  const answer = await api("tools");
  const box = $("#tools");
  box.replaceChildren();
  if (answer.error) {
    box.append(el("p", { class: "field-error", text: `tools/list: ${describeError(answer.error)}` }));
    return;
  }
  $("#tool-count").textContent = `(${answer.tools.length})`;
  for (const tool of answer.tools) box.append(toolCard(tool));
  filterTools();
}

function toolCard(tool) {
  const outcome = el("div", { class: "outcome" });
  const form = Forms.build(tool, async (args) => {
    const button = form.querySelector("button.call");
    button.disabled = true;
    outcome.className = "outcome pending";
    outcome.replaceChildren(el("span", { class: "muted", text: "Calling..." }));
    const answer = await api("call", { name: tool.name, arguments: args });
    button.disabled = false;
    showOutcome(outcome, form, answer);
  });
  const tags = (tool.tags || []).map((t) => el("span", { class: "chip", text: t }));
  return el("details", { class: "tool", "data-tool": tool.name },
    el("summary", {}, el("span", { class: "name", text: tool.name }), ` ${tool.title || ""} `, ...tags),
    el("div", { class: "tool-body" },
      el("div", {}, el("p", { text: tool.description || "" }), form),
      outcome));
}

function showOutcome(outcome, form, answer) {
  outcome.replaceChildren();
  if (answer.error) {
    outcome.className = "outcome error";
    const placed = Forms.showErrors(form, answer.error);
    outcome.append(el("div", { class: "label", text: `Error ${describeError(answer.error)}` }));
    if (placed) outcome.append(el("div", { class: "muted", text: "See the highlighted fields." }));
    if (answer.error.data !== undefined && answer.error.data !== null) {
      outcome.append(el("pre", { text: pretty(answer.error.data) }));
    }
    return;
  }
  outcome.className = "outcome ok";
  outcome.append(el("div", { class: "label", text: "Result" }), el("pre", { class: "result", text: pretty(answer.result) }));
  for (const item of answer.content || []) outcome.append(contentItem(item));
}

function contentItem(item) {
  if (item.type === "image") {
    const img = el("img", { src: `data:${item.mimeType};base64,${item.data}`, alt: `${item.mimeType} from the result` });
    // Small pictures (pixel art, maps) shown at a whole multiple of their size.
    img.addEventListener("load", () => {
      const times = Math.floor(256 / Math.max(img.naturalWidth, img.naturalHeight, 1));
      if (times > 1) img.style.width = `${img.naturalWidth * times}px`;
    });
    return img;
  }
  if (item.type === "audio") {
    return el("audio", { controls: true, src: `data:${item.mimeType};base64,${item.data}` });
  }
  return el("pre", { text: pretty(item) });
}

function filterTools() {
  const text = $("#tool-filter").value.trim().toLowerCase();
  for (const card of document.querySelectorAll("details.tool")) {
    card.hidden = text !== "" && !card.textContent.toLowerCase().includes(text);
  }
}

async function loadResources() {
  const answer = await api("resources");
  const box = $("#resources");
  box.replaceChildren();
  if (answer.error) {
    box.append(el("p", { class: "muted", text: `resources/list: ${describeError(answer.error)}` }));
    return;
  }
  if (answer.resources.length === 0) box.append(el("p", { class: "muted", text: "No resources." }));
  await Promise.all(answer.resources.map(async (info) => {
    const content = el("div", { class: "muted", text: "Reading..." });
    box.append(el("div", { class: "resource", "data-uri": info.uri },
      el("span", { class: "uri", text: info.uri }), ` ${info.name || ""} `,
      el("span", { class: "muted", text: [info.mimeType, info.description].filter(Boolean).join(": ") }),
      content));
    const read = await api("resource", { uri: info.uri });
    content.replaceWith(resourceContent(read));
  }));
}

function resourceContent(read) {
  if (read.error) return el("div", { class: "field-error", text: describeError(read.error) });
  const { content, mimeType, encoding } = read.resource;
  if (encoding === "base64" && typeof content === "string") {
    if ((mimeType || "").startsWith("image/")) return el("img", { src: `data:${mimeType};base64,${content}`, alt: mimeType });
    const bytes = atob(content);
    const hex = [...bytes.slice(0, 64)].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join(" ");
    return el("pre", { text: `${bytes.length} bytes of ${mimeType || "binary"}: ${hex}${bytes.length > 64 ? " ..." : ""}` });
  }
  if (typeof content === "string") {
    try {
      return el("pre", { text: pretty(JSON.parse(content)) });
    } catch (e) {
      return el("pre", { text: content });
    }
  }
  return el("pre", { text: pretty(content) });
}

async function loadAttention() {
  const answer = await api("attention");
  const box = $("#attention");
  box.replaceChildren();
  if (answer.error) {
    box.append(el("p", { class: "muted", text: `attention/current: ${describeError(answer.error)}` }));
    return;
  }
  const item = answer.attention;
  if (!item) {
    box.append(el("p", { class: "clear", text: "No open attention item." }));
    return;
  }
  const details = el("dl");
  row(details, "state", item.state);
  row(details, "severity", item.severity);
  row(details, "blocking", item.blocking ? "yes: game-bound calls wait until it is acknowledged" : "no");
  row(details, "cause", item.causalMethod);
  row(details, "entries", item.totalUrgentEntries);
  row(details, "id", item.attentionId);
  const ack = el("button", { type: "button", class: "ack", text: "Acknowledge" });
  const problem = el("div", { class: "field-error" });
  ack.addEventListener("click", async () => {
    ack.disabled = true;
    const result = await api("ack", { attentionId: item.attentionId });
    if (result.error) {
      problem.textContent = describeError(result.error);
      ack.disabled = false;
      return;
    }
    await loadAttention();
  });
  const samples = (item.sample || []).map((s) => el("li", { text: s.message || JSON.stringify(s) }));
  box.append(el("div", { class: `item${item.blocking ? " blocking" : ""}`, "data-attention": item.attentionId },
    el("strong", { class: "summary", text: item.summary }), details,
    samples.length ? el("ul", {}, ...samples) : null, ack, problem));
}

function addChannel(channel) {
  if (!channel || channels.has(channel)) return;
  channels.add(channel);
  $("#channel-filter").append(el("option", { value: channel, text: channel }));
}

function logLine(kind, channel, ...children) {
  const line = el("li", { class: kind, "data-channel": channel || "" }, ...children);
  const filter = $("#channel-filter").value;
  line.hidden = filter !== "" && channel && channel !== filter;
  const log = $("#log");
  const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.append(line);
  while (log.children.length > 1000) log.firstElementChild.remove();
  if (atBottom) log.scrollTop = log.scrollHeight;
}

function gapLine(channel, missed, afterSeq) {
  const where = afterSeq === undefined ? "" : ` after seq ${afterSeq}`;
  const what = channel ? `${channel}: ` : "";
  logLine("gap", channel, el("span", { text: `gap: ${what}${missed} event${missed === 1 ? "" : "s"} lost${where}` }));
}

function onEvent(event) {
  const channel = event.channel;
  addChannel(channel);
  const last = lastSeq.get(channel);
  if (last !== undefined && event.seq > last + 1) gapLine(channel, event.seq - last - 1, last);
  lastSeq.set(channel, event.seq);
  eventCount++;
  $("#event-count").textContent = `${eventCount} event${eventCount === 1 ? "" : "s"}`;
  logLine("event", channel,
    el("span", { class: "seq", text: `#${event.seq}` }),
    el("span", { class: "channel", text: channel }),
    el("span", { class: "payload", text: JSON.stringify(event.payload) }));
  if (channel.startsWith("attention/")) loadAttention();
  if (channel === "tools/changed") loadTools();
  if (channel === "time/changed") showTime(event.payload);
}

function onFeed(message) {
  switch (message.type) {
    case "state":
      setState(message);
      break;
    case "event":
      onEvent(message.event);
      break;
    case "gap": {
      const last = lastSeq.get(message.channel);
      gapLine(message.channel, message.missed, last);
      if (last !== undefined) lastSeq.set(message.channel, last + message.missed);
      break;
    }
    case "reconnected":
      lastSeq.clear();
      logLine("note", null, "reconnected: events published while disconnected are lost");
      break;
    case "subscribed":
      for (const channel of message.channels) addChannel(channel);
      logLine("note", null, `following ${message.channels.join(", ")}`);
      break;
    case "error":
      logLine("error", null, message.message);
      break;
  }
}

function setState(message) {
  const status = $("#status");
  status.dataset.state = message.state;
  status.textContent = message.state;
  $("#status-detail").textContent = message.detail || "";
  if (message.state === "connected" && generation !== null && message.generation !== generation) {
    // The game came back (perhaps a new version of it): show it afresh.
    refresh();
  }
  if (message.generation !== null) generation = message.generation;
}

async function refresh() {
  await Promise.all([loadInfo(), loadTools(), loadResources(), loadAttention()]);
}

function follow() {
  return new Promise((resolve) => {
    const source = new EventSource("api/events");
    source.onmessage = (message) => {
      onFeed(JSON.parse(message.data));
      resolve();
    };
    source.onerror = () => {
      const status = $("#status");
      status.dataset.state = "disconnected";
      status.textContent = "inspector unreachable";
      $("#status-detail").textContent = "is gabp inspect still running?";
    };
  });
}

async function start() {
  $("#tool-filter").addEventListener("input", filterTools);
  $("#channel-filter").addEventListener("change", () => {
    const filter = $("#channel-filter").value;
    for (const line of $("#log").children) {
      line.hidden = filter !== "" && line.dataset.channel !== "" && line.dataset.channel !== filter;
    }
  });
  $("#clear-log").addEventListener("click", () => $("#log").replaceChildren());
  $("#time-pause").addEventListener("click", () => callTime("time/pause"));
  $("#time-resume").addEventListener("click", () => callTime("time/resume"));
  $("#time-step").addEventListener("click", () => callTime("time/step", { ticks: Number($("#step-ticks").value) }));
  await Promise.all([refresh(), follow()]);
  // When the page was first ready: the browser test reads it as the load time.
  document.documentElement.dataset.readyMs = String(Math.round(performance.now()));
}

start();
