// The Sessions view: the new-session form (with "Add a folder…", asked for at once on a first run,
// and in a fleet the machine it starts on), the handover box, and the table of every session with
// its filter and actions (in a fleet: which machine each runs on, and a filter by machine); on a
// phone the table comes first. The built-in agents this machine does not have are offered greyed,
// with how to install each.
import { age, api } from "./api.js";
import { InstallHint } from "./install-hint.js";
import { openSession, view } from "./nav.js";
import {
  LIVE,
  choices,
  choicesError,
  clock,
  forgetSession,
  isAway,
  isFleet,
  isLive,
  loadChoices,
  machineNameOf,
  machines,
  resumable,
  sessions,
  thisMachine,
} from "./store.js";
import { Option, Status, Submit, html, narrow, useEffect, useRef, useState, useStatus } from "./ui.js";

function place(w) {
  return { value: w.path, label: w.name && w.name !== w.path ? `${w.name} — ${w.path}` : w.path };
}

// The folder form: shown by itself while no workspace is registered, else by its toggle.
function AddFolder({ open, picked, onAdded }) {
  const [text, run, , busy] = useStatus();
  const submit = (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    run(async () => {
      const made = await api("POST", "workspaces", { path: form.path.value });
      form.reset();
      await loadChoices();
      onAdded(made.path);
    }, "registering…");
  };
  return html`<form id="add-folder" class="row" hidden=${!open} onSubmit=${submit}>
    <span class="hint" id="add-folder-why" hidden=${picked !== ""}>No workspace yet: a session runs in a registered folder.</span>
    <label>Folder <input name="path" required placeholder="/absolute/path/to/project" autocomplete="off" /></label>
    <${Submit} class="" busy=${busy}>Register folder<//> <${Status} id="add-folder-status" text=${text} busy=${busy} />
  </form>`;
}

// In a fleet, the machine a new session starts on (contract §18): this one first, the others by
// name; an unreachable one is offered but cannot be picked.
function MachinePicker({ picked, onPick }) {
  const here = thisMachine.value;
  const others = machines.value.filter((m) => !m.self);
  const label = (m) => (m.status === "online" ? m.name : `${m.name} (unreachable)`);
  return html`<label>Machine <select name="machine" id="new-machine" value=${picked} onChange=${(e) => onPick(e.currentTarget.value)}>
    ${here && html`<${Option} value=${here.id}>${`${here.name} (this machine)`}<//>`}
    ${others.map((m) => html`<${Option} key=${m.id} value=${m.id} disabled=${m.status !== "online"}>${label(m)}<//>`)}
  </select></label>`;
}

// A built-in agent this machine does not have (GET /api/agents says how to install it).
const notInstalled = (a) => !a.enabled && !a.executable_found && a.install;

// What the form offers on the machine picked: this machine's own agents, workspaces and profiles
// (and the built-ins it could install), or another's agents and workspaces as its machines row
// says (its profiles are its own; what it could install is for its own dashboard to say).
function offered(other) {
  const { agents, workspaces, profiles } = choices.value;
  if (!other) {
    const agentNames = agents.filter((a) => a.enabled).map((a) => a.name);
    return { agentNames, missing: agents.filter(notInstalled), places: workspaces.map(place), profiles };
  }
  return { agentNames: other.agents, missing: [], places: other.workspaces.map((path) => ({ value: path, label: path })), profiles: [] };
}

// The built-in agents that are not installed: greyed in the picker, and here how to install each.
// GET /api/agents looks at PATH again, so "Check again" after an install offers it at once.
function NotInstalled({ missing }) {
  const [text, run, , busy] = useStatus();
  if (!missing.length) return null;
  const names = missing.map((a) => a.name);
  const again = () =>
    run(async () => {
      await loadChoices();
      const found = names.filter((name) => !choices.value.agents.some((a) => a.name === name && notInstalled(a)));
      return found.length ? `found ${found.join(", ")}: pick it above` : "none of them is on svc's PATH yet";
    }, "looking…");
  return html`<details id="not-installed" class="not-installed">
    <summary>Not installed here: ${names.join(", ")} — how to add them</summary>
    <ul>${missing.map((a) => html`<li key=${a.name} data-agent=${a.name}><strong>${a.name}</strong>: <${InstallHint} a=${a} /></li>`)}</ul>
    <p class="row hint">svc finds an agent on its own PATH.
      <button type="button" id="agents-check-again" aria-disabled=${busy ? "true" : undefined} onClick=${() => busy || again()}>Check again</button>
      <${Status} id="not-installed-status" text=${text} busy=${busy} /></p>
  </details>`;
}

function NewSession() {
  const { workspaces } = choices.value;
  const [machine, setMachine] = useState(""); // "": this machine
  const other = (isFleet.value && machines.value.find((m) => m.id === machine && !m.self)) || null;
  const { agentNames, missing, places, profiles } = offered(other);
  const [picked, setPicked] = useState("");
  const [folderOpen, setFolderOpen] = useState(null); // null: open while there is no workspace
  const [text, run, , busy] = useStatus();
  useEffect(() => setFolderOpen(null), [workspaces]);
  const workspace = places.some((p) => p.value === picked) ? picked : (places[0] || { value: "" }).value;
  const open = !other && (folderOpen === null ? places.length === 0 : folderOpen);
  const submit = (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    run(async () => {
      const body = {
        agent: form.agent.value,
        workspace: form.workspace.value,
        kind: form.kind.value,
        profile_id: form.profile.value,
        cols: 100,
        rows: 30,
      };
      if (other) body.machine = other.id;
      const session = await api("POST", "sessions", body);
      openSession(session);
    }, "starting…");
  };
  const toggle = () => {
    setFolderOpen(!open);
    if (!open) requestAnimationFrame(() => document.querySelector("#add-folder input[name=path]").focus());
  };
  const none = other ? `(no workspace on ${other.name}: register one on its own dashboard)` : "(no workspace yet: add a folder)";
  return html`<form id="new-session" class="row" onSubmit=${submit}>
      ${isFleet.value && html`<${MachinePicker} picked=${other ? other.id : (thisMachine.value || {}).id} onPick=${setMachine} />`}
      <label>Agent <select name="agent" id="new-agent">${agentNames.map((name) => html`<${Option} key=${name} value=${name}>${name}<//>`)}
        ${missing.length > 0 && html`<optgroup label="Not installed (see below)">${missing.map((a) => html`<${Option} key=${a.name} value=${a.name} disabled>${`${a.name} — not installed`}<//>`)}</optgroup>`}</select></label>
      <label>Workspace <select name="workspace" id="new-workspace" value=${workspace} onChange=${(e) => setPicked(e.currentTarget.value)}>
        ${places.length ? places.map((p) => html`<${Option} key=${p.value} value=${p.value}>${p.label}<//>`) : html`<option value="">${none}</option>`}
      </select></label>
      ${!other && html`<button type="button" id="add-folder-toggle" class="linkish" aria-controls="add-folder" aria-expanded=${String(open)} onClick=${toggle}>Add a folder…</button>`}
      <label>Profile <select name="profile" id="new-profile"><option value="">(none)</option>${profiles.map((p) => html`<${Option} key=${p.id} value=${p.id}>${p.id}<//>`)}</select></label>
      <label>Kind <select name="kind" id="new-kind"><option value="terminal">terminal</option><option value="chat">chat</option></select></label>
      <${Submit} busy=${busy}>Start<//> <${Status} id="new-status" text=${text || choicesError.value} busy=${busy} />
    </form>
    <${NotInstalled} missing=${missing} />
    <${AddFolder} open=${open} picked=${workspace} onAdded=${(path) => {
      setPicked(path);
      setFolderOpen(false);
    }} />`;
}

// A handover code prepared by an agent opens its session here.
function Pickup() {
  const [text, run, , busy] = useStatus();
  const input = useRef(null);
  const submit = (event) => {
    event.preventDefault();
    run(async () => {
      const session = await api("POST", "handover/pickup", { code: input.current.value.trim() });
      input.current.value = "";
      openSession(session);
      return `picked up ${session.agent} session`;
    }, "picking up…");
  };
  return html`<form id="pickup" class="row" onSubmit=${submit}>
    <label>Handover code <input name="code" id="pickup-code" ref=${input} required maxlength="4" autocomplete="off" autocapitalize="characters" placeholder="ABCD" /></label>
    <${Submit} class="" busy=${busy}>Pick up<//> <${Status} id="pickup-status" text=${text} busy=${busy} />
  </form>`;
}

function sessionStatus(s) {
  if (isLive(s) || isAway(s)) return s.status;
  if (s.detail) return s.detail; // "stopped when svc stopped", "stopped by you", an agent's last words…
  return s.exit_code === null || s.exit_code === undefined ? s.status : `${s.status} with code ${s.exit_code}`;
}

// Ages tick without redrawing the rows (a redraw could take the focus off a button).
function Age({ since }) {
  return html`<td class="age" title=${since}>${age(since, clock.value)}</td>`;
}

function Actions({ s, report }) {
  const live = isLive(s);
  // A session of a machine that is away: nothing to stop or remove from here until it is back.
  if (isAway(s)) {
    return html`<td class="actions"><button type="button" onClick=${() => openSession(s)}>${s.kind === "terminal" ? "Open terminal" : "Open chat"}</button></td>`;
  }
  const remove = () =>
    report(async () => {
      await api("DELETE", `sessions/${s.id}?remove=1`);
      forgetSession(s.id);
    }, "removing…");
  const stop = () => report(() => api("DELETE", `sessions/${s.id}`), "stopping…");
  // Resumed first, then opened: an open tab of this session follows it (tabs.js keys its view by
  // the process), so Resume works whether or not the tab is open.
  const resume = () =>
    report(async () => {
      openSession(await api("POST", `sessions/${s.id}/resume`));
    }, "resuming…");
  return html`<td class="actions">
    <button type="button" onClick=${() => openSession(s)}>${s.kind === "terminal" ? "Open terminal" : "Open chat"}</button>
    ${live && html`<button type="button" class="danger" onClick=${stop}>Stop</button>`}
    ${resumable(s) && html`<button type="button" class="resume" onClick=${resume}>Resume</button>`}
    ${!live && html`<button type="button" class="danger" onClick=${remove}>Remove</button>`}
  </td>`;
}

function Row({ s, report, fleet }) {
  const code = s.exit_code === null || s.exit_code === undefined ? "" : `exit code ${s.exit_code}`;
  return html`<tr class=${`status-${s.status}`} data-session-id=${s.id} data-machine=${fleet ? s.machine : undefined}>
    <td class="title" title=${s.id}>${s.name || s.title || `${s.agent} in ${s.workspace}`}</td>
    ${fleet && html`<td class="machine">${machineNameOf(s)}</td>`}<td>${s.agent}</td><td>${s.kind}</td>
    <td class="status" title=${code}>${sessionStatus(s)}</td><td class="path">${s.workspace}</td>
    <${Age} since=${s.created_at} /><${Actions} s=${s} report=${report} />
  </tr>`;
}

// `machine`: a machine's id ("" for every machine). "Live" counts a session of a machine that is
// away (likely running there); "Exited" does not.
function matches(s, status, q, machine) {
  if (machine && (s.machine || "") !== machine) return false;
  if (status === "live" && !isLive(s) && !isAway(s)) return false;
  if (status === "exited" && (LIVE.includes(s.status) || isAway(s))) return false;
  const words = q.trim().toLowerCase();
  return !words || [s.name, s.title, s.agent, s.workspace, s.id].some((v) => (v || "").toLowerCase().includes(words));
}

// Ends every live session (contract §17), after the person confirms how many that is. In a
// fleet, every machine's: each stops its own, and one that could not be reached is named
// (its sessions keep running there).
function StopAll({ report }) {
  const count = sessions.value.filter(isLive).length;
  const where = isFleet.value ? " on every machine" : "";
  const stop = () => {
    const many = count === 1 ? "the 1 live session" : `all ${count} live sessions`;
    if (!confirm(`Stop ${many}${where}? Their processes end now; the rows stay, and chats can be resumed.`)) return;
    report(async () => stoppedText(await api("POST", "sessions/stop_all")), "stopping…");
  };
  return html`<button type="button" id="stop-all" class="danger" disabled=${count === 0} onClick=${stop}
    title=${`Stop every live session${where}`}>Stop all${count ? ` (${count})` : ""}</button>`;
}

// What Stop all did: how many it stopped (in a fleet, where) and which machines it could not ask.
function stoppedText({ stopped, machines = [] }) {
  let text = `stopped ${stopped} session${stopped === 1 ? "" : "s"}`;
  const done = machines.filter((m) => m.stopped !== null);
  if (machines.length > 1) text += ` (${done.map((m) => `${m.machine_name} ${m.stopped}`).join(", ")})`;
  const missed = machines.filter((m) => m.stopped === null).map((m) => m.error);
  return missed.length ? `${text}; not stopped: ${missed.join("; ")}` : text;
}

// The live list sends every session; the filter is applied here. The table follows the list
// only while its view is shown (a snapshot comes on every change; meanwhile the sidebar is what
// a person sees), and takes the newest list when it is shown again.
// In a fleet: which machines' sessions the table shows (every machine, or one).
function MachineFilter({ machine, onPick }) {
  return html`<label>Machine <select id="sessions-machine" value=${machine} onChange=${(e) => onPick(e.currentTarget.value)}>
    <option value="">All machines</option>
    ${machines.value.map((m) => html`<${Option} key=${m.id} value=${m.id}>${m.self ? `${m.name} (this machine)` : m.name}<//>`)}
  </select></label>`;
}

function SessionsTable() {
  const [status, setStatus] = useState("");
  const [q, setQ] = useState("");
  const [chosen, setMachine] = useState("");
  const fleet = isFleet.value;
  const machine = fleet && machines.value.some((m) => m.id === chosen) ? chosen : "";
  const [text, report, , busy] = useStatus();
  const last = useRef([]);
  if (view.value === "sessions") last.current = sessions.value;
  const items = last.current;
  const shown = items.filter((s) => matches(s, status, q, machine));
  const empty = items.length ? "No session matches the filter." : "No sessions yet.";
  return html`<div class="row" id="sessions-filters">
      <label>Show <select id="sessions-filter" value=${status} onChange=${(e) => setStatus(e.currentTarget.value)}>
        <option value="">All</option><option value="live">Live</option><option value="exited">Exited</option></select></label>
      ${fleet && html`<${MachineFilter} machine=${machine} onPick=${setMachine} />`}
      <label>Find <input id="sessions-q" type="search" autocomplete="off" placeholder="title, agent, workspace" value=${q} onInput=${(e) => setQ(e.currentTarget.value)} /></label>
      <${StopAll} report=${report} /> <${Status} id="sessions-status" text=${text} busy=${busy} />
    </div>
    <div class="table-wrap" tabindex="0" role="region" aria-label="sessions table"><table id="sessions" class="stack">
      <thead><tr><th scope="col">Title</th>${fleet && html`<th scope="col">Machine</th>`}<th scope="col">Agent</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Workspace</th><th scope="col">Age</th><th scope="col">Actions</th></tr></thead>
      <tbody>${
        shown.length
          ? shown.map((s) => html`<${Row} key=${s.id} s=${s} report=${report} fleet=${fleet} />`)
          : html`<tr class="empty"><td colspan=${fleet ? 8 : 7}>${empty}</td></tr>`
      }</tbody>
    </table></div>`;
}

// On a phone the sessions come first (it has no sidebar: this is where they are listed), then
// starting one; on a desktop the form leads, the sidebar lists them. Keyed, so crossing the
// breakpoint moves the parts without drawing them again (a half-filled form keeps its values).
export function SessionsView() {
  const list = html`<${SessionsTable} key="list" />`;
  const start = [html`<${NewSession} key="form" />`, html`<${Pickup} key="pickup" />`];
  return narrow.value ? [list, ...start] : [...start, list];
}
