// What the page shows, the other half of the store (docs/dashboard.md): the view in the main pane,
// the open session tabs and the one shown, what the person has looked at (the "waiting for you"
// badges), the URL hash that names all of it, and the keys that switch tabs.
import { batch, computed, effect, signal } from "@preact/signals";
import { api } from "./api.js";
import { notifications, sessions } from "./store.js";
import { hashParams } from "./ui.js";

export const VIEWS = [
  { name: "sessions", label: "Sessions", icon: "☰" },
  { name: "session", label: "Open", icon: "▣", phone: true },
  { name: "previews", label: "Previews", icon: "◧" },
  { name: "turns", label: "Subagents", icon: "⁂" },
  { name: "machines", label: "Machines", icon: "⌂" },
  { name: "remote", label: "Remote", icon: "⇄" },
  { name: "channels", label: "Channels", icon: "✉" },
  { name: "usage", label: "Usage", icon: "∑" },
  { name: "approvals", label: "Approvals", icon: "✓" },
  { name: "search", label: "Search", icon: "⌕" },
  { name: "settings", label: "Settings", icon: "⚙" },
];
export const PHONE_BAR = ["sessions", "session", "turns", "search", "more"];
export const LABELS = { ...Object.fromEntries(VIEWS.map((v) => [v.name, v.label])), diff: "Changes", more: "More" };
const SHOWN = new Set([...VIEWS.map((v) => v.name), "diff", "more"]);
const WAITS = ["permission_requested", "turn_ended"];

export const view = signal("sessions");
// Open sessions, in tab order: {id, session, resume, reveal: signal({at}) of a search hit,
// unsent: a chat's prompts svc does not have yet, by their key (chat-link.js)}.
export const tabs = signal([]);
export const current = signal(null); // the tab shown when the view is "session"
export const activations = signal(0); // counts activate(): a tab shown again takes the focus
export const opened = signal(0); // counts tabs opened (the notifications offer waits for one)
export const visible = signal(document.visibilityState === "visible");
// When the person last looked at each session (kept across reloads).
export const seen = signal(JSON.parse(localStorage.getItem("svc.seen") || "{}"));

export function markSeen(id) {
  seen.value = { ...seen.peek(), [id]: new Date().toISOString() };
  localStorage.setItem("svc.seen", JSON.stringify(seen.peek()));
}

export const onScreen = (id) => view.value === "session" && current.value === id && visible.value;

// A notification newer than the last look, for a session not on screen, is "waiting for you".
export const waiting = computed(() => {
  const found = new Map();
  for (const n of notifications.value) {
    if (!n.session_id || !WAITS.includes(n.event) || found.has(n.session_id)) continue;
    if (!onScreen(n.session_id) && n.created_at > (seen.value[n.session_id] || "")) found.set(n.session_id, n);
  }
  return found;
});

// Shows one view in the main pane. The hash follows (replaceState: no hashchange, no history
// entry), so a link to the view that is already shown does nothing and a reload stays here.
export function show(name, { hash } = {}) {
  const next = SHOWN.has(name) ? name : "sessions";
  view.value = next;
  const id = current.peek();
  // Home (the sessions view) keeps a bare URL.
  const wanted = hash || (next === "session" && id ? `#session=${id}` : next === "sessions" ? "" : `#view=${next}`);
  if (location.hash !== wanted) history.replaceState(null, "", wanted || location.pathname + location.search);
}

// Shows the tab `id` (or, with none, the sessions view).
export function activate(id) {
  const known = id && tabs.peek().some((t) => t.id === id) ? id : null;
  batch(() => {
    current.value = known;
    show(known ? "session" : "sessions");
    if (known) markSeen(known);
    activations.value++;
  });
}

// Opens (or shows) a session's tab; `at` scrolls a chat to that event (a search hit), `resume`
// asks svc to resume an ended chat.
export function openSession(session, { at = null, resume = false } = {}) {
  const open = tabs.peek().find((t) => t.id === session.id);
  if (open) {
    if (at !== null) open.reveal.value = { at };
    activate(session.id);
    return;
  }
  const tab = { id: session.id, session, resume, reveal: signal(at === null ? null : { at }), unsent: new Map() };
  batch(() => {
    tabs.value = [...tabs.peek(), tab];
    opened.value++;
    activate(session.id);
  });
}

export function closeSession(id) {
  batch(() => {
    tabs.value = tabs.peek().filter((t) => t.id !== id);
    activate((tabs.peek().at(-1) || {}).id);
  });
}

// A hash a link, a search hit or a notification set: open that session (at that event) or view.
export async function follow() {
  const params = hashParams();
  const id = params.get("session");
  if (!id) {
    show(params.get("view") || "sessions", { hash: location.hash || undefined });
    return;
  }
  const at = params.get("at");
  try {
    const session = sessions.peek().find((s) => s.id === id) || (await api("GET", `sessions/${id}`));
    openSession(session, { at: at === null ? null : Number(at) });
  } catch {
    show("sessions");
  }
}

// Alt+1…9 show open session tab N, Alt+[ and Alt+] the previous and next one (wrapping).
function switchKey(event) {
  if (!event.altKey || event.ctrlKey || event.metaKey) return;
  const ids = tabs.peek().map((t) => t.id);
  if (!ids.length) return;
  const digit = /^Digit([1-9])$/.exec(event.code);
  let target = null;
  if (digit) target = ids[Number(digit[1]) - 1];
  else if (event.code === "BracketLeft" || event.code === "BracketRight") {
    const at = ids.indexOf(current.peek());
    target = ids[(at + (event.code === "BracketRight" ? 1 : -1) + ids.length) % ids.length];
  }
  if (!target) return;
  event.preventDefault();
  event.stopPropagation();
  activate(target);
}

export function startNav() {
  // Capture phase: the keys never reach the terminal (xterm would send Esc+1 to the program).
  window.addEventListener("keydown", switchKey, true);
  window.addEventListener("hashchange", follow);
  document.addEventListener("visibilitychange", () => {
    visible.value = document.visibilityState === "visible";
  });
  // A notification for the session on screen is seen as it comes.
  effect(() => {
    const id = current.value;
    if (!id || !onScreen(id)) return;
    const n = notifications.value.find((x) => x.session_id === id && WAITS.includes(x.event));
    if (n && n.created_at > (seen.peek()[id] || "")) markSeen(id);
  });
  effect(() => {
    document.title = waiting.value.size ? `(${waiting.value.size}) svc` : "svc";
  });
  follow();
}
