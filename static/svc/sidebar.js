// The sidebar of workspaces and their sessions with a "waiting for you" badge, and the navigation:
// a column in the sidebar on a desktop, a bottom bar and a "More" view on a phone. In a fleet, the
// workspaces of another machine are groups of their own, named with the machine.
import { age, api, csrf, pageKey } from "./api.js";
import { LABELS, PHONE_BAR, VIEWS, current, openSession, show, tabs, view, waiting } from "./nav.js";
import { choices, clock, isAway, isFleet, isLive, isOwn, machineNameOf, resumable, sessions } from "./store.js";
import { html, useState } from "./ui.js";

function workspaceLabel(path, workspaces) {
  const known = workspaces && workspaces.find((w) => w.path === path);
  if (known && known.name && known.name !== path) return known.name;
  return path.split("/").filter(Boolean).pop() || path;
}

// Running there, as far as anyone knows: a machine that is away keeps its sessions' place.
const ongoing = (s) => isLive(s) || isAway(s);

// Live sessions first, then the most recent; each workspace a group — in a fleet, each workspace
// of each machine (two machines may well have the same path), another machine's named with it.
function grouped(items, workspaces, fleet) {
  const groups = new Map();
  const order = [...items].sort((a, b) => ongoing(b) - ongoing(a) || b.created_at.localeCompare(a.created_at));
  for (const s of order) {
    const other = fleet && !isOwn(s) ? machineNameOf(s) : "";
    const key = other ? `${s.machine}\n${s.workspace}` : s.workspace;
    if (!groups.has(key)) groups.set(key, { key, path: s.workspace, machine: other, machineId: other ? s.machine : undefined, list: [] });
    groups.get(key).list.push(s);
  }
  return [...groups.values()].map((g) => ({
    ...g,
    label: workspaceLabel(g.path, g.machine ? null : workspaces),
    sessions: g.list,
  }));
}

const statusText = (s) => (isLive(s) || isAway(s) ? s.status : s.detail || s.status);

// Resumed first, then opened: an open tab of it follows the new process (tabs.js keys its view
// by the process), so Resume works whether or not its tab is open.
function ResumeButton({ s, label }) {
  const [busy, setBusy] = useState(false);
  const [failed, setFailed] = useState("");
  const resume = async () => {
    setBusy(true);
    setFailed("");
    try {
      openSession(await api("POST", `sessions/${s.id}/resume`));
    } catch (error) {
      setFailed(error.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<button type="button" class="side-resume" disabled=${busy} aria-label=${`Resume ${label}`} onClick=${resume}>Resume</button>
    ${failed && html`<span class="form-status" role="status">${failed}</span>`}`;
}

function SessionItem({ s, badge, here, machine }) {
  const open = (event) => {
    event.preventDefault();
    openSession(s);
  };
  const label = s.name || s.title || `${s.agent} ${s.kind}`;
  const on = machine ? `on ${machine} · ` : "";
  return html`<li class=${`side-session status-${s.status}`} data-session-id=${s.id} data-machine=${machine ? s.machine : undefined}>
    <a href=${`#session=${s.id}`} onClick=${open} aria-current=${here ? "page" : undefined}
       title=${`${label} — ${on}${s.agent} · ${s.kind} · ${statusText(s)}`}>
      <span class="side-title">${label}</span>
      ${badge && html`<span class="badge" title=${badge.title}>waiting for you</span>`}
      <span class="side-meta"><span class=${`dot dot-${isLive(s) ? "live" : s.status}`} aria-hidden="true"></span>${machine && html`<span class="side-machine">on ${machine}</span> · `}${s.agent} · ${s.kind} · ${statusText(s)} · ${age(s.created_at, clock.value)} · ${s.id.slice(0, 8)}</span>
    </a>
    ${resumable(s) && html`<${ResumeButton} s=${s} label=${label} />`}
  </li>`;
}

export function Sidebar() {
  const items = sessions.value;
  const badges = waiting.value;
  const here = view.value === "session" ? current.value : null;
  if (!items.length) return html`<p class="hint side-empty">No sessions yet: start one from <a href="#view=sessions">Sessions</a>.</p>`;
  return grouped(items, choices.value.workspaces, isFleet.value).map(
    (group) => html`
    <details class="side-group" key=${group.key} open data-machine=${group.machineId}>
      <summary title=${group.machine ? `${group.path} on ${group.machine}` : group.path}>${group.label}${group.machine && html` <span class="side-machine">on ${group.machine}</span>`} <span class="side-count">${group.sessions.length}</span></summary>
      <ul>${group.sessions.map((s) => html`<${SessionItem} key=${s.id} s=${s} badge=${badges.get(s.id)} here=${s.id === here} machine=${group.machine} />`)}</ul>
    </details>`,
  );
}

function go(name) {
  return (event) => {
    event.preventDefault();
    show(name);
  };
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
