// The dashboard's shared parts: API and socket helpers, the "unreachable" banner, the live
// sessions list with its actions, and the new-session pickers.
"use strict";

const svc = {
  csrf() { return document.querySelector('meta[name="csrf-token"]').content; },
  // Through a tunnel (docs/remote.md) only this page holds the key that opens /api/ and /ws.
  pageKey() { const m = document.querySelector('meta[name="svc-page-key"]'); return m ? m.content : ""; },
  headers() {
    const headers = { "Content-Type": "application/json", "X-CSRFToken": svc.csrf() };
    if (svc.pageKey()) headers["X-Svc-Page-Key"] = svc.pageKey();
    return headers;
  },
  async api(method, path, body) {
    let response;
    try {
      response = await fetch(`/api/${path}`, {
        method,
        headers: svc.headers(),
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "same-origin",
      });
    } catch (error) {
      banner.down();
      throw new Error("svc is unreachable");
    }
    banner.up();
    const data = response.status === 204 ? null : await response.json().catch(() => null);
    // A refusal of the request itself (a wrong pairing code, a forbidden path) is not a logout.
    const refusedBrowser = !data || !data.error || ["not_authenticated", "not_paired", "page_key", "cross_origin"].includes(data.error.code);
    if ((response.status === 401 || response.status === 403) && refusedBrowser) banner.loggedOut(response.status);
    if (!response.ok) throw new Error((data && data.error && data.error.message) || `HTTP ${response.status}`);
    return data;
  },
  ws(path) {
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${path}`;
    return svc.pageKey() ? new WebSocket(url, [`svc.page.${svc.pageKey()}`]) : new WebSocket(url);
  },
  el(tag, props = {}, ...children) {
    const node = Object.assign(document.createElement(tag), props);
    node.append(...children.filter((c) => c !== null && c !== undefined));
    return node;
  },
  age(iso) {
    const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
    if (seconds < 60) return `${seconds} s`;
    if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
    if (seconds < 86400) return `${Math.floor(seconds / 3600)} h`;
    return `${Math.floor(seconds / 86400)} d`;
  },
};
window.svc = svc;

// Says what to do when svc cannot be reached (or the login is gone); hides itself once it can.
const banner = {
  node: document.getElementById("banner"),
  show(message) { this.node.textContent = message; this.node.hidden = false; },
  down() {
    this.show(`svc is not answering at ${location.host}. Start it with \`make run\` (or \`python manage.py runserver\`); this page reconnects by itself.`);
  },
  loggedOut(status) {
    this.show(`svc refused this browser (HTTP ${status}): log in again with the URL \`make run\` printed, or \`python manage.py status\`.`);
  },
  up() { if (!this.node.textContent.startsWith("svc refused")) this.node.hidden = true; },
};

// A live list: the socket sends the complete list on connect and on every change. Returns a
// function that closes it for good.
function subscribe(path, render) {
  let delay = 500;
  let failures = 0;
  let ws = null;
  let stopped = false;
  const open = () => {
    ws = svc.ws(path);
    ws.onopen = () => { delay = 500; failures = 0; banner.up(); };
    ws.onmessage = (event) => render(JSON.parse(event.data));
    ws.onclose = (event) => {
      if (stopped) return;
      if (event.code === 4401 || event.code === 4403) { banner.loggedOut(event.code); return; }
      if (++failures >= 2) banner.down();
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 10000);
    };
  };
  open();
  return () => { stopped = true; ws.close(); };
}
window.subscribe = subscribe;

function listRenderer(id, label) {
  return (items) => document.getElementById(id).replaceChildren(
    ...items.map((item) => svc.el("li", { textContent: label(item) })));
}

// --- sessions ---------------------------------------------------------------------------------

const LIVE = ["starting", "running"];

function sessionStatus(s) {
  if (LIVE.includes(s.status)) return s.status;
  if (s.end_reason) return s.end_reason;  // "stopped when svc stopped", "stopped by you"…
  return s.exit_code === null || s.exit_code === undefined ? s.status : `${s.status} with code ${s.exit_code}`;
}

function sessionActions(s) {
  const live = LIVE.includes(s.status);
  const button = (label, action) => svc.el("button", { type: "button", textContent: label, onclick: action });
  const actions = [button(s.kind === "terminal" ? "Open terminal" : "Open chat", () => openSession(s))];
  if (live) actions.push(button("Stop", () => svc.api("DELETE", `sessions/${s.id}`)));
  if (!live && s.kind !== "terminal") {
    actions.push(button("Resume", () => openChat(s, { resume: true })));
  }
  if (!live) actions.push(button("Remove", () => removeSession(s)));
  return actions;
}

// The live list sends every session; the filter (All / Live / Exited, and text) is applied here.
const sessionsView = { items: [], status: "", q: "" };

function sessionShown(s) {
  const live = LIVE.includes(s.status);
  if (sessionsView.status === "live" && !live) return false;
  if (sessionsView.status === "exited" && live) return false;
  const q = sessionsView.q.trim().toLowerCase();
  return !q || [s.title, s.agent, s.workspace, s.id].some((v) => (v || "").toLowerCase().includes(q));
}

async function removeSession(s) {
  const status = document.getElementById("sessions-status");
  try {
    await svc.api("DELETE", `sessions/${s.id}?remove=1`);
    status.textContent = "";
    // The live list drops it too; removing it here answers the click at once.
    sessionsView.items = sessionsView.items.filter((item) => item.id !== s.id);
    drawSessions();
  } catch (error) {
    status.textContent = error.message;
  }
}

function sessionRow(s) {
  const row = svc.el("tr", { className: `status-${s.status}` });
  row.dataset.sessionId = s.id;
  row.append(svc.el("td", { className: "title", textContent: s.title || "(untitled)" }));
  const cells = [s.agent, s.kind];
  row.append(...cells.map((value) => svc.el("td", { textContent: value })));
  const code = s.exit_code === null || s.exit_code === undefined ? "" : `exit code ${s.exit_code}`;
  row.append(svc.el("td", { className: "status", textContent: sessionStatus(s), title: code }));
  row.append(svc.el("td", { className: "path", textContent: s.workspace }));
  const age = svc.el("td", { className: "age", textContent: svc.age(s.created_at), title: s.created_at });
  age.dataset.since = s.created_at;
  row.append(age);
  row.append(svc.el("td", { className: "actions" }, ...sessionActions(s)));
  return row;
}

// The table is drawn only while its view is shown (a snapshot comes on every change; the sidebar
// is what a person sees meanwhile), and once more when the view comes back.
function drawSessions() {
  if (document.getElementById("sessions-box").hidden) { sessionsView.stale = true; return; }
  sessionsView.stale = false;
  const shown = sessionsView.items.filter(sessionShown);
  const empty = sessionsView.items.length ? "No session matches the filter." : "No sessions yet.";
  document.querySelector("#sessions tbody").replaceChildren(...(shown.length ? shown.map(sessionRow)
    : [svc.el("tr", { className: "empty" }, svc.el("td", { colSpan: 7, textContent: empty }))]));
}

function renderSessions(items) {
  sessionsView.items = items;
  drawSessions();
  // The sidebar (app.js, a module that may load later) reads the same list.
  window.svcSessions = items;
  document.dispatchEvent(new CustomEvent("svc:sessions", { detail: items }));
}

// Ages tick without redrawing the rows (a redraw would take the focus off a button).
function tickAges() {
  for (const cell of document.querySelectorAll("#sessions td.age")) cell.textContent = svc.age(cell.dataset.since);
}
setInterval(tickAges, 5000);

function watchSessionFilters() {
  const status = document.getElementById("sessions-filter");
  const q = document.getElementById("sessions-q");
  if (status) status.addEventListener("change", () => { sessionsView.status = status.value; drawSessions(); });
  if (q) q.addEventListener("input", () => { sessionsView.q = q.value; drawSessions(); });
}
watchSessionFilters();
document.addEventListener("svc:view", (event) => { if (event.detail.view === "sessions" && sessionsView.stale) drawSessions(); });

// --- new session pickers --------------------------------------------------------------------------

function option(value, label) { return svc.el("option", { value, textContent: label }); }

async function fillPickers() {
  const [agents, workspaces, profiles] = await Promise.all([
    svc.api("GET", "agents"), svc.api("GET", "workspaces"), svc.api("GET", "profiles"),
  ]);
  const usable = agents.filter((a) => a.enabled);
  document.getElementById("new-agent").replaceChildren(...usable.map((a) => option(a.name, a.name)));
  const places = workspaces.map((w) => option(w.path, w.name && w.name !== w.path ? `${w.name} — ${w.path}` : w.path));
  document.getElementById("new-workspace").replaceChildren(
    ...(places.length ? places : [option("", "(no workspace yet: add a folder)")]));
  // First run: the folder is asked for right here, where the session starts.
  document.getElementById("add-folder").hidden = places.length > 0;
  document.getElementById("new-profile").replaceChildren(option("", "(none)"), ...profiles.map((p) => option(p.id, p.id)));
  window.svcSettings = { agents, workspaces, profiles };  // for a listener that starts later
  document.dispatchEvent(new CustomEvent("svc:settings", { detail: window.svcSettings }));
}

async function createSession(event) {
  event.preventDefault();
  const form = event.target;
  const status = document.getElementById("new-status");
  status.textContent = "starting…";
  try {
    const session = await svc.api("POST", "sessions", {
      agent: form.agent.value, workspace: form.workspace.value, kind: form.kind.value,
      profile_id: form.profile.value, cols: 100, rows: 30,
    });
    status.textContent = "";
    openSession(session);
  } catch (error) {
    status.textContent = error.message;
  }
}

document.getElementById("new-session").addEventListener("submit", createSession);

// Registers a folder from the new-session form and picks it.
document.getElementById("add-folder").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const status = document.getElementById("add-folder-status");
  try {
    const made = await svc.api("POST", "workspaces", { path: form.path.value });
    status.textContent = "";
    form.reset();
    await fillPickers();
    document.getElementById("new-workspace").value = made.path;
    form.hidden = true;
  } catch (error) {
    status.textContent = error.message;
  }
});
document.getElementById("add-folder-toggle").addEventListener("click", () => {
  const form = document.getElementById("add-folder");
  form.hidden = !form.hidden;
  document.getElementById("add-folder-why").hidden = document.getElementById("new-workspace").value !== "";
  if (!form.hidden) form.path.focus();
});
subscribe("/ws/sessions", renderSessions);
// Once every script has run: the settings views listen for the "svc:settings" event this sends,
// and an answer that came back before their script had run would otherwise be lost.
document.addEventListener("DOMContentLoaded", () => {
  fillPickers().catch((error) => { document.getElementById("new-status").textContent = error.message; });
});

// An edit that broke settings.json is not in force (svc keeps the last good settings): say so
// here, with the file, the key and the problem, until the file is fixed.
async function watchSettingsProblem() {
  const node = document.getElementById("settings-problem");
  try {
    const { problem } = await svc.api("GET", "settings/problem");
    node.textContent = problem ? `settings.json is not in force (svc keeps the last good settings): ${problem}` : "";
    node.hidden = !problem;
  } catch (error) { /* the unreachable banner says it */ }
  setTimeout(watchSettingsProblem, 3000);
}
watchSettingsProblem();
