// svc's API and sockets as the dashboard uses them: JSON calls to /api/ (CSRF token, and through a
// tunnel the page key, docs/remote.md), sockets to /ws (the page key as a subprotocol), live lists
// that reconnect by themselves, and the banner that says when svc cannot be reached.
import { signal } from "@preact/signals";

const meta = (name) => {
  const node = document.querySelector(`meta[name="${name}"]`);
  return node ? node.content : "";
};

export const csrf = () => meta("csrf-token");
// Through a tunnel only this page holds the key that opens /api/ and /ws.
export const pageKey = () => meta("svc-page-key");
// …and the id of the paired device it runs on (its own row in the Remote view's list).
export const deviceId = () => meta("svc-device");

export function headers() {
  const sent = { "Content-Type": "application/json", "X-CSRFToken": csrf() };
  if (pageKey()) sent["X-Svc-Page-Key"] = pageKey();
  return sent;
}

// What the banner says: null while svc answers, else {kind: "down" | "refused", text} and, when it
// names a command to run, {command, after} (shown as code, with a Copy button).
export const banner = signal(null);

// What starts svc again as it ran (`bin/svc run`, its port and $SVC_HOME), and the secret
// variables it had, by name: the page has them from its document, as a daemon that is gone
// cannot be asked (core/restart_command.py). `make run` would start on port 8000.
function down() {
  if (banner.peek() && banner.peek().kind === "refused") return;
  const env = meta("svc-restart-env").split(" ").filter(Boolean);
  const also = env.length ? ` (with ${env.join(" and ")} set as before)` : "";
  banner.value = {
    kind: "down",
    text: `svc is not answering at ${location.host}. Start it again on its machine with`,
    command: meta("svc-restart") || "bin/svc run",
    after: `${also}; this page reconnects by itself.`,
  };
}

function refused(status) {
  const login = meta("svc-login-command") || "bin/svc url";
  // A paired device pairs again (its page, reloaded, asks for a code); the owner's browser logs in.
  banner.value = pageKey()
    ? { kind: "refused", text: `svc refused this device (HTTP ${status}): reload this page to pair it again.` }
    : { kind: "refused", text: `svc refused this browser (HTTP ${status}): log in again with the URL`, command: login, after: " prints." };
}

function up() {
  if (banner.peek() && banner.peek().kind === "down") banner.value = null;
}

// A refusal of the request itself (a wrong pairing code, a forbidden path) is not a logout.
const BROWSER_REFUSED = ["not_authenticated", "not_paired", "page_key", "cross_origin"];

// One request; its answer as {ok, status, data}, for a caller whose refusal body matters (a merge
// conflict names its files; a wrong pairing code is a 403 of its own). Only a network failure throws.
export async function request(method, path, body) {
  let response;
  try {
    response = await fetch(`/api/${path}`, {
      method,
      headers: headers(),
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    down();
    throw new Error("svc is unreachable");
  }
  up();
  const data = response.status === 204 ? null : await response.json().catch(() => null);
  return { ok: response.ok, status: response.status, data };
}

const message = ({ status, data }) => (data && data.error && data.error.message) || `HTTP ${status}`;

// The usual call: the answer's data, or an Error saying what svc said. A 401/403 that refuses the
// browser itself puts up the "log in again" banner.
export async function api(method, path, body) {
  const answer = await request(method, path, body);
  const { status, data } = answer;
  const browserRefused = !data || !data.error || BROWSER_REFUSED.includes(data.error.code);
  if ((status === 401 || status === 403) && browserRefused) refused(status);
  if (!answer.ok) throw new Error(message(answer));
  return data;
}

// Like api, but a 403 is the call's own answer (approving a pairing code), never "logged out".
export async function call(method, path, body) {
  const answer = await request(method, path, body);
  if (!answer.ok) throw new Error(message(answer));
  return answer.data;
}

export function socket(path) {
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${path}`;
  return pageKey() ? new WebSocket(url, [`svc.page.${pageKey()}`]) : new WebSocket(url);
}

// A live list (contract §7): the socket sends the complete list on connect and on every change.
// `receive(list)` gets each; a dropped socket comes back with backoff. Returns a function that
// closes it for good.
export function live(path, receive) {
  let delay = 500;
  let failures = 0;
  let ws = null;
  let stopped = false;
  const open = () => {
    ws = socket(path);
    ws.onopen = () => {
      delay = 500;
      failures = 0;
      up();
    };
    let parts = []; // a long list comes in pages {part, parts, items} (contract §7)
    ws.onmessage = (event) => {
      const said = JSON.parse(event.data);
      if (Array.isArray(said)) {
        parts = [];
        receive(said);
        return;
      }
      if (said.part === 0) parts = [];
      if (said.part !== parts.length) return; // a page of a list already replaced
      parts.push(said.items);
      if (parts.length === said.parts) {
        const list = parts.flat();
        parts = [];
        receive(list);
      }
    };
    ws.onclose = (event) => {
      if (stopped) return;
      if (event.code === 4401 || event.code === 4403) {
        refused(event.code);
        return;
      }
      if (++failures >= 2) down();
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 10000);
    };
  };
  open();
  return () => {
    stopped = true;
    ws.close();
  };
}

export function age(iso, now = Date.now()) {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86400)} d`;
}
