// A chat session over /ws/chat (contract §7): the streamed log (chat-log.js says what it holds),
// the message box (Enter sends, Shift+Enter a new line) with Send and, while a turn runs, Cancel.
// What is sent while a turn runs waits in svc's queue, shown above the box (Send now, Remove).
// The socket comes back by itself after svc restarts (chat-link.js); a message svc does not have
// yet is shown above the box until it has, and one it refuses goes back into the box, said not
// sent. The page tells svc whether the person sees this chat, so a turn that ends out of sight
// is notified (§15).
import { api, headers, pageKey } from "./api.js";
import { chatLink } from "./chat-link.js";
import { answered, apply, emptyLog, rowAt } from "./chat-log.js";
import { Markdown } from "./markdown.js";
import { onScreen } from "./nav.js";
import { isAway, isLive, machineNameOf, resumable, sessions } from "./store.js";
import { Component, Status, effect, html, useComputed, useLayoutEffect, useRef, useState, useStatus } from "./ui.js";

// A failed prompt's stderr, fetched when its box is first opened.
function AgentLog({ sessionId }) {
  const [text, setText] = useState("");
  const toggled = async (event) => {
    if (!event.currentTarget.open || text) return;
    setText("loading…");
    try {
      setText((await api("GET", `sessions/${sessionId}/log`)).log || "(the agent wrote nothing on stderr)");
    } catch (error) {
      setText(error.message);
    }
  };
  return html`<details onToggle=${toggled}><summary>The agent's log</summary>${logLink(sessionId)}<pre class="agent-log">${text}</pre></details>`;
}

// The agent's whole log in a tab of its own: only on svc's machine (a log may hold secrets, so
// the remote listener refuses it; a phone has the last lines in the ended bar).
const logLink = (sessionId) =>
  !pageKey() &&
  html`<a class="agent-log-link" href=${`/api/sessions/${sessionId}/log?as=text`}
  target="_blank" rel="noopener">Open the log</a>`;

// An ended chat says how it ended (an agent that failed: its exit code and last stderr lines),
// links its log and offers Resume; resumed, the chat is drawn again for the new process.
function Ended({ sessionId }) {
  const row = useComputed(() => sessions.value.find((s) => s.id === sessionId) || null).value;
  const [text, run] = useStatus();
  if (!row || isLive(row)) return null;
  if (isAway(row)) {
    return html`<div class="chat-ended chat-away" role="status" data-status=${row.status}>
      <p class="chat-ended-head">Machine ${machineNameOf(row)} is unreachable: this chat comes back when it rejoins.</p></div>`;
  }
  const code = row.exit_code === null || row.exit_code === undefined ? "" : ` (exit code ${row.exit_code})`;
  const resume = () =>
    run(async () => {
      await api("POST", `sessions/${sessionId}/resume`);
    }, "resuming…");
  return html`<div class="chat-ended" role="status" data-status=${row.status}>
    <p class="chat-ended-head">This chat has ended${code}.</p>
    ${row.detail && html`<pre class="chat-ended-detail" tabindex="0" aria-label="how it ended">${row.detail}</pre>`}
    <div class="row">
      ${resumable(row) && html`<button type="button" class="chat-resume primary" onClick=${resume}>Resume</button>`}
      ${logLink(sessionId)} <${Status} text=${text} />
    </div></div>`;
}

// When something happened, in the reader's own time (the exact moment on hover).
function when(iso) {
  const date = new Date(iso);
  return html`<time datetime=${iso} title=${date.toLocaleString()}>${date.toLocaleTimeString()}</time>`;
}

// An event too large for the chat (docs/sessions.md "Frames"), whole in a tab of its own: the
// browser's session opens the link on svc's machine; through a tunnel only this page holds the
// page key, so the page fetches it and opens what came.
function Whole({ href }) {
  const url = `${href}?format=json`;
  const click = async (event) => {
    if (!pageKey()) return;
    event.preventDefault();
    const response = await fetch(url, { headers: headers(), credentials: "same-origin" });
    open(URL.createObjectURL(await response.blob()), "_blank", "noopener");
  };
  return html`<a class="chat-whole" href=${url} target="_blank" rel="noopener" onClick=${click}>open it whole</a>`;
}

function Permission({ row, attrs, answer }) {
  return html`<div ...${attrs}>${row.text}${row.options.map(
    (option) => html`<button type="button" disabled=${row.answered}
    onClick=${() => answer(row, option)}>${option.name}</button>`,
  )}</div>`;
}

function rowView(row, attrs, { sessionId, answer, painted }) {
  switch (row.kind) {
    case "agent":
      return html`<${Markdown} text=${row.text} class=${attrs.class} seq=${attrs["data-seq"]} hit=${attrs["data-hit"]} painted=${painted} />`;
    case "agent-error":
      return html`<div ...${attrs}>${row.text}${row.hasLog && html`<${AgentLog} sessionId=${sessionId} />`}</div>`;
    case "thought":
      return html`<div ...${attrs}><details><summary>Thinking</summary><div class="thought-text">${row.text}</div></details></div>`;
    case "tool":
      return html`<div ...${attrs} data-tool-call-id=${row.id} data-status=${row.status}>
      <span class="tool-title">${row.text}</span> <span class="tool-status">${row.status}</span></div>`;
    case "permission":
      return html`<${Permission} row=${row} attrs=${attrs} answer=${answer} />`;
    case "decision":
      return html`<div ...${attrs} data-surface=${row.surface || undefined}>${row.text}${row.at && html` · ${when(row.at)}`}</div>`;
    case "turn-end":
      return html`<div ...${attrs} role="separator">${row.text}</div>`;
    case "end":
      return html`<div ...${attrs}>${row.text}${row.fetch && html`: <${Whole} href=${row.fetch} />`}</div>`;
    default:
      return html`<div ...${attrs}>${row.text}</div>`;
  }
}

// One row; drawn again only when it changed (a long history stays cheap as the log grows).
class Row extends Component {
  shouldComponentUpdate(next) {
    return next.row !== this.props.row || next.hit !== this.props.hit;
  }

  render({ row, hit, ...context }) {
    const kind = row.kind === "agent-error" ? "chat-agent chat-agent-error" : `chat-${row.kind}`;
    const attrs = { class: hit === null ? kind : `${kind} chat-hit`, "data-seq": row.seq ?? undefined, "data-hit": hit ?? undefined };
    return rowView(row, attrs, context);
  }
}

// The link, made with the view and closed with it, and the `visible` reports (only changes).
function useChatLink(tab, on) {
  const link = useRef(null);
  useLayoutEffect(() => {
    const { session } = tab;
    link.current = chatLink(tab, on);
    let last = null;
    const stop = effect(() => {
      const now = onScreen(session.id);
      if (now !== last) {
        last = now;
        link.current.visible(now);
      }
    });
    return () => {
      stop();
      link.current.close();
    };
  }, []);
  return link;
}

// A search hit to show: now if its row is here, else once the replay reaches it.
function useReveal(tab, logRef) {
  const [hit, setHit] = useState(null);
  const pending = useRef(null);
  const shown = useRef(null); // the hit as of the last render, for callbacks made earlier
  shown.current = hit;
  useLayoutEffect(
    () =>
      effect(() => {
        const asked = tab.reveal.value;
        if (!asked) return;
        if (rowAt(logRef.current, asked.at)) setHit({ at: asked.at });
        else pending.current = asked.at;
      }),
    [],
  );
  const reached = (seq) => {
    if (pending.current === null || seq === null || seq === undefined || seq < pending.current) return;
    setHit({ at: pending.current });
    pending.current = null;
  };
  return { hit, setHit, pending, shown, reached };
}

// The prompts waiting for the running turn, first to go first (contract §17).
function Queued({ items, act }) {
  if (!items.length) return null;
  return html`<ol class="chat-queued" aria-label="queued messages">${items.map(
    (item) => html`<li key=${item.id} data-queued=${item.id}>
    <span class="queued-text">${item.text}</span>
    <button type="button" class="queued-now" onClick=${() => act("send_now", item.id)}>Send now</button>
    <button type="button" class="queued-remove" onClick=${() => act("unqueue", item.id)}>Remove</button></li>`,
  )}</ol>`;
}

// Messages svc does not have yet: svc is away (sent once it is back), or just now being sent.
function Unsent({ unsent }) {
  if (!unsent.texts.length) return null;
  const why = unsent.up ? "sending…" : "not sent yet: svc is not answering; sent once it is back";
  return html`<ol class="chat-unsent" aria-label="messages not sent yet">${unsent.texts.map(
    (text) => html`<li>
    <span class="unsent-text">${text}</span> <span class="unsent-why">${why}</span></li>`,
  )}</ol>`;
}

function ChatInput({ input, running, prompt, cancel }) {
  const keyDown = (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    prompt();
  };
  return html`<div class="chat-input">
    <textarea rows="3" ref=${input} placeholder="Message the agent (Enter sends, Shift+Enter new line)" aria-label="message" onKeyDown=${keyDown}></textarea>
    <div class="chat-buttons">
      <button type="button" class="chat-send primary" onClick=${prompt}>Send</button>
      <button type="button" class="chat-cancel danger" hidden=${!running} onClick=${cancel}>Cancel turn</button>
    </div></div>`;
}

// A prompt svc refused goes back into the box, before what is typed there now.
function putBack(input, text) {
  const now = input.value;
  input.value = now.trim() ? `${text}\n${now}` : text;
}

export function Chat({ tab, onShown }) {
  const sessionId = tab.session.id;
  const [log, setLog] = useState(emptyLog);
  const logRef = useRef(log);
  logRef.current = log;
  const box = useRef(null);
  const input = useRef(null);
  const reveal = useReveal(tab, logRef);
  const [unsent, setUnsent] = useState({ texts: [], up: false });
  const [notSent, setNotSent] = useState("");
  const link = useChatLink(tab, {
    receive: (e) => {
      setLog((current) => apply(current, e));
      reveal.reached(e.seq);
    },
    closed: () => setLog((current) => ({ ...current, running: false })),
    unsent: (texts, up) => setUnsent({ texts, up }),
    refused: (text, why) => {
      putBack(input.current, text);
      setNotSent(why);
    },
  });
  // New rows keep the log at its end, unless a search hit is being shown.
  const bottom = () => {
    if (reveal.pending.current === null && !reveal.shown.current && box.current) box.current.scrollTop = box.current.scrollHeight;
  };
  useLayoutEffect(() => {
    onShown.current = () => input.current.focus();
    input.current.focus();
  }, []);
  useLayoutEffect(bottom, [log.rows.length]);
  useLayoutEffect(() => {
    const node = reveal.hit && box.current.querySelector("[data-hit]");
    if (node) node.scrollIntoView({ block: "center" });
  }, [reveal.hit]);
  const prompt = () => {
    const text = input.current.value;
    if (!text.trim()) return;
    // `/pickup CODE` asks svc for a handed-over session (contract §4): not a message for the agent.
    if (/^\s*\/pickup/i.test(text)) link.current.send({ type: "prompt", session_id: sessionId, text });
    else link.current.prompt(text);
    input.current.value = "";
    setNotSent("");
    input.current.focus();
    reveal.setHit(null);
  };
  const answer = (row, option) => {
    // The session's id routes the answer to the machine that runs the chat (contract §18).
    link.current.send({ type: "permission", session_id: sessionId, request_id: row.request, option_id: option.option_id });
    setLog((current) => answered(current, row.key));
  };
  const target = reveal.hit && rowAt(log, reveal.hit.at);
  return html`<div class="chat-log" ref=${box}>${log.rows.map(
    (row) => html`<${Row} key=${row.key} row=${row}
      hit=${row === target ? reveal.hit.at : null} sessionId=${sessionId} answer=${answer} painted=${bottom} />`,
  )}</div>
    <${Ended} sessionId=${sessionId} />
    <${Queued} items=${log.queued} act=${(type, id) => link.current.send({ type, session_id: sessionId, id })} />
    <${Unsent} unsent=${unsent} />
    ${notSent && html`<p class="chat-not-sent" role="alert">Not sent: ${notSent}. Your message is back in the box.</p>`}
    <${ChatInput} input=${input} running=${log.running} prompt=${prompt}
      cancel=${() => link.current.send({ type: "cancel", session_id: sessionId })} />`;
}
