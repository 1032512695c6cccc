// The application layout (docs/dashboard.md): which view the main pane shows, the sidebar of
// workspaces and their sessions with a "waiting for you" badge, the navigation (a column in the
// sidebar on a desktop, a bottom bar on a phone) and the keyboard shortcuts between open sessions.
// What is shown lives in the URL hash (`#view=usage`, `#session=<id>&at=<seq>`), so a link, a
// notification or a search hit can point anywhere.
import { html, render, useEffect, useState, svc, hashParams } from "./ui.js";

const VIEWS = [
  { name: "sessions", label: "Sessions", icon: "☰" },
  { name: "session", label: "Open", icon: "▣", phone: true },
  { name: "previews", label: "Previews", icon: "◧" },
  { name: "turns", label: "Subagents", icon: "⁂" },
  { name: "remote", label: "Remote", icon: "⇄" },
  { name: "channels", label: "Channels", icon: "✉" },
  { name: "usage", label: "Usage", icon: "∑" },
  { name: "search", label: "Search", icon: "⌕" },
  { name: "settings", label: "Settings", icon: "⚙" },
];
const PHONE_BAR = ["sessions", "session", "turns", "search", "more"];
const LABELS = { ...Object.fromEntries(VIEWS.map((v) => [v.name, v.label])), diff: "Changes", more: "More" };

// --- what is shown --------------------------------------------------------------------------------

const layout = {
  view: "sessions",
  listeners: new Set(),
  changed() { for (const listener of this.listeners) listener(); },
};

function useLayout() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((n) => n + 1);
    layout.listeners.add(listener);
    return () => layout.listeners.delete(listener);
  }, []);
  return layout;
}

// Shows one view in the main pane. The hash follows (replaceState: no hashchange, no history
// entry), so a link to the view that is already shown does nothing and a reload stays here.
function show(view, { hash } = {}) {
  if (!document.querySelector(`[data-view="${view}"]`)) view = "sessions";
  const before = layout.view;
  layout.view = view;
  for (const section of document.querySelectorAll("#views > [data-view]")) section.hidden = section.dataset.view !== view;
  document.body.dataset.view = view;
  const title = document.getElementById("view-title");
  if (title) title.textContent = LABELS[view] || "";
  // Home (the sessions view) keeps a bare URL.
  const wanted = hash || (view === "session" && window.svcTabs && window.svcTabs.current() ? `#session=${window.svcTabs.current()}` : view === "sessions" ? "" : `#view=${view}`);
  if (location.hash !== wanted) history.replaceState(null, "", wanted || location.pathname + location.search);
  layout.changed();
  if (before !== view) document.dispatchEvent(new CustomEvent("svc:view", { detail: { view } }));
}

// A hash a link, a search hit or a notification set: open that session (at that event) or view.
async function follow() {
  const params = hashParams();
  const id = params.get("session");
  if (id) {
    const at = params.get("at");
    const known = sessionsState.items.find((s) => s.id === id);
    try {
      const session = known || (await svc.api("GET", `sessions/${id}`));
      window.openSession(session, { at: at === null ? null : Number(at) });
    } catch (error) {
      show("sessions");
    }
    return;
  }
  show(params.get("view") || "sessions", { hash: location.hash || undefined });
}

// --- sessions and what waits for the person -------------------------------------------------------

const sessionsState = { items: window.svcSessions || [], workspaces: [] };
const LIVE = ["starting", "running"];
const WAITS = ["permission_requested", "turn_ended"];

// When the person last looked at each session (kept across reloads): a notification newer than
// that, for a session not on screen, is "waiting for you".
const seen = {
  all: JSON.parse(localStorage.getItem("svc.seen") || "{}"),
  mark(id) {
    this.all[id] = new Date().toISOString();
    localStorage.setItem("svc.seen", JSON.stringify(this.all));
  },
};

function onScreen(id) {
  return layout.view === "session" && window.svcTabs && window.svcTabs.current() === id && document.visibilityState === "visible";
}

function waitingFor(notifications) {
  const waiting = new Map();
  for (const n of notifications) {
    if (!n.session_id || !WAITS.includes(n.event) || waiting.has(n.session_id)) continue;
    if (onScreen(n.session_id)) { seen.mark(n.session_id); continue; }
    if (n.created_at > (seen.all[n.session_id] || "")) waiting.set(n.session_id, n);
  }
  return waiting;
}

// While the tab is hidden, a new notification also shows as a browser notification (tagged with
// its id, so the Web Push of the same notification replaces it rather than showing twice).
const shownNotifications = new Set();
let notificationsPrimed = false;

async function notifyBrowser(n) {
  if (document.visibilityState === "visible" || !("Notification" in window) || Notification.permission !== "granted") return;
  const options = { body: n.body, tag: n.id, data: { url: n.session_id ? `/#session=${n.session_id}` : "/" } };
  const registration = navigator.serviceWorker && (await navigator.serviceWorker.getRegistration("/"));
  if (registration) registration.showNotification(n.title, options);
  else new Notification(n.title, options);
}

function useNotifications() {
  const [items, setItems] = useState([]);
  useEffect(() => window.subscribe("/ws/notifications", (list) => {
    for (const n of list) {
      if (notificationsPrimed && !shownNotifications.has(n.id)) notifyBrowser(n).catch(() => {});
      shownNotifications.add(n.id);
    }
    notificationsPrimed = true;
    setItems(list);
  }), []);
  return items;
}

function useSessions() {
  const [state, setState] = useState({ ...sessionsState });
  useEffect(() => {
    const onSessions = (event) => { sessionsState.items = event.detail; setState({ ...sessionsState }); };
    const onSettings = (event) => { sessionsState.workspaces = event.detail.workspaces; setState({ ...sessionsState }); };
    document.addEventListener("svc:sessions", onSessions);
    document.addEventListener("svc:settings", onSettings);
    // The effect runs after the first paint: a list or settings that arrived between this
    // module's start and now went to no listener, so take the newest of each.
    if (window.svcSessions && window.svcSessions !== sessionsState.items) onSessions({ detail: window.svcSessions });
    if (window.svcSettings && window.svcSettings.workspaces !== sessionsState.workspaces) onSettings({ detail: window.svcSettings });
    return () => { document.removeEventListener("svc:sessions", onSessions); document.removeEventListener("svc:settings", onSettings); };
  }, []);
  return state;
}

function useTicking(ms) {
  const [, setTick] = useState(0);
  useEffect(() => { const timer = setInterval(() => setTick((n) => n + 1), ms); return () => clearInterval(timer); }, [ms]);
}

function workspaceLabel(path, workspaces) {
  const known = workspaces.find((w) => w.path === path);
  if (known && known.name && known.name !== path) return known.name;
  return path.split("/").filter(Boolean).pop() || path;
}

// Live sessions first, then the most recent; each workspace a group.
function grouped(items, workspaces) {
  const groups = new Map();
  const order = [...items].sort((a, b) => (LIVE.includes(b.status) - LIVE.includes(a.status)) || b.created_at.localeCompare(a.created_at));
  for (const s of order) {
    if (!groups.has(s.workspace)) groups.set(s.workspace, []);
    groups.get(s.workspace).push(s);
  }
  return [...groups].map(([path, sessions]) => ({ path, label: workspaceLabel(path, workspaces), sessions }));
}

function statusText(s) {
  if (LIVE.includes(s.status)) return s.status;
  return s.end_reason || s.status;
}

function SessionItem({ s, waiting, current }) {
  const open = (event) => { event.preventDefault(); window.openSession(s); };
  const label = s.title || `${s.agent} ${s.kind}`;
  return html`<li class=${`side-session status-${s.status}`} data-session-id=${s.id}>
    <a href=${`#session=${s.id}`} onClick=${open} aria-current=${current ? "page" : undefined}
       title=${`${label} — ${s.agent} · ${s.kind} · ${statusText(s)}`}>
      <span class="side-title">${label}</span>
      ${waiting && html`<span class="badge" title=${waiting.title}>waiting for you</span>`}
      <span class="side-meta"><span class=${`dot dot-${LIVE.includes(s.status) ? "live" : s.status}`} aria-hidden="true"></span>${s.agent} · ${statusText(s)} · ${svc.age(s.created_at)}</span>
    </a>
  </li>`;
}

function Sidebar() {
  const { items, workspaces } = useSessions();
  const notifications = useNotifications();
  useLayout();
  useTicking(5000);
  const waiting = waitingFor(notifications);
  const current = layout.view === "session" && window.svcTabs ? window.svcTabs.current() : null;
  document.title = waiting.size ? `(${waiting.size}) svc` : "svc";
  if (!items.length) return html`<p class="hint side-empty">No sessions yet: start one from <a href="#view=sessions">Sessions</a>.</p>`;
  return html`${grouped(items, workspaces).map((group) => html`
    <details class="side-group" key=${group.path} open>
      <summary title=${group.path}>${group.label} <span class="side-count">${group.sessions.length}</span></summary>
      <ul>${group.sessions.map((s) => html`<${SessionItem} key=${s.id} s=${s} waiting=${waiting.get(s.id)} current=${s.id === current} />`)}</ul>
    </details>`)}`;
}

// --- navigation -----------------------------------------------------------------------------------

function go(view) {
  return (event) => { event.preventDefault(); if (view === "session" && !(window.svcTabs && window.svcTabs.current())) { show("session"); return; } show(view); };
}

function NavLink({ view, compact }) {
  useLayout();
  const v = VIEWS.find((x) => x.name === view) || { name: view, label: LABELS[view], icon: "⋯" };
  const count = view === "session" && window.svcTabs ? window.svcTabs.ids().length : 0;
  return html`<a href=${`#view=${view}`} class=${`nav-${view}`} onClick=${go(view)} aria-current=${layout.view === view ? "page" : undefined}>
    ${compact && html`<span class="nav-icon" aria-hidden="true">${v.icon}</span>`}<span class="nav-label">${v.label}</span>${count ? html` <span class="nav-count">${count}</span>` : ""}
  </a>`;
}

function Extras() {
  if (svc.pageKey()) return null;  // through a tunnel: no admin, no API docs, pairing ends by revoke
  return html`<a href="/admin/">Admin</a> <a href="/api/docs/">API</a>
    <button type="submit" form="logout-form" class="linkish">Log out</button>`;
}

function SideNav() {
  return html`<ul>${VIEWS.filter((v) => !v.phone).map((v) => html`<li><${NavLink} view=${v.name} /></li>`)}</ul><p class="nav-extras"><${Extras} /></p>
    <p class="hint keys">Alt+1…9: open session N · Alt+[ / Alt+]: previous / next</p>`;
}

function MoreNav() {
  return html`<ul class="more-list">${VIEWS.filter((v) => !PHONE_BAR.includes(v.name)).map((v) => html`<li><${NavLink} view=${v.name} compact /></li>`)}</ul><p class="nav-extras"><${Extras} /></p>`;
}

function BottomNav() {
  return html`${PHONE_BAR.map((view) => html`<${NavLink} view=${view} compact />`)}`;
}

// --- keyboard: Alt+1…9 open session tab N, Alt+[ and Alt+] the previous and next one ---------------

function switchKey(event) {
  if (!event.altKey || event.ctrlKey || event.metaKey || !window.svcTabs) return false;
  const ids = window.svcTabs.ids();
  if (!ids.length) return false;
  const digit = /^Digit([1-9])$/.exec(event.code);
  let target = null;
  if (digit) target = ids[Number(digit[1]) - 1];
  else if (event.code === "BracketLeft" || event.code === "BracketRight") {
    const at = ids.indexOf(window.svcTabs.current());
    const step = event.code === "BracketRight" ? 1 : -1;
    target = ids[(at + step + ids.length) % ids.length];
  }
  if (!target) return false;
  event.preventDefault();
  event.stopPropagation();
  window.svcTabs.activate(target);
  return true;
}
// Capture phase: the keys never reach the terminal (xterm would send Esc+1 to the program).
window.addEventListener("keydown", switchKey, true);

// --- start ------------------------------------------------------------------------------------------

window.svcLayout = { show, current: () => layout.view, seen: (id) => seen.mark(id) };
render(html`<${Sidebar} />`, document.getElementById("sidebar-tree"));
render(html`<${SideNav} />`, document.getElementById("app-nav"));
render(html`<${MoreNav} />`, document.getElementById("more-nav"));
render(html`<${BottomNav} />`, document.getElementById("bottom-nav"));
window.addEventListener("hashchange", follow);
document.addEventListener("visibilitychange", () => layout.changed());
follow();
