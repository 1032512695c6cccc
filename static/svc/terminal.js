// An open session in the dashboard: a terminal (xterm.js over /ws) or a chat (/ws/chat).
"use strict";

// Open sessions are tabs: each keeps its socket while another is shown.
const views = new Map(); // session id → {view, tab, close(), shown()}
let currentTab = null;

// Shows the tab `id` in the main pane (the layout switches to the session view).
function activate(id) {
  currentTab = id && views.has(id) ? id : null;
  for (const [key, open] of views) {
    const on = key === currentTab;
    open.view.hidden = !on;
    open.view.classList.toggle("active", on);
    open.tab.setAttribute("aria-selected", String(on));
    open.tab.tabIndex = on ? 0 : -1;
  }
  const box = document.getElementById("session-panel");
  document.getElementById("session-none").hidden = views.size > 0;
  if (currentTab) box.dataset.sessionId = currentTab;
  if (window.svcLayout) {
    window.svcLayout.show(currentTab ? "session" : "sessions");
    if (currentTab) window.svcLayout.seen(currentTab);
  }
  const open = currentTab && views.get(currentTab);
  if (open && open.shown) open.shown();
}

// The order of the tabs, the one shown, and a way to show another (the keyboard shortcuts).
window.svcTabs = { ids: () => [...views.keys()], current: () => currentTab, activate };

function closeView(id) {
  const open = views.get(id);
  if (!open) return;
  if (open.close) open.close();
  open.view.remove();
  open.tab.remove();
  views.delete(id);
  activate([...views.keys()].pop());
}

// A new tab and view for `session`, or null when it is open already (its tab is shown).
function panel(session) {
  if (views.has(session.id)) { activate(session.id); return null; }
  const label = `${session.agent} · ${session.kind} · ${session.id.slice(0, 8)}`;
  const tab = svc.el("button", { type: "button", role: "tab", className: "session-tab", textContent: label, title: session.title || label, onclick: () => activate(session.id) });
  tab.dataset.sessionId = session.id;
  const stop = svc.el("button", { type: "button", textContent: "Stop", onclick: () => svc.api("DELETE", `sessions/${session.id}`) });
  const changes = svc.el("button", { type: "button", textContent: "Changes", title: "What this session changed in its git workspace", onclick: () => { location.hash = `#view=diff&of=sessions/${session.id}`; } });
  const close = svc.el("button", { type: "button", textContent: "Close", onclick: () => closeView(session.id) });
  const title = svc.el("h2", { textContent: `${session.title ? `${session.title} — ` : ""}${session.agent} · ${session.kind} · ${session.workspace}` });
  const body = svc.el("div", { className: "session-body" });
  const view = svc.el("div", { className: "session-view", role: "tabpanel", ariaLabel: label }, svc.el("div", { className: "session-head" }, title, changes, stop, close), body);
  view.dataset.sessionId = session.id;
  tab.id = `tab-${session.id}`;
  view.setAttribute("aria-labelledby", tab.id);
  document.getElementById("session-tabs").append(tab);
  document.getElementById("session-views").append(view);
  views.set(session.id, { view, tab });
  activate(session.id);
  document.dispatchEvent(new CustomEvent("svc:session-opened", { detail: { id: session.id } }));
  return body;
}

function onClose(session, close, shown) {
  Object.assign(views.get(session.id), { close, shown });
}

function openTerminal(session) {
  const body = panel(session);
  if (!body) return;
  const term = new Terminal({ cursorBlink: true, scrollback: 10000, fontSize: 13 });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  const screen = svc.el("div", { className: "term-screen" });
  body.append(screen);
  term.open(screen);
  fit.fit();
  const encoder = new TextEncoder();
  let ws = null;
  let closed = false;
  let delay = 500;
  // Keys typed while the socket is still opening (a busy machine, a reconnect) wait for it;
  // keys typed while it is closed are dropped, as a disconnected terminal would.
  const early = [];
  const sendSize = () => ws && ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
  const connect = () => {
    ws = svc.ws(`/ws?session_id=${session.id}`);
    ws.binaryType = "arraybuffer";
    let first = true; // the scrollback frame: on a reconnect it replaces what is on screen
    ws.onopen = () => { delay = 500; sendSize(); for (const keys of early.splice(0)) ws.send(keys); };
    ws.onmessage = (event) => {
      if (typeof event.data !== "string") {
        if (first) { term.reset(); first = false; }
        term.write(new Uint8Array(event.data));
        return;
      }
      const message = JSON.parse(event.data);
      if (message.type === "exited") { closed = true; term.write(`\r\n\x1b[2m[process exited with code ${message.exit_code}]\x1b[0m\r\n`); }
      if (message.type === "skipped") term.write(`\r\n\x1b[2m[svc: ${message.bytes} bytes of output skipped]\x1b[0m\r\n`);
    };
    ws.onclose = (event) => {
      early.length = 0; // what waited for a socket that closed is dropped, not sent on a later try
      if (event.code === 4404) { term.write("\r\n[no such session]\r\n"); return; }
      // A dropped connection comes back with backoff: the scrollback repaints the screen (after
      // a daemon restart the session reports itself exited).
      if (!closed && event.code !== 1000) { setTimeout(connect, delay); delay = Math.min(delay * 2, 10000); }
    };
  };
  connect();
  const sendKeys = (data) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(encoder.encode(data));
    else if (ws.readyState === WebSocket.CONNECTING) early.push(encoder.encode(data));
  };
  const keys = keyBar(term, sendKeys);
  body.append(keys.bar);
  const input = term.onData((data) => sendKeys(keys.modify(data)));
  const resized = term.onResize(sendSize);
  const onWindowResize = () => fit.fit();
  window.addEventListener("resize", onWindowResize);
  // The screen's own size changes too (the key bar below it, a tab shown again): refit then.
  const watcher = new ResizeObserver(() => { if (screen.clientHeight > 0 && screen.clientWidth > 0) fit.fit(); });
  watcher.observe(screen);
  term.focus();
  onClose(session, () => { closed = true; input.dispose(); resized.dispose(); window.removeEventListener("resize", onWindowResize); watcher.disconnect(); ws.close(); term.dispose(); },
    () => { fit.fit(); term.focus(); });
}

// Keys a phone's keyboard lacks, under the terminal: a sticky Ctrl (the next key goes as its
// control character, so Ctrl then c interrupts), Esc, Tab and the arrows (in the cursor-key mode
// the program asked for). The buttons leave the focus (and a phone's keyboard) on the terminal.
function keyBar(term, sendKeys) {
  let ctrl = false;
  const arm = (on) => { ctrl = on; ctrlButton.setAttribute("aria-pressed", String(on)); };
  const key = (label, title, action) => svc.el("button", {
    type: "button", className: "term-key", textContent: label, title, ariaLabel: title,
    onmousedown: (event) => event.preventDefault(),
    onclick: () => { action(); term.focus(); },
  });
  const arrow = (label, title, final) => key(label, title, () => {
    const app = term.modes && term.modes.applicationCursorKeysMode;
    const sequence = ctrl ? `\x1b[1;5${final}` : `\x1b${app ? "O" : "["}${final}`;
    arm(false);
    sendKeys(sequence);
  });
  const plain = (label, title, sequence) => key(label, title, () => { arm(false); sendKeys(sequence); });
  const ctrlButton = key("Ctrl", "Control: the next key is sent with Ctrl", () => arm(!ctrl));
  ctrlButton.setAttribute("aria-pressed", "false");
  const bar = svc.el("div", { className: "term-keys", role: "toolbar", ariaLabel: "terminal keys" },
    ctrlButton, plain("Esc", "Escape", "\x1b"), plain("Tab", "Tab", "\t"),
    arrow("←", "Left", "D"), arrow("↑", "Up", "A"), arrow("↓", "Down", "B"), arrow("→", "Right", "C"));
  // With Ctrl armed, one typed character becomes its control character (c → \x03, [ → Esc).
  const modify = (data) => {
    if (!ctrl || data.length !== 1) return data;
    arm(false);
    const code = data.toUpperCase().charCodeAt(0);
    if (code >= 64 && code <= 95) return String.fromCharCode(code - 64);
    if (data === " " || data === "2") return "\x00";
    if (data === "?") return "\x7f";
    return data;
  };
  return { bar, modify };
}

// Agent messages are Markdown: rendered by marked, raw HTML in them shown as text, the result
// sanitised by DOMPurify, code blocks highlighted by highlight.js (when the libraries loaded).
const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
if (window.marked) marked.use({ gfm: true, breaks: true, renderer: { html: (token) => escapeHtml(token.text || token.raw || "") } });
if (window.DOMPurify) {
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") { node.setAttribute("target", "_blank"); node.setAttribute("rel", "noopener noreferrer"); }
  });
}
if (window.hljs) hljs.configure({ ignoreUnescapedHTML: true });

function renderMarkdown(node, text) {
  if (!window.marked || !window.DOMPurify) { node.textContent = text; return; }
  node.innerHTML = DOMPurify.sanitize(marked.parse(text), { FORBID_TAGS: ["style", "form", "input", "button"] });
  if (window.hljs) node.querySelectorAll("pre code").forEach((code) => hljs.highlightElement(code));
}

// Scrolls an open chat to the message that holds event `at` and marks it (a search hit).
function revealEvent(sessionId, at) {
  const open = views.get(sessionId);
  if (!open) return false;
  const nodes = [...open.view.querySelectorAll(".chat-log [data-seq]")].filter((n) => Number(n.dataset.seq) <= at);
  const node = nodes.pop();
  if (!node) return false;
  open.view.querySelectorAll(".chat-hit").forEach((n) => n.classList.remove("chat-hit"));
  node.classList.add("chat-hit");
  node.dataset.hit = String(at);
  node.scrollIntoView({ block: "center" });
  return true;
}

// Calls `report(shown)` now and whenever it changes whether the chat tab `id` (its `view`) is what
// the person sees: its tab activated or another one (activate() toggles `hidden` on the views),
// the layout switching to another view (`svc:view`), the browser tab hidden or shown. svc notifies
// a turn that ends while no page shows its session (contract §15). Returns a function that stops.
function watchShown(id, view, report) {
  let last = null;
  const check = () => {
    const now = Boolean(window.svcLayout && window.svcTabs) && window.svcLayout.current() === "session"
      && window.svcTabs.current() === id && document.visibilityState === "visible";
    if (now !== last) { last = now; report(now); }
  };
  const observer = new MutationObserver(check);
  observer.observe(view, { attributes: true, attributeFilter: ["hidden"] });
  document.addEventListener("svc:view", check);
  document.addEventListener("visibilitychange", check);
  check();
  return () => {
    observer.disconnect();
    document.removeEventListener("svc:view", check);
    document.removeEventListener("visibilitychange", check);
  };
}

function openChat(session, { resume = false, at = null } = {}) {
  const body = panel(session);
  if (!body) { if (at !== null) revealEvent(session.id, at); return; }
  let pendingAt = at; // the search hit to scroll to once the replay has reached it
  let eventSeq = null;
  const log = svc.el("div", { className: "chat-log" });
  const text = svc.el("textarea", { rows: 3, placeholder: "Message the agent (Enter sends, Shift+Enter new line)", ariaLabel: "message" });
  const sendButton = svc.el("button", { type: "button", className: "chat-send", textContent: "Send" });
  const cancel = svc.el("button", { type: "button", className: "chat-cancel", textContent: "Cancel turn", hidden: true });
  body.append(log, svc.el("div", { className: "chat-input" }, text, svc.el("div", { className: "chat-buttons" }, sendButton, cancel)));
  const ws = svc.ws("/ws/chat");
  // A prompt sent while the socket is still opening waits for it, after the `open` message.
  const early = [];
  const send = (message) => {
    if (ws.readyState === WebSocket.CONNECTING) early.push(JSON.stringify(message));
    else ws.send(JSON.stringify(message));
  };
  // The Cancel button shows only while a turn runs.
  const running = (on) => { cancel.hidden = !on; };
  let bubble = null; // the agent message being streamed: {node, text, pending: a render waits for the next frame}
  const tools = new Map(); // tool call id → its row, updated in place
  const add = (cls, content) => {
    const node = svc.el("div", { className: `chat-${cls}`, textContent: content });
    if (eventSeq !== null && eventSeq !== undefined) node.dataset.seq = String(eventSeq);
    log.append(node);
    if (pendingAt === null) log.scrollTop = log.scrollHeight;
    return node;
  };
  const stream = (chunk) => {
    if (!bubble) bubble = { node: add("agent", ""), text: "", pending: false };
    bubble.text += chunk;
    if (bubble.pending) return;
    bubble.pending = true;
    const shown = bubble;
    requestAnimationFrame(() => { shown.pending = false; renderMarkdown(shown.node, shown.text); if (pendingAt === null) log.scrollTop = log.scrollHeight; });
  };
  // Thoughts stream into one collapsed block per run of thought chunks.
  let thinking = null;
  const think = (chunk) => {
    if (!thinking) {
      const node = add("thought", "");
      const text = svc.el("div", { className: "thought-text" });
      node.append(svc.el("details", {}, svc.el("summary", { textContent: "Thinking" }), text));
      thinking = text;
    }
    thinking.textContent += chunk;
  };
  const tool = (e) => {
    const id = e.toolCallId || e.tool_call_id;
    let row = id && tools.get(id);
    if (!row) {
      row = add("tool", "");
      row.append(svc.el("span", { className: "tool-title" }), " ", svc.el("span", { className: "tool-status" }));
      row.querySelector(".tool-title").textContent = `⚙ ${e.title || id || "tool call"}`;
      if (id) { row.dataset.toolCallId = id; tools.set(id, row); }
    }
    if (e.title) row.querySelector(".tool-title").textContent = `⚙ ${e.title}`;
    const status = e.status || row.dataset.status || "pending";
    row.dataset.status = status;
    row.querySelector(".tool-status").textContent = status;
  };
  ws.onopen = () => {
    ws.send(JSON.stringify({ type: "open", session_id: session.id, resume }));
    for (const message of early.splice(0)) ws.send(message);
  };
  ws.onclose = () => running(false);
  ws.onmessage = (event) => {
    const e = JSON.parse(event.data);
    eventSeq = e.seq;
    handle(e);
    if (pendingAt !== null && e.seq !== null && e.seq !== undefined && e.seq >= pendingAt) {
      const at = pendingAt;
      pendingAt = null;
      requestAnimationFrame(() => revealEvent(session.id, at));
    }
  };
  const handle = (e) => {
    if (e.kind === "agent_message_chunk") { stream(e.text || ""); return; }
    if (e.kind !== "agent_thought_chunk") { bubble = null; thinking = null; }
    if (e.kind === "user_message_chunk") { add("user", e.text); running(true); }
    else if (e.kind === "agent_thought_chunk") think(e.text || "");
    else if (e.kind === "tool_call" || e.kind === "tool_call_update") tool(e);
    else if (e.kind === "plan") add("plan", (e.entries || []).map((p) => `${p.status === "completed" ? "☑" : "☐"} ${p.content}`).join("\n"));
    else if (e.kind === "turn_end") {
      running(false);
      const sep = add("turn-end", e.stop_reason && e.stop_reason !== "end_turn" && e.stop_reason !== "error" ? `turn ${e.stop_reason}` : "");
      sep.setAttribute("role", "separator");
    }
    else if (e.kind === "error" && /^prompt failed: /.test(e.message || "")) failed(e);
    else if (e.kind === "error") add("error", e.message);
    else if (e.kind === "session") {
      running(Boolean(e.busy) && e.status === "running");
      add("end", `session ${e.status}${e.agent_info && e.agent_info.name ? ` · ${e.agent_info.name} ${e.agent_info.version}` : ""}`);
    }
    else if (e.kind === "permission_request" && !e.replay) askPermission(e);
    else if (e.kind === "permission_resolved") add("end", permissionLine(e));
    else if (e.kind === "handover") add("handover", `Handover code ${e.code}: pick this session up on another device within ${e.expires_in} s (dashboard → Pick up, or \`manage.py pickup ${e.code}\`).`);
  };
  // A failed prompt: the agent's own words, and its log (its stderr) one click away.
  const failed = (e) => {
    const node = add("agent chat-agent-error", e.message);
    if (!e.log) return;
    const text = svc.el("pre", { className: "agent-log" });
    const box = svc.el("details", {}, svc.el("summary", { textContent: "The agent's log" }), text);
    box.addEventListener("toggle", async () => {
      if (!box.open || text.textContent) return;
      text.textContent = "loading…";
      try { text.textContent = (await svc.api("GET", `sessions/${session.id}/log`)).log || "(the agent wrote nothing on stderr)"; }
      catch (error) { text.textContent = error.message; }
    });
    node.append(box);
  };
  const askPermission = (e) => {
    const box = add("permission", `Allow ${(e.tool_call && e.tool_call.title) || "this action"}? `);
    for (const option of e.options) {
      box.append(svc.el("button", { type: "button", textContent: option.name, onclick: () => {
        send({ type: "permission", request_id: e.request_id, option_id: option.option_id });
        box.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      } }));
    }
  };
  const prompt = () => {
    if (!text.value.trim()) return;
    send({ type: "prompt", session_id: session.id, text: text.value });
    text.value = "";
    text.focus();
  };
  text.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    prompt();
  });
  sendButton.onclick = prompt;
  cancel.onclick = () => send({ type: "cancel", session_id: session.id });
  text.focus();
  // Sent after the `open` (a socket still opening queues it): the server holds the subscription.
  const unwatch = watchShown(session.id, views.get(session.id).view, (visible) => send({ type: "visible", session_id: session.id, visible }));
  onClose(session, () => { unwatch(); ws.close(); }, () => text.focus());
}

function permissionLine(e) {
  const what = (e.tool_call && e.tool_call.title) || "an action";
  if (e.policy) return `permission for ${what} ${e.allowed ? "allowed" : "refused"} by svc (${e.policy})`;
  return `permission ${e.answered ? e.option_id : "refused (no answer)"}`;
}

// Opens (or shows) a session's tab; `at` scrolls a chat to that event (a search hit).
function openSession(session, { at = null } = {}) {
  if (session.kind === "terminal") openTerminal(session); else openChat(session, { at });
}
