// The one store of what svc says: each /ws list (contract §7) is a signal that holds the newest
// snapshot, the agents, workspaces and profiles the forms offer, the settings.json problem and the
// fleet's (contract §18: the machines, and whether the other members can be reached).
// Every view reads these signals as it renders, so a list that arrived before a view was drawn is
// simply there when it is (there is no event to miss). What the page shows (views, open tabs) is
// nav.js's part of the store.
import { computed, signal } from "@preact/signals";
import { api, live } from "./api.js";

export const sessions = signal([]); // /ws/sessions
export const notifications = signal([]); // /ws/notifications
export const channels = signal([]); // /ws/channels
export const tunnels = signal(null); // /ws/tunnels (null until the first list)
export const pairings = signal([]); // /ws/pairings: requests and paired devices
export const runtime = signal([]); // /ws/agents/runtime: agents and subagent turns at work
export const machines = signal([]); // /ws/machines: the fleet's machines (a daemon alone: itself)
// What the new-session form, the settings views and the sidebar's workspace names offer.
export const choices = signal({ agents: [], workspaces: [], profiles: [], loaded: false });
export const choicesError = signal("");
// null while settings.json is in force; else GET /api/status's settings_error:
// {message, path, key, line, column} (line and column when the text is not JSON).
export const settingsProblem = signal(null);
// null on a daemon alone; on a fleet member GET /api/status's `fleet`: {machine, status: online |
// unreachable, detail} (unreachable: Redis is gone, this machine's sessions go on).
export const fleetProblem = signal(null);
export const clock = signal(Date.now()); // ticks every 5 s: the ages shown

// The machine answering (its row says `self`), and whether there are others to tell apart: a
// daemon alone (one machine) shows no machine anywhere, as before there were fleets.
export const thisMachine = computed(() => machines.value.find((m) => m.self) || null);
export const isFleet = computed(() => machines.value.length > 1);
// A row of this machine's own (a daemon alone tags nothing).
export const isOwn = (row) => !row.machine || !thisMachine.value || row.machine === thisMachine.value.id;
export const machineNameOf = (row) => row.machine_name || (row.machine || "").slice(0, 8);

export const LIVE = ["starting", "running"];
export const isLive = (s) => LIVE.includes(s.status);
// A session of a machine that is away (contract §18): likely running there, out of reach here.
export const isAway = (s) => s.status === "unreachable";
// An ended chat, or any session whose process went while svc was away (contract §17 "Resume").
export const resumable = (s) => !isLive(s) && !isAway(s) && (s.kind !== "terminal" || s.end_reason === "interrupted");

// Fetched again after every change a form makes (a workspace, a profile, an agent). Two writes
// in quick succession each fetch; the answers may come back in either order, and one older than
// what is shown is dropped (it would put back the list from before the second write).
let asked = 0;
let shown = 0;
export async function loadChoices() {
  const mine = ++asked;
  const [agents, workspaces, profiles] = await Promise.all([api("GET", "agents"), api("GET", "workspaces"), api("GET", "profiles")]);
  if (mine < shown) return;
  shown = mine;
  choices.value = { agents, workspaces, profiles, loaded: true };
  choicesError.value = "";
}

// A removed session leaves the list at once (the live list drops it too, a moment later).
export function forgetSession(id) {
  sessions.value = sessions.value.filter((s) => s.id !== id);
}

// While the tab is hidden, a new notification also shows as a browser notification (tagged with
// its id, so the Web Push of the same notification replaces it rather than showing twice).
const announced = new Set();
let primed = false;

async function notifyBrowser(n) {
  if (document.visibilityState === "visible" || !("Notification" in window) || Notification.permission !== "granted") return;
  const options = { body: n.body, tag: n.id, data: { url: n.session_id ? `/#session=${n.session_id}` : "/" } };
  const registration = navigator.serviceWorker && (await navigator.serviceWorker.getRegistration("/"));
  if (registration) registration.showNotification(n.title, options);
  else new Notification(n.title, options);
}

function receiveNotifications(list) {
  for (const n of list) {
    if (primed && !announced.has(n.id)) notifyBrowser(n).catch(() => {});
    announced.add(n.id);
  }
  primed = true;
  notifications.value = list;
}

const changed = (target, value) => {
  if (JSON.stringify(value || null) !== JSON.stringify(target.peek())) target.value = value || null;
};

// An edit that broke settings.json is not in force (svc keeps the last good settings, and refuses
// to save over the file): the banner says so, with the file, the line and column or the key, and
// the problem, until the file is fixed. A fleet member that cannot reach the others says so too.
async function watchStatus() {
  try {
    const { settings_error: problem, fleet } = await api("GET", "status");
    changed(settingsProblem, problem);
    changed(fleetProblem, fleet && fleet.status !== "online" ? fleet : null);
  } catch {
    /* the unreachable banner says it */
  }
  setTimeout(watchStatus, 3000);
}

export function startStore() {
  live("/ws/sessions", (list) => {
    sessions.value = list;
  });
  live("/ws/notifications", receiveNotifications);
  live("/ws/channels", (list) => {
    channels.value = list;
  });
  live("/ws/tunnels", (list) => {
    tunnels.value = list;
  });
  live("/ws/pairings", (list) => {
    pairings.value = list;
  });
  live("/ws/agents/runtime", (list) => {
    runtime.value = list;
  });
  live("/ws/machines", (list) => {
    machines.value = list;
  });
  loadChoices().catch((error) => {
    choicesError.value = error.message;
  });
  watchStatus();
  setInterval(() => {
    clock.value = Date.now();
  }, 5000);
}
