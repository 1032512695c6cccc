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

// `tab`: the open tab (nav.js), whose `unsent` prompts (key → text) outlive this link: a chat
// resumed with a new process (after a reboot, say) gets a new view and link, which sends them
// with their keys. `on`: receive(event) for the log; closed() when the socket goes;
// unsent(texts, up) with the prompts svc does not have yet and whether the chat is open;
// refused(text, why) for a prompt svc will not take.
class ChatLink {
  constructor(tab, on) {
    this.session = tab.session;
    this.resume = tab.resume;
    this.prompts = tab.unsent;
    this.on = on;
    this.ws = null;
    this.attached = false; // the chat is open on this socket
    this.ended = false; // the tab closed, or svc refused this browser
    this.first = true;
    this.reopened = false; // the next `session` event answers a reopening
    this.delay = FIRST_DELAY;
    this.seq = 0; // the last stored event the page has
    this.visibleNow = null; // said again on each new socket
    this.waiting = []; // messages other than prompts, made while the chat was not open
    this.connect();
    if (this.prompts.size) this.tell();
  }

  get up() {
    return this.attached && this.ws.readyState === WebSocket.OPEN;
  }

  put(message) {
    this.ws.send(JSON.stringify(message));
  }

  tell() {
    this.on.unsent([...this.prompts.values()], this.up);
  }

  sendPrompt(key, text) {
    this.put({ type: "prompt", session_id: this.session.id, text, key });
  }

  connect() {
    if (this.ended) return; // closed during the backoff
    this.ws = socket("/ws/chat");
    this.ws.onopen = () => this.opened();
    this.ws.onmessage = (event) => this.received(JSON.parse(event.data));
    this.ws.onclose = (event) => this.lost(event);
  }

  opened() {
    const id = this.session.id;
    this.delay = FIRST_DELAY;
    this.put({ type: "open", session_id: id, resume: this.first && this.resume, after: this.seq });
    this.reopened = !this.first;
    this.first = false;
    this.attached = true;
    if (this.visibleNow !== null) this.put({ type: "visible", session_id: id, visible: this.visibleNow });
    for (const [key, text] of this.prompts) this.sendPrompt(key, text);
    for (const message of this.waiting.splice(0)) this.put(message);
    this.tell();
  }

  // svc's answer to a prompt of this page's: true when it is only that (nothing to show).
  answered(e) {
    const text = this.prompts.get(e.key);
    if (text === undefined) return false;
    this.prompts.delete(e.key);
    this.tell();
    if (e.kind === "error") this.on.refused(text, e.message);
    return e.kind === "prompt_received";
  }

  received(e) {
    if ((e.kind === "prompt_received" || e.kind === "error") && e.key && this.answered(e)) return;
    if (typeof e.seq === "number") {
      // Shown already; a permission request still waiting comes again on purpose (chat-log.js).
      // The later parts of an event split at the frame limit share its seq.
      const part = e.seq === this.seq && e.part > 0;
      if (e.seq <= this.seq && e.kind !== "permission_request" && !part) return;
      this.seq = Math.max(this.seq, e.seq);
    }
    if (e.kind === "session" && this.reopened) {
      this.reopened = false;
      e = { ...e, again: true };
    }
    this.on.receive(e);
  }

  lost(event) {
    this.attached = false;
    if (this.ended) return; // the tab was closed
    this.on.closed();
    if (REFUSED.includes(event.code)) {
      this.ended = true;
      for (const [key, text] of this.prompts) {
        this.prompts.delete(key);
        this.on.refused(text, "svc refused this browser: log in again");
      }
    } else {
      setTimeout(() => this.connect(), this.delay);
      this.delay = Math.min(this.delay * 2, MAX_DELAY);
    }
    this.tell();
  }

  prompt(text) {
    const key = newKey();
    this.prompts.set(key, text);
    if (this.up) this.sendPrompt(key, text);
    this.tell();
  }

  send(message) {
    if (this.up) this.put(message);
    else this.waiting.push(message);
  }

  visible(now) {
    this.visibleNow = now;
    if (this.up) this.put({ type: "visible", session_id: this.session.id, visible: now });
  }

  close() {
    this.ended = true;
    this.ws.close();
  }
}

export const chatLink = (tab, on) => new ChatLink(tab, on);
