// Search over every session's chat history (contract §10 Search), from GET /api/search. A hit
// links to `#session=<id>&at=<seq>`: the session view opens there and scrolls to that event.
import { api } from "./api.js";
import { hashParams, html, useEffect, useRef, useState } from "./ui.js";

const DEBOUNCE_MS = 250;
const LIMIT = 50;
const KINDS = {
  user_message_chunk: "you",
  agent_message_chunk: "agent",
  agent_thought_chunk: "thought",
  tool_call: "tool call",
  tool_call_update: "tool call",
  permission_request: "permission request",
};
const ENTITIES = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#x27;": "'", "&#39;": "'" };

function unescapeEntities(text) {
  return text.replace(/&(?:amp|lt|gt|quot|#x27|#39);/g, (entity) => ENTITIES[entity]);
}

// The API's snippet is HTML-escaped text with each hit between <mark> and </mark>. Text from a
// chat that looked like a tag arrives escaped, so only the API's own tags split it; each part is
// unescaped back to plain text and rendered as text, never parsed as HTML.
export function snippetParts(snippet) {
  const parts = [];
  let marked = false;
  for (const piece of (snippet || "").split(/(<mark>|<\/mark>)/)) {
    if (piece === "<mark>") marked = true;
    else if (piece === "</mark>") marked = false;
    else if (piece) parts.push({ text: unescapeEntities(piece), marked });
  }
  return parts;
}

function Snippet({ snippet }) {
  return html`<p class="search-snippet">${snippetParts(snippet).map((part) => (part.marked ? html`<mark>${part.text}</mark>` : part.text))}</p>`;
}

function when(iso) {
  if (!iso) return null;
  const date = new Date(iso);
  return html`<time datetime=${iso} title=${date.toLocaleString()}>${date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" })}</time>`;
}

function Hit({ hit }) {
  const name = hit.title || `${hit.agent} session`;
  const href = `#session=${encodeURIComponent(hit.session_id)}&at=${hit.seq}`;
  return html`<li class="search-hit" data-session-id=${hit.session_id} data-hit-seq=${hit.seq}>
    <a href=${href} class="search-open card">
      <span class="search-title">${name}</span>
      <span class="search-meta">${hit.title ? `${hit.agent} · ` : ""}${KINDS[hit.kind] || hit.kind.replaceAll("_", " ")} · ${when(hit.created_at)}</span>
      <${Snippet} snippet=${hit.snippet} />
    </a>
  </li>`;
}

function asked() {
  const params = hashParams();
  return params.get("view") === "search" ? (params.get("q") || "").trim() : "";
}

// The query's answer: {q, hits} or {q, error}; an older answer that comes late is dropped.
function useQuery() {
  const [result, setResult] = useState(null);
  const [busy, setBusy] = useState(false);
  const latest = useRef(0);
  const timer = useRef(0);
  const run = async (text) => {
    clearTimeout(timer.current);
    const q = text.trim();
    const ticket = ++latest.current;
    if (!q) {
      setResult(null);
      setBusy(false);
      return;
    }
    setBusy(true);
    try {
      const hits = await api("GET", `search?q=${encodeURIComponent(q)}&limit=${LIMIT}`);
      if (ticket === latest.current) setResult({ q, hits });
    } catch (e) {
      if (ticket === latest.current) setResult({ q, error: e.message });
    } finally {
      if (ticket === latest.current) setBusy(false);
    }
  };
  const later = (q) => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => run(q), DEBOUNCE_MS);
  };
  return { result, busy, run, later, stop: () => clearTimeout(timer.current) };
}

function statusOf(busy, result) {
  if (busy) return "Searching…";
  if (!result || result.error) return "";
  const count = result.hits.length;
  if (!count) return `No match for “${result.q}”.`;
  return `${count === LIMIT ? `The first ${LIMIT}` : count} ${count === 1 ? "hit" : "hits"} for “${result.q}”.`;
}

export function Search() {
  const [text, setText] = useState(asked);
  const query = useQuery();
  const input = useRef(null);
  // `#view=search&q=word` (a link, the back button) fills the box and runs the query.
  useEffect(() => {
    const follow = () => {
      const q = asked();
      if (!q) return;
      setText(q);
      query.run(q);
    };
    follow();
    window.addEventListener("hashchange", follow);
    return () => {
      window.removeEventListener("hashchange", follow);
      query.stop();
    };
  }, []);
  // Typed, the box searches once the typing pauses; Enter searches at once.
  const typed = (event) => {
    setText(event.currentTarget.value);
    query.later(event.currentTarget.value);
  };
  const submitted = (event) => {
    event.preventDefault();
    query.run(input.current.value);
  };
  const { result } = query;
  return html`
    <form class="row search-form" role="search" onSubmit=${submitted}>
      <label>Search chat history <input id="search-q" ref=${input} type="search" name="q" value=${text}
        onInput=${typed} autocomplete="off" enterkeyhint="search" placeholder=${'words, "a phrase", -word'} /></label>
      <button type="submit" class="primary">Search</button>
    </form>
    <p class="hint search-status" role="status">${statusOf(query.busy, result)}</p>
    ${result && result.error ? html`<p class="search-error notice notice-bad" role="alert">Search failed: ${result.error}</p>` : null}
    ${
      result && result.hits && result.hits.length
        ? html`<ol class="search-hits">${result.hits.map((hit) => html`<${Hit} key=${`${hit.session_id}:${hit.seq}`} hit=${hit} />`)}</ol>`
        : null
    }`;
}
