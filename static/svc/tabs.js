// Open sessions as tabs (docs/dashboard.md): the tab strip above every view, and the session
// panel that holds one view per open session. A tab's terminal or chat stays mounted, with its
// socket and scrollback, whichever tab or view is shown; closing the tab ends them.
import { api, pageKey } from "./api.js";
import { Chat } from "./chat.js";
import { activate, activations, closeSession, current, tabs, view } from "./nav.js";
import { isAway, isFleet, isLive, isOwn, machineNameOf, resumable, sessions } from "./store.js";
import { Terminal } from "./terminal.js";
import { Status, Submit, html, useComputed, useEffect, useLayoutEffect, useRef, useState, useStatus } from "./ui.js";

// The session's name (its title, else `<agent> in <folder>`), as the live list has it now.
const nameOf = (s) => s.name || s.title || `${s.agent} in ${s.workspace.split("/").filter(Boolean).pop() || s.workspace}`;
const labelOf = (s) => nameOf(rowOf(s));

export function SessionTabs() {
  const shown = current.value;
  return html`<div id="session-tabs" role="tablist" aria-label="open sessions">
    ${tabs.value.map(
      ({ id, session }) => html`<button type="button" role="tab" key=${id} id=${`tab-${id}`}
      class="session-tab" data-session-id=${id} aria-selected=${String(id === shown)} tabindex=${id === shown ? 0 : -1}
      title=${`${labelOf(session)} — ${session.agent} · ${session.kind} · ${session.id.slice(0, 8)}`} onClick=${() => activate(id)}>${labelOf(session)}</button>`,
    )}
  </div>`;
}

// The session as the live list has it now (the tab keeps the row it was opened with).
const rowOf = (session) => sessions.value.find((s) => s.id === session.id) || session;

// The session's name, or the form that renames it (opened by the head's Rename). A blank name gives
// naming back to the agent and its prompt.
function SessionName({ session, rename }) {
  const row = useComputed(() => rowOf(session)).value;
  const { editing, draft, setDraft, stop } = rename;
  const [text, run, , busy] = useStatus();
  const input = useRef(null);
  useLayoutEffect(() => {
    if (editing) input.current.select();
  }, [editing]);
  const save = (event) => {
    event.preventDefault();
    run(async () => {
      await api("PATCH", `sessions/${session.id}`, { title: draft });
      stop();
    }, "renaming…");
  };
  const keyDown = (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      stop();
    }
  };
  if (editing) {
    return html`<form class="session-rename row" onSubmit=${save}>
      <label>Name <input name="title" ref=${input} value=${draft} maxlength="200" autocomplete="off" onInput=${(e) => setDraft(e.currentTarget.value)} onKeyDown=${keyDown} /></label>
      <${Submit} busy=${busy}>Save<//><button type="button" onClick=${stop}>Cancel</button>
      <${Status} text=${text} busy=${busy} /></form>`;
  }
  return html`<h2 title=${`${session.agent} · ${session.kind} · ${session.workspace} · ${session.id.slice(0, 8)}`}>${nameOf(row)}</h2>`;
}

// What the person types: a name the agent or the first prompt gives meanwhile must not replace it.
function useRename(session) {
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState("");
  const start = () => {
    const row = rowOf(session);
    setDraft(row.title || nameOf(row));
    setEditing(true);
  };
  return { editing, draft, setDraft, start, stop: () => setEditing(false) };
}

// In a fleet, the machine of a session that runs on another one (its owner does the work; this
// page reaches it through this machine), and whether that machine is away.
function SessionMachine({ session }) {
  const row = useComputed(() => rowOf(session)).value;
  if (!isFleet.value || isOwn(row)) return null;
  return html`<span class="session-machine" data-machine=${row.machine}>on ${machineNameOf(row)}${isAway(row) ? " · unreachable" : ""}</span>`;
}

// The head's menu on a phone (docs/dashboard.md "Phone"): a "⋯" button shows the actions over the
// chat or terminal and hides them again after one is used, on Escape (the focus back on "⋯") or
// on a tap elsewhere. On a desktop the button is not shown and the actions stand in a row.
function useMenu(head, toggle) {
  const [open, setOpen] = useState(false);
  useEffect(() => {
    if (!open) return undefined;
    const away = (event) => {
      if (!head.current.contains(event.target)) setOpen(false);
    };
    document.addEventListener("pointerdown", away);
    return () => document.removeEventListener("pointerdown", away);
  }, [open]);
  const keyDown = (event) => {
    if (event.key !== "Escape" || !open) return;
    setOpen(false);
    toggle.current.focus();
  };
  // An action closes the menu first: what it shows (a status, the rename form) is then in view.
  const then = (action) => () => {
    setOpen(false);
    action();
  };
  return { open, setOpen, keyDown, then };
}

// Stop and Hand over while it runs, Resume once it has ended (when it can be resumed): the row
// decides. A session of a machine that is away offers none of them until the machine is back.
// Hand over asks the session's own machine for a code (contract §4): another device picks the
// session up with it; a chat shows the code in its log as well. Rename is the machine's own
// (docs/remote.md): a paired device is not offered it.
function SessionHead({ session }) {
  const state = useComputed(() => {
    const row = rowOf(session);
    return isLive(row) ? "live" : isAway(row) ? "away" : resumable(row) ? "resumable" : "ended";
  });
  const [text, run, , busy] = useStatus();
  const rename = useRename(session);
  const head = useRef(null);
  const toggle = useRef(null);
  const menu = useMenu(head, toggle);
  const resume = () =>
    run(async () => {
      await api("POST", `sessions/${session.id}/resume`);
    }, "resuming…");
  const handOver = () =>
    run(async () => {
      const offer = await api("POST", `sessions/${session.id}/handover`);
      return `Handover code ${offer.code}: pick this session up on another device within ${offer.expires_in} s`;
    }, "asking for a code…");
  const stop = () =>
    run(async () => {
      await api("DELETE", `sessions/${session.id}`);
    }, "stopping…");
  const changes = () => {
    location.hash = `#view=diff&of=sessions/${session.id}`;
  };
  const actions = `session-actions-${session.id}`;
  return html`<div class="session-head" ref=${head} onKeyDown=${menu.keyDown}>
    <${SessionName} session=${session} rename=${rename} />
    <${SessionMachine} session=${session} />
    <button type="button" class="session-menu-button" ref=${toggle} aria-label="Session actions" aria-expanded=${String(menu.open)}
      aria-controls=${actions} onClick=${() => menu.setOpen(!menu.open)}>⋯</button>
    <div id=${actions} class=${menu.open ? "session-actions open" : "session-actions"} role="group" aria-label="Session actions">
      ${!pageKey() && !rename.editing && html`<button type="button" class="session-rename-button" onClick=${menu.then(rename.start)}>Rename</button>`}
      <button type="button" title="What this session changed in its git workspace" onClick=${menu.then(changes)}>Changes</button>
      ${state.value === "live" && html`<button type="button" class="session-handover" title="A code to continue this session on another device" onClick=${menu.then(handOver)}>Hand over</button>`}
      ${state.value === "live" && html`<button type="button" class="danger session-stop" onClick=${menu.then(stop)}>Stop</button>`}
      ${state.value === "resumable" && html`<button type="button" class="session-resume" onClick=${menu.then(resume)}>Resume</button>`}
      <button type="button" onClick=${menu.then(() => closeSession(session.id))}>Close</button>
    </div>
    <${Status} text=${text} busy=${busy} />
  </div>`;
}

// Which process of the session the pane shows, as a number that changes when a new one starts:
// a resumed session (from this pane, the table, a chat app or the CLI) gets a new terminal or chat,
// with a socket that follows it. A pid that merely appears — the list's row from before the
// process started, then the running one — is the same process: remounting then threw away what
// was being typed, and a prompt sent with Enter at that moment went nowhere.
function useProcess(session) {
  const row = useComputed(() => rowOf(session)).value;
  const seen = useRef({ pid: session.pid ?? null, ended: false, generation: 0 });
  const known = seen.current;
  const pid = row.pid ?? null;
  if (pid !== null && pid !== known.pid && (known.pid !== null || known.ended)) {
    known.generation += 1;
    known.ended = false;
  }
  if (pid !== null) known.pid = pid;
  if (!isLive(row)) known.ended = true;
  return known.generation;
}

// One open session. When it is shown again it takes the focus (its terminal refits first).
function SessionView({ tab }) {
  const { id, session } = tab;
  const process = useProcess(session);
  const active = current.value === id;
  const onShown = useRef(null);
  const count = activations.value;
  useLayoutEffect(() => {
    if (active && view.peek() === "session" && onShown.current) onShown.current();
  }, [active, count]);
  return html`<div class=${active ? "session-view active" : "session-view"} role="tabpanel" hidden=${!active}
      aria-label=${labelOf(session)} aria-labelledby=${`tab-${id}`} data-session-id=${id}>
    <${SessionHead} session=${session} />
    <div class="session-body">
      ${
        session.kind === "terminal"
          ? html`<${Terminal} key=${process} session=${session} onShown=${onShown} />`
          : html`<${Chat} key=${process} tab=${tab} onShown=${onShown} />`
      }
    </div>
  </div>`;
}

export function SessionPanel() {
  const list = tabs.value;
  return html`<p id="session-none" class="hint" hidden=${list.length > 0}>No session is open: open one from the list of sessions.</p>
    <div id="session-views">${list.map((tab) => html`<${SessionView} key=${tab.id} tab=${tab} />`)}</div>`;
}
