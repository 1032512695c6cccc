// The sidebar of workspaces and their sessions with a "waiting for you" badge, and the navigation:
// a column in the sidebar on a desktop, a bottom bar and a "More" view on a phone.
import { age, api, csrf, pageKey } from "./api.js";
import { LABELS, PHONE_BAR, VIEWS, current, openSession, show, tabs, view, waiting } from "./nav.js";
import { choices, clock, isLive, resumable, sessions } from "./store.js";
import { html, useState } from "./ui.js";

function workspaceLabel(path, workspaces) {
  const known = workspaces.find((w) => w.path === path);
  if (known && known.name && known.name !== path) return known.name;
  return path.split("/").filter(Boolean).pop() || path;
}

// Live sessions first, then the most recent; each workspace a group.
function grouped(items, workspaces) {
  const groups = new Map();
  const order = [...items].sort((a, b) => (isLive(b) - isLive(a)) || b.created_at.localeCompare(a.created_at));
  for (const s of order) {
    if (!groups.has(s.workspace)) groups.set(s.workspace, []);
    groups.get(s.workspace).push(s);
  }
  return [...groups].map(([path, list]) => ({ path, label: workspaceLabel(path, workspaces), sessions: list }));
}

const statusText = (s) => (isLive(s) ? s.status : s.detail || s.status);

// Resumed first, then opened: an open tab of it follows the new process (tabs.js keys its view
// by the process), so Resume works whether or not its tab is open.
function ResumeButton({ s, label }) {
  const [busy, setBusy] = useState(false);
  const [failed, setFailed] = useState("");
  const resume = async () => {
    setBusy(true);
    setFailed("");
    try { openSession(await api("POST", `sessions/${s.id}/resume`)); }
    catch (error) { setFailed(error.message); }
    finally { setBusy(false); }
  };
  return html`<button type="button" class="side-resume" disabled=${busy} aria-label=${`Resume ${label}`} onClick=${resume}>Resume</button>
    ${failed && html`<span class="form-status" role="status">${failed}</span>`}`;
}

function SessionItem({ s, badge, here }) {
  const open = (event) => { event.preventDefault(); openSession(s); };
  const label = s.name || s.title || `${s.agent} ${s.kind}`;
  return html`<li class=${`side-session status-${s.status}`} data-session-id=${s.id}>
    <a href=${`#session=${s.id}`} onClick=${open} aria-current=${here ? "page" : undefined}
       title=${`${label} — ${s.agent} · ${s.kind} · ${statusText(s)}`}>
      <span class="side-title">${label}</span>
      ${badge && html`<span class="badge" title=${badge.title}>waiting for you</span>`}
      <span class="side-meta"><span class=${`dot dot-${isLive(s) ? "live" : s.status}`} aria-hidden="true"></span>${s.agent} · ${s.kind} · ${statusText(s)} · ${age(s.created_at, clock.value)} · ${s.id.slice(0, 8)}</span>
    </a>
    ${resumable(s) && html`<${ResumeButton} s=${s} label=${label} />`}
  </li>`;
}

export function Sidebar() {
  const items = sessions.value;
  const badges = waiting.value;
  const here = view.value === "session" ? current.value : null;
  if (!items.length) return html`<p class="hint side-empty">No sessions yet: start one from <a href="#view=sessions">Sessions</a>.</p>`;
  return grouped(items, choices.value.workspaces).map((group) => html`
    <details class="side-group" key=${group.path} open>
      <summary title=${group.path}>${group.label} <span class="side-count">${group.sessions.length}</span></summary>
      <ul>${group.sessions.map((s) => html`<${SessionItem} key=${s.id} s=${s} badge=${badges.get(s.id)} here=${s.id === here} />`)}</ul>
    </details>`);
}

function go(name) {
  return (event) => { event.preventDefault(); show(name); };
}

function NavLink({ name, compact }) {
  const v = VIEWS.find((x) => x.name === name) || { name, label: LABELS[name], icon: "⋯" };
  const count = name === "session" ? tabs.value.length : 0;
  return html`<a href=${`#view=${name}`} class=${`nav-${name}`} onClick=${go(name)} aria-current=${view.value === name ? "page" : undefined}>
    ${compact && html`<span class="nav-icon" aria-hidden="true">${v.icon}</span>`}<span class="nav-label">${v.label}</span>${count ? html` <span class="nav-count">${count}</span>` : ""}
  </a>`;
}

// Through a tunnel: no admin, no API docs, and a pairing ends by revoke rather than log out.
function Extras() {
  if (pageKey()) return null;
  return html`<a href="/admin/">Admin</a> <a href="/api/docs/">API</a>
    <button type="submit" form="logout-form" class="linkish">Log out</button>`;
}

export function LogoutForm() {
  if (pageKey()) return null;
  return html`<form method="post" action="/logout" class="logout" id="logout-form">
    <input type="hidden" name="csrfmiddlewaretoken" value=${csrf()} /></form>`;
}

export function SideNav() {
  return html`<ul>${VIEWS.filter((v) => !v.phone).map((v) => html`<li><${NavLink} name=${v.name} /></li>`)}</ul>
    <p class="nav-extras"><${Extras} /></p>
    <p class="hint keys">Alt+1…9: open session N · Alt+[ / Alt+]: previous / next</p>`;
}

export function MoreNav() {
  return html`<ul class="more-list">${VIEWS.filter((v) => !PHONE_BAR.includes(v.name)).map((v) => html`<li><${NavLink} name=${v.name} compact /></li>`)}</ul>
    <p class="nav-extras"><${Extras} /></p>`;
}

export function BottomNav() {
  return PHONE_BAR.map((name) => html`<${NavLink} key=${name} name=${name} compact />`);
}
