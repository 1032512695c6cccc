// One open chat's link to svc over /ws/chat (contract §7) that outlives its socket. svc restarted
// (Ctrl-C, a crash) or the network dropped: a new socket comes, with backoff, and opens the chat
// again `after` the last event the page has, so each event shows once and none is missed.
// Nothing sent meanwhile is dropped. A prompt carries a key of its own and stays unsent until
// svc says it has it (`prompt_received`): sent again on each new socket, it is taken once
// (docs/sessions.md), and refused it goes back to the page with svc's reason. The rest (cancel,
// permission answers, the queue's buttons) waits for the chat to be open again.
import { socket } from "./api.js";

const FIRST_DELAY = 500;
const MAX_DELAY = 10000;
const REFUSED = [4401, 4403]; // this browser is logged out: no socket will take it

function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(12)); // randomUUID needs a secure origin
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// `tab`: the open tab (nav.js), whose `unsent` prompts outlive this link: a chat resumed with a
// new process (after a reboot, say) gets a new view and link, which sends them with their keys.
// `on`: receive(event) for the log; closed() when the socket goes; unsent(texts, up) with the
// prompts svc does not have yet and whether a socket is open; refused(text, why) for a prompt
// svc will not take.
export function chatLink(tab, on) {
  const { session, resume } = tab;
  const state = { ws: null, attached: false, ended: false, first: true, delay: FIRST_DELAY, seq: 0, reopened: false };
  let visible = null; // said again on each new socket
  const waiting = []; // messages other than prompts, made while the chat was not open
  const prompts = tab.unsent; // key → text, until svc has it or refuses it
  const put = (message) => state.ws.send(JSON.stringify(message));
  const up = () => state.attached && state.ws.readyState === WebSocket.OPEN;
  const tell = () => on.unsent([...prompts.values()], up());
  const sendPrompt = (key, text) => put({ type: "prompt", session_id: session.id, text, key });

  const opened = () => {
    state.delay = FIRST_DELAY;
    put({ type: "open", session_id: session.id, resume: state.first && resume, after: state.seq });
    state.reopened = !state.first;
    state.first = false;
    state.attached = true;
    if (visible !== null) put({ type: "visible", session_id: session.id, visible });
    for (const [key, text] of prompts) sendPrompt(key, text);
    for (const message of waiting.splice(0)) put(message);
    tell();
  };
  const answered = (e) => {
    const text = prompts.get(e.key);
    if (text === undefined) return false;
    prompts.delete(e.key);
    tell();
    if (e.kind === "error") on.refused(text, e.message);
    return e.kind === "prompt_received";
  };
  const received = (e) => {
    if ((e.kind === "prompt_received" || e.kind === "error") && e.key && answered(e)) return;
    if (typeof e.seq === "number") {
      // Shown already; a permission request still waiting comes again on purpose (chat-log.js).
      if (e.seq <= state.seq && e.kind !== "permission_request") return;
      state.seq = Math.max(state.seq, e.seq);
    }
    if (e.kind === "session" && state.reopened) { state.reopened = false; e = { ...e, again: true }; }
    on.receive(e);
  };
  const lost = (event) => {
    state.attached = false;
    if (state.ended) return; // the tab was closed
    on.closed();
    if (REFUSED.includes(event.code)) {
      state.ended = true;
      for (const [key, text] of prompts) { prompts.delete(key); on.refused(text, "svc refused this browser: log in again"); }
    } else {
      setTimeout(connect, state.delay);
      state.delay = Math.min(state.delay * 2, MAX_DELAY);
    }
    tell();
  };
  const connect = () => {
    if (state.ended) return; // closed during the backoff
    state.ws = socket("/ws/chat");
    state.ws.onopen = opened;
    state.ws.onmessage = (event) => received(JSON.parse(event.data));
    state.ws.onclose = lost;
  };
  connect();
  if (prompts.size) tell();
  return {
    prompt(text) {
      const key = newKey();
      prompts.set(key, text);
      if (up()) sendPrompt(key, text);
      tell();
    },
    send(message) {
      if (up()) put(message);
      else waiting.push(message);
    },
    visible(now) {
      visible = now;
      if (up()) put({ type: "visible", session_id: session.id, visible: now });
    },
    close() { state.ended = true; state.ws.close(); },
  };
}
