// A terminal session: xterm.js over /ws?session_id=… (contract §7), with a bar of the keys a
// phone's keyboard lacks. Keys typed while there is no open socket (it is opening, or svc is
// away and it comes back) wait for the next one.
import { Terminal as XTerm } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import { socket } from "./api.js";
import { html, useLayoutEffect, useRef, useState } from "./ui.js";

const encoder = new TextEncoder();

// Keys kept while no socket is open; what is typed beyond it is dropped, and the screen says so.
const KEPT_BYTES = 64 * 1024;

// The keys typed while a terminal has no open socket, for the next one, in order.
function keptKeys(term) {
  const early = [];
  let bytes = 0;
  let dropped = 0;
  return {
    keep(keys) {
      if (bytes + keys.length > KEPT_BYTES) {
        dropped += keys.length;
        return;
      }
      bytes += keys.length;
      early.push(keys);
    },
    flush(ws) {
      for (const keys of early.splice(0)) ws.send(keys);
      if (dropped) term.write(`\r\n\x1b[2m[svc: ${dropped} bytes typed while svc was away were not sent]\x1b[0m\r\n`);
      bytes = 0;
      dropped = 0;
    },
  };
}

// The socket of one terminal: the scrollback repaints the screen on each (re)connect, a dropped
// connection (svc restarted) comes back with backoff, and keys typed meanwhile are kept for the
// next socket, in order, once each. A terminal on another machine that cannot be reached says so
// once, and comes back by itself when it can.
function connect(session, term) {
  let ws = null;
  let closed = false;
  let delay = 500;
  let said = "";
  const kept = keptKeys(term);
  const sendSize = () => ws && ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
  const received = (first, event) => {
    if (typeof event.data !== "string") {
      if (first.value) {
        term.reset();
        first.value = false;
      }
      term.write(new Uint8Array(event.data));
      return;
    }
    const message = JSON.parse(event.data);
    if (message.type === "exited") {
      closed = true;
      term.write(`\r\n\x1b[2m[process exited with code ${message.exit_code}]\x1b[0m\r\n`);
    }
    if (message.type === "skipped") term.write(`\r\n\x1b[2m[svc: ${message.bytes} bytes of output skipped]\x1b[0m\r\n`);
    if (message.type === "error" && message.message !== said) {
      said = message.message;
      term.write(`\r\n\x1b[2m[svc: ${said}]\x1b[0m\r\n`);
    }
  };
  const open = () => {
    ws = socket(`/ws?session_id=${session.id}`);
    ws.binaryType = "arraybuffer";
    const first = { value: true }; // the scrollback frame: on a reconnect it replaces the screen
    ws.onopen = () => {
      delay = 500;
      sendSize();
      kept.flush(ws);
    };
    ws.onmessage = (event) => received(first, event);
    ws.onclose = (event) => {
      if (event.code === 4404) {
        term.write("\r\n[no such session]\r\n");
        return;
      }
      // After a daemon restart the session reports itself exited.
      if (!closed && event.code !== 1000) {
        setTimeout(open, delay);
        delay = Math.min(delay * 2, 10000);
      }
    };
  };
  open();
  return {
    send(data) {
      if (ws.readyState === WebSocket.OPEN) ws.send(encoder.encode(data));
      else if (!closed) kept.keep(encoder.encode(data));
    },
    sendSize,
    close() {
      closed = true;
      ws.close();
    },
  };
}

// With Ctrl armed, one typed character becomes its control character (c → \x03, [ → Esc).
function controlled(data) {
  const code = data.toUpperCase().charCodeAt(0);
  if (code >= 64 && code <= 95) return String.fromCharCode(code - 64);
  if (data === " " || data === "2") return "\x00";
  if (data === "?") return "\x7f";
  return data;
}

// Keys a phone's keyboard lacks: a sticky Ctrl (the next key goes as its control character), Esc,
// Tab and the arrows (in the cursor-key mode the program asked for). The buttons leave the focus
// (and a phone's keyboard) on the terminal.
function KeyBar({ term, ctrl, send }) {
  const [armed, setArmed] = useState(false);
  ctrl.arm = (on) => {
    ctrl.on = on;
    setArmed(on);
  };
  const press = (action) => () => {
    action();
    term.current.focus();
  };
  const plain = (sequence) =>
    press(() => {
      ctrl.arm(false);
      send(sequence);
    });
  const arrow = (final) =>
    press(() => {
      const t = term.current;
      const app = t.modes && t.modes.applicationCursorKeysMode;
      send(ctrl.on ? `\x1b[1;5${final}` : `\x1b${app ? "O" : "["}${final}`);
      ctrl.arm(false);
    });
  const key = (label, title, onClick, pressed) => html`<button type="button" class="term-key" title=${title} aria-label=${title}
    aria-pressed=${pressed} onMouseDown=${(e) => e.preventDefault()} onClick=${onClick}>${label}</button>`;
  return html`<div class="term-keys" role="toolbar" aria-label="terminal keys">
    ${key(
      "Ctrl",
      "Control: the next key is sent with Ctrl",
      press(() => ctrl.arm(!ctrl.on)),
      String(armed),
    )}
    ${key("Esc", "Esc (Escape)", plain("\x1b"))}${key("Tab", "Tab", plain("\t"))}
    ${key("←", "Left", arrow("D"))}${key("↑", "Up", arrow("A"))}${key("↓", "Down", arrow("B"))}${key("→", "Right", arrow("C"))}
  </div>`;
}

// Made once, when the component mounts; ended when its tab closes.
function mount(screen, session, ctrl) {
  const term = new XTerm({ cursorBlink: true, scrollback: 10000, fontSize: 13 });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(screen);
  fit.fit();
  const link = connect(session, term);
  // Alt+1…9 are the dashboard's (open session tab N, nav.js). With no tab N the key must still not
  // reach the program: xterm would send Esc+digit, which readline takes as a count ("(arg: 2)")
  // for the next key typed.
  term.attachCustomKeyEventHandler((event) => {
    if (!event.altKey || event.ctrlKey || event.metaKey || !/^Digit[1-9]$/.test(event.code)) return true;
    event.preventDefault();
    return false;
  });
  const input = term.onData((data) => {
    if (ctrl.on && data.length === 1) {
      ctrl.arm(false);
      data = controlled(data);
    }
    link.send(data);
  });
  const resized = term.onResize(link.sendSize);
  const refit = () => fit.fit();
  window.addEventListener("resize", refit);
  // The screen's own size changes too (the key bar below it, a tab shown again): refit then.
  const watcher = new ResizeObserver(() => {
    if (screen.clientHeight > 0 && screen.clientWidth > 0) fit.fit();
  });
  watcher.observe(screen);
  term.focus();
  const end = () => {
    input.dispose();
    resized.dispose();
    window.removeEventListener("resize", refit);
    watcher.disconnect();
    link.close();
    term.dispose();
  };
  return { term, link, fit, end };
}

export function Terminal({ session, onShown }) {
  const screen = useRef(null);
  const term = useRef(null);
  const link = useRef(null);
  const ctrl = useRef({ on: false, arm: () => {} }).current;
  useLayoutEffect(() => {
    const made = mount(screen.current, session, ctrl);
    term.current = made.term;
    link.current = made.link;
    onShown.current = () => {
      made.fit.fit();
      made.term.focus();
    };
    return made.end;
  }, []);
  const send = (data) => link.current && link.current.send(data);
  return html`<div class="term-screen" ref=${screen}></div><${KeyBar} term=${term} ctrl=${ctrl} send=${send} />`;
}
