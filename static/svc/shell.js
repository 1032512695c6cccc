// The application, one component (docs/dashboard.md): the sidebar (workspaces → sessions, then the
// views) beside the main pane, which holds the open session tabs above one view at a time; on a
// phone one pane with a bottom navigation. Every view stays mounted, hidden while another is shown,
// so an open terminal or chat keeps its socket and a form what was typed into it.
import { banner } from "./api.js";
import { ApprovalsView } from "./approvals.js";
import { ChannelsView } from "./channels.js";
import { DiffApp } from "./diff.js";
import { MachinesView } from "./machines.js";
import { LABELS, current, view } from "./nav.js";
import { PreviewsView } from "./previews.js";
import { PushOffer } from "./push.js";
import { RemoteView } from "./remote.js";
import { Search } from "./search.js";
import { SessionsView } from "./sessions.js";
import { SettingsView } from "./settings.js";
import { BottomNav, LogoutForm, MoreNav, SideNav, Sidebar } from "./sidebar.js";
import { fleetProblem, settingsProblem } from "./store.js";
import { SessionPanel, SessionTabs } from "./tabs.js";
import { TurnsView } from "./turns.js";
import { CopyButton, computed, html } from "./ui.js";
import { Usage } from "./usage.js";

// One view of the main pane: a titled section, shown while it is the view. Switching views draws
// the sections again, not what is in them (their content is the same element as before).
function View({ name, id, title, children }) {
  const heading = `${name}-title`;
  return html`<section id=${id} data-view=${name} hidden=${view.value !== name} aria-labelledby=${heading}>
    <h2 id=${heading}>${title}</h2>${children}</section>`;
}

// The message names the file and where it breaks ("…/settings.json line 7, column 5: not valid
// JSON: …", or the key); what it means for the person comes after it.
function SettingsProblem({ problem }) {
  return html`<div id="settings-problem" class="notice notice-warn" role="alert" hidden=${!problem}>${
    problem &&
    html`
    <strong>settings.json is broken</strong> <span id="settings-problem-where">${problem.message}</span>.
    svc keeps the last good settings and will not save over the file: fix it by hand (a save is refused until then).`
  }</div>`;
}

// A fleet member that cannot reach the others (Redis gone, contract §18) goes on serving its own
// sessions; the others' rows read unreachable until it rejoins, by itself.
function FleetProblem({ problem }) {
  return html`<div id="fleet-problem" class="notice notice-warn" role="alert" hidden=${!problem}>${
    problem &&
    html`
    <strong>The fleet is unreachable</strong> (<span id="fleet-problem-detail">${problem.detail || problem.status}</span>):
    this machine's sessions go on; others' come back when it rejoins.`
  }</div>`;
}

function Notices() {
  const said = banner.value;
  const command =
    said &&
    said.command &&
    html` <code id="banner-command">${said.command}</code>${said.after}
    <${CopyButton} text=${said.command} label="Copy the command" name=${`Copy ${said.command}`} />`;
  return html`<div id="banner" class="notice notice-warn" role="alert" hidden=${!said}>${said && said.text}${command}</div>
    <${SettingsProblem} problem=${settingsProblem.value} />
    <${FleetProblem} problem=${fleetProblem.value} />`;
}

function SessionSection({ children }) {
  return html`<section id="session-panel" data-view="session" hidden=${view.value !== "session"} aria-label="open session" data-session-id=${current.value || undefined}>
    ${children}</section>`;
}

function Views() {
  return html`<main id="views" tabindex="-1">
    <${PushOffer} />
    <${View} name="sessions" id="sessions-box" title="Sessions"><${SessionsView} /><//>
    <${SessionSection}><${SessionPanel} /><//>
    <${View} name="previews" id="previews-box" title="Previews"><${PreviewsView} /><//>
    <${View} name="turns" id="turns-box" title="Subagent turns"><${TurnsView} /><//>
    <${View} name="machines" id="machines-box" title="Machines"><${MachinesView} /><//>
    <${View} name="remote" id="remote-box" title="Remote access"><${RemoteView} /><//>
    <${View} name="channels" id="channels-box" title="Channels"><${ChannelsView} /><//>
    <${View} name="diff" id="diff-box" title="Changes"><div id="diff"><${DiffApp} /></div><//>
    <${View} name="usage" id="usage-box" title="Usage and cost"><div id="usage"><${Usage} /></div><//>
    <${View} name="search" id="search-box" title="Search"><div id="search"><${Search} /></div><//>
    <${View} name="approvals" id="approvals-box" title="Permission decisions"><div id="approvals"><${ApprovalsView} /></div><//>
    <${View} name="more" id="more-box" title="More"><nav id="more-nav" aria-label="all views"><${MoreNav} /></nav><//>
    <${View} name="settings" id="settings-box" title="Settings"><${SettingsView} /><//>
  </main>`;
}

// Bound to the page as signals: switching views sets them without drawing the application again.
const title = computed(() => LABELS[view.value] || "");

// The skip link moves the focus without touching the hash (which names the view shown).
const skip = (event) => {
  event.preventDefault();
  document.getElementById("views").focus();
};

export function App() {
  return html`<a class="skip-link" href="#views" onClick=${skip}>Skip to the main pane</a>
    <div class="app" data-view=${view}>
      <aside id="sidebar" aria-label="workspaces and sessions">
        <div class="brand"><h1>svc</h1><span id="view-title" class="view-title" aria-live="polite">${title}</span></div>
        <div id="sidebar-tree"><${Sidebar} /></div>
        <nav id="app-nav" aria-label="views"><${SideNav} /></nav>
        <${LogoutForm} />
      </aside>
      <div class="pane">
        <${Notices} />
        <${SessionTabs} />
        <${Views} />
      </div>
      <nav id="bottom-nav" aria-label="views"><${BottomNav} /></nav>
    </div>`;
}
