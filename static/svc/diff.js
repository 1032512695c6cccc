// Diff review (contract §10): what a session or a subagent changed against its base commit, as
// the API measured it with git — files with their +/− counts, hunks with old/new line numbers,
// highlighted when highlight.js is on the page. Line comments collect in a pending list and go to
// the agent as one prompt; a subagent's branch can be merged or discarded from here.
// Shown for `#view=diff&of=sessions/<id>` or `#view=diff&of=subagents/<id>`.
import { html, render, useState, useEffect, useMemo, useRef, useCallback, useHash, svc } from "/static/svc/ui.js";

const OF = /^(sessions|subagents)\/[A-Za-z0-9-]+$/;
const OPEN_LINES = 1500; // files are shown open until this many diff lines; the rest start collapsed
const MINUS = "\u2212";

const LANGUAGES = {
  py: "python", pyi: "python", js: "javascript", mjs: "javascript", cjs: "javascript", jsx: "javascript",
  ts: "typescript", tsx: "typescript", json: "json", css: "css", scss: "scss", less: "less",
  html: "xml", htm: "xml", xml: "xml", svg: "xml", vue: "xml", md: "markdown", markdown: "markdown",
  sh: "bash", bash: "bash", zsh: "bash", yml: "yaml", yaml: "yaml", toml: "ini", ini: "ini", cfg: "ini",
  go: "go", rs: "rust", rb: "ruby", java: "java", kt: "kotlin", kts: "kotlin", c: "c", h: "c",
  cc: "cpp", cpp: "cpp", cxx: "cpp", hpp: "cpp", cs: "csharp", php: "php", sql: "sql", swift: "swift",
  lua: "lua", pl: "perl", r: "r", graphql: "graphql", gql: "graphql", m: "objectivec", mk: "makefile",
};

function languageOf(path) {
  const hljs = window.hljs;
  if (!hljs) return null;
  const name = path.split("/").pop();
  const lang = name === "Makefile" || name === "GNUmakefile" ? "makefile" : LANGUAGES[name.includes(".") ? name.split(".").pop().toLowerCase() : ""];
  return lang && hljs.getLanguage(lang) ? lang : null;
}

// hljs's markup for a block, cut into lines; a span open across a line break is closed at the end
// of the line and opened again on the next, so each line stands alone in its own table cell.
function splitMarkup(markup) {
  const lines = [];
  const open = [];
  let line = "";
  for (const m of markup.matchAll(/(<span[^>]*>)|(<\/span>)|([^<]+)/g)) {
    if (m[1]) { open.push(m[1]); line += m[1]; }
    else if (m[2]) { open.pop(); line += m[2]; }
    else {
      const parts = m[3].split("\n");
      line += parts[0];
      for (const part of parts.slice(1)) {
        lines.push(line + "</span>".repeat(open.length));
        line = open.join("") + part;
      }
    }
  }
  lines.push(line);
  return lines;
}

function highlighted(texts, lang) {
  if (!texts.length) return [];
  try {
    const lines = splitMarkup(window.hljs.highlight(texts.join("\n"), { language: lang, ignoreIllegals: true }).value);
    return lines.length === texts.length ? lines : null;
  } catch { return null; }
}

// The unified diff, one section per `diff --git`: they come in the order of the API's file list
// (one git diff made both), so section i belongs to files[i] whatever git did to quote its name.
function parsePatch(patch) {
  const sections = [];
  let section = null;
  let hunk = null;
  let oldNo = 0;
  let newNo = 0;
  for (const text of patch.split("\n")) {
    if (text.startsWith("diff --git ")) {
      section = { header: [], hunks: [], binary: false };
      sections.push(section);
      hunk = null;
      continue;
    }
    if (!section) continue;
    const at = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/.exec(text);
    if (at) {
      oldNo = Number(at[1]);
      newNo = Number(at[2]);
      hunk = { head: text, context: at[3].trim(), lines: [] };
      section.hunks.push(hunk);
      continue;
    }
    if (!hunk) {
      if (text.startsWith("Binary files ")) section.binary = true;
      if (text) section.header.push(text);
      continue;
    }
    const mark = text[0];
    if (mark === "+") hunk.lines.push({ mark, text: text.slice(1), newNo: newNo++ });
    else if (mark === "-") hunk.lines.push({ mark, text: text.slice(1), oldNo: oldNo++ });
    else if (mark === " ") hunk.lines.push({ mark, text: text.slice(1), oldNo: oldNo++, newNo: newNo++ });
    else if (mark === "\\") hunk.lines.push({ mark, text: text.slice(2), note: true });
  }
  return sections;
}

// Each hunk highlighted as two blocks (the old side and the new side) so a multi-line string or
// comment keeps its colour; each line takes its markup from the side it is on.
function withMarkup(hunks, lang) {
  if (!lang) return hunks;
  return hunks.map((hunk) => {
    const code = hunk.lines.filter((l) => !l.note);
    const oldSide = highlighted(code.filter((l) => l.mark !== "+").map((l) => l.text), lang);
    const newSide = highlighted(code.filter((l) => l.mark !== "-").map((l) => l.text), lang);
    if (!oldSide || !newSide) return hunk;
    let o = 0;
    let n = 0;
    return { ...hunk, lines: hunk.lines.map((l) => {
      if (l.note) return l;
      if (l.mark === "-") return { ...l, markup: oldSide[o++] };
      if (l.mark === "+") return { ...l, markup: newSide[n++] };
      o++;
      return { ...l, markup: newSide[n++] };
    }) };
  });
}

const keyOf = (c) => `${c.path}\u0000${c.side}\u0000${c.line}`;
const where = (c) => `${c.path}:${c.line}${c.side === "old" ? " (original)" : ""}`;
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// A POST whose refusal body matters (a merge conflict names its files): svc.api keeps only the message.
async function post(path) {
  const response = await fetch(`/api/${path}`, { method: "POST", headers: svc.headers(), credentials: "same-origin" });
  const data = response.status === 204 ? null : await response.json().catch(() => null);
  return { ok: response.ok, status: response.status, data };
}

function Counts({ file }) {
  if (file.binary) return html`<span class="diff-counts"><span class="diff-binary">binary</span></span>`;
  return html`<span class="diff-counts" aria-label=${`${file.insertions} added, ${file.deletions} removed`}>
    <span class="diff-ins">+${file.insertions}</span> <span class="diff-del">${MINUS}${file.deletions}</span></span>`;
}

function CommentBox({ comment, onSave, onCancel }) {
  const [text, setText] = useState(comment.text || "");
  const box = useRef(null);
  useEffect(() => { if (box.current) box.current.focus(); }, []);
  const save = () => { if (text.trim()) onSave({ ...comment, text: text.trim() }); };
  return html`<div class="diff-comment-box">
    <textarea rows="3" aria-label=${`Your comment on ${where(comment)}`} value=${text} ref=${box}
      onInput=${(e) => setText(e.currentTarget.value)}
      onKeyDown=${(e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) save(); if (e.key === "Escape") onCancel(); }}></textarea>
    <div class="row"><button type="button" onClick=${save} disabled=${!text.trim()}>Add comment</button>
      <button type="button" onClick=${onCancel}>Cancel</button></div></div>`;
}

function Line({ file, line, pending, draft, setDraft, addComment }) {
  if (line.note) {
    return html`<tr class="diff-note"><td class="diff-no"></td><td class="diff-no"></td><td class="diff-mark"></td><td class="diff-code">${line.text}</td></tr>`;
  }
  const side = line.mark === "-" ? "old" : "new";
  const number = side === "old" ? line.oldNo : line.newNo;
  const comment = { path: file.path, line: number, side, quote: `${line.mark}${line.text}` };
  const key = keyOf(comment);
  const button = html`<button type="button" class="diff-ln" aria-label=${`Comment on ${where(comment)}`}
    onClick=${() => setDraft(draft === key ? null : key)}>${number}</button>`;
  const kind = { "+": "diff-add", "-": "diff-rem", " ": "diff-ctx" }[line.mark];
  const mark = { "+": "+", "-": MINUS, " ": "" }[line.mark];
  const here = pending.filter((c) => keyOf(c) === key);
  return html`
    <tr class=${kind}>
      <td class="diff-no">${side === "old" ? button : line.oldNo}</td>
      <td class="diff-no">${side === "new" ? button : ""}</td>
      <td class="diff-mark" aria-hidden="true">${mark}</td>
      ${line.markup !== undefined
        ? html`<td class="diff-code hljs" dangerouslySetInnerHTML=${{ __html: line.markup || " " }}></td>`
        : html`<td class="diff-code">${line.text || " "}</td>`}
    </tr>
    ${here.map((c) => html`<tr class="diff-pending-row"><td colspan="3"></td><td><span class="diff-pending-label">Pending comment:</span> ${c.text}</td></tr>`)}
    ${draft === key && html`<tr class="diff-draft-row"><td colspan="4">
      <${CommentBox} comment=${comment} onCancel=${() => setDraft(null)} onSave=${(c) => { addComment(c); setDraft(null); }} /></td></tr>`}`;
}

function FileDiff({ file, section, open, toggle, ...lineProps }) {
  const hunks = useMemo(() => (open && section ? withMarkup(section.hunks, languageOf(file.path)) : []), [open, section, file.path]);
  const id = `diff-file-${file.index}`;
  let body;
  if (!section) body = html`<p class="hint">Not shown: the diff was too large to send whole.</p>`;
  else if (section.binary) body = html`<p class="hint">Binary file: no lines to show.</p>`;
  else if (!section.hunks.length) body = html`<p class="hint">${section.header.filter((h) => /mode/.test(h)).join("; ") || "No line changes."}</p>`;
  else body = html`<div class="diff-scroll" tabindex="0" role="region" aria-label=${`diff of ${file.path}`}>
    <table class="diff-table"><tbody>
      ${hunks.map((hunk) => html`
        <tr class="diff-hunk"><td colspan="4">${hunk.head}</td></tr>
        ${hunk.lines.map((line) => html`<${Line} file=${file} line=${line} ...${lineProps} />`)}`)}
    </tbody></table></div>`;
  return html`<article class="diff-file" data-path=${file.path} id=${id}>
    <h3 class="diff-file-head">
      <button type="button" class="diff-toggle" aria-expanded=${open ? "true" : "false"} aria-controls=${`${id}-body`} onClick=${toggle}>
        <span aria-hidden="true">${open ? "▾" : "▸"}</span> <span class="diff-path">${file.path}</span></button>
      <span class="diff-status">${{ A: "added", D: "deleted", M: "modified", T: "type changed" }[file.status] || file.status}</span>
      <${Counts} file=${file} /></h3>
    <div id=${`${id}-body`} hidden=${!open}>${open && body}</div>
  </article>`;
}

function Pending({ pending, remove, send, sending }) {
  if (!pending.length) return html`<p class="hint">Click a line number to comment on that line; comments collect here and go to the agent as one prompt.</p>`;
  return html`<section class="diff-pending" aria-label="pending comments">
    <h3>Pending comments</h3>
    <ol>${pending.map((c) => html`<li><code>${where(c)}</code> ${c.text}
      <button type="button" class="diff-small" aria-label=${`Remove comment on ${where(c)}`} onClick=${() => remove(c)}>Remove</button></li>`)}</ol>
    <button type="button" class="diff-primary" disabled=${sending} onClick=${send}>Send ${plural(pending.length, "comment")} to the agent</button>
  </section>`;
}

function Actions({ of, data, reload, setNotice }) {
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [conflict, setConflict] = useState(null);
  useEffect(() => { setConflict(null); setConfirming(false); }, [of]);
  if (!of.startsWith("subagents/")) return null;
  const merge = async () => {
    setBusy(true); setConflict(null); setNotice(null);
    try {
      const { ok, data: r } = await post(`${of}/merge`);
      if (!ok) {
        const error = (r && r.error) || {};
        if (error.files && error.files.length) setConflict({ files: error.files, message: error.message });
        else setNotice({ bad: true, text: `Not merged: ${error.message || "the merge failed"}` });
        return;
      }
      let text = r.up_to_date ? `Nothing new to merge: ${r.base_branch} already contains ${r.branch}.`
        : r.fast_forward ? `Merged: ${r.base_branch} fast-forwarded to ${r.base_commit.slice(0, 12)}.`
          : `Merged: merge commit ${r.base_commit.slice(0, 12)} on ${r.base_branch}.`;
      if (r.uncommitted && r.uncommitted.length) text += ` Uncommitted in the worktree, so not merged: ${r.uncommitted.join(", ")}.`;
      setNotice({ text });
      reload();
    } catch (e) { setNotice({ bad: true, text: e.message }); } finally { setBusy(false); }
  };
  const discard = async () => {
    setBusy(true); setConfirming(false); setConflict(null); setNotice(null);
    try {
      await svc.api("POST", `${of}/discard`);
      setNotice({ text: `Discarded: the worktree and branch ${data ? data.branch : ""} were removed.` });
      reload();
    } catch (e) { setNotice({ bad: true, text: e.message }); } finally { setBusy(false); }
  };
  return html`<div class="diff-actions">
    <div class="row">
      <button type="button" class="diff-primary" disabled=${busy || !data} onClick=${merge}>Merge</button>
      <button type="button" class="diff-danger" disabled=${busy || !data} aria-expanded=${confirming ? "true" : "false"} onClick=${() => setConfirming(!confirming)}>Discard…</button>
      <span class="hint">Merge brings the branch's commits into the branch it was made from: a fast-forward when possible, otherwise a merge commit.</span>
    </div>
    ${confirming && html`<div class="diff-confirm" role="group" aria-label="confirm discard">
      <span>Remove the worktree and delete branch <code>${data && data.branch}</code>? Its changes are lost.</span>
      <button type="button" class="diff-danger" onClick=${discard}>Discard worktree and branch</button>
      <button type="button" onClick=${() => setConfirming(false)}>Keep them</button></div>`}
    ${conflict && html`<div class="diff-conflict" role="alert">
      <strong>Merge conflict: nothing was merged.</strong> The base branch was left unchanged. Conflicting files:
      <ul>${conflict.files.map((f) => html`<li><code>${f}</code></li>`)}</ul></div>`}
  </div>`;
}

function DiffView({ of }) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [generation, setGeneration] = useState(0);
  const [pending, setPending] = useState([]);
  const [draft, setDraft] = useState(null);
  const [notice, setNotice] = useState(null);
  const [sending, setSending] = useState(false);
  const [open, setOpen] = useState({});
  const reload = useCallback(() => setGeneration((g) => g + 1), []);

  useEffect(() => { setPending([]); setDraft(null); setNotice(null); setOpen({}); }, [of]);
  // Shown again (the layout switches views without a hashchange): what git says now.
  useEffect(() => {
    const shown = (e) => { if (e.detail && e.detail.view === "diff") reload(); };
    document.addEventListener("svc:view", shown);
    return () => document.removeEventListener("svc:view", shown);
  }, [reload]);
  useEffect(() => {
    let stale = false;
    setError(null);
    svc.api("GET", `${of}/diff`).then((d) => { if (!stale) { setData(d); } })
      .catch((e) => { if (!stale) { setData(null); setError(e.message); } });
    return () => { stale = true; };
  }, [of, generation]);

  const sections = useMemo(() => (data ? parsePatch(data.patch || "") : []), [data]);
  const files = useMemo(() => (data ? data.files.map((f, index) => ({ ...f, index })) : []), [data]);
  const total = sections.reduce((n, s) => n + s.hunks.reduce((m, h) => m + h.lines.length, 0), 0);
  const isOpen = (f) => (f.path in open ? open[f.path] : total <= OPEN_LINES || f.index === 0);
  const toggle = (f) => setOpen({ ...open, [f.path]: !isOpen(f) });
  const allOpen = (value) => setOpen(Object.fromEntries(files.map((f) => [f.path, value])));

  const addComment = (c) => setPending((list) => [...list, c]);
  const remove = (c) => setPending((list) => list.filter((x) => x !== c));
  const send = async () => {
    setSending(true); setNotice(null);
    try {
      const comments = pending.map(({ path, line, side, text }) => ({ path, line, side, text }));
      const sent = await svc.api("POST", `${of}/diff/comments`, { comments });
      setPending([]);
      const how = sent.delivered === "typed" ? "typed into its terminal" : sent.resumed ? "resumed it and sent the prompt" : "sent as one prompt";
      setNotice({ text: `${plural(comments.length, "comment")} sent to the agent of session ${String(sent.session_id).slice(0, 8)} (${how}).` });
    } catch (e) { setNotice({ bad: true, text: `Not sent: ${e.message}` }); } finally { setSending(false); }
  };

  const lineProps = { pending, draft, setDraft, addComment };
  const ins = files.reduce((n, f) => n + (f.insertions || 0), 0);
  const del = files.reduce((n, f) => n + (f.deletions || 0), 0);
  return html`<div class="diff-view">
    <p class="diff-meta"><span>${of.startsWith("subagents/") ? "Subagent" : "Session"} <code>${of.split("/")[1].slice(0, 8)}</code></span>
      ${data && html` · <span>branch <code class="diff-branch">${data.branch || "(detached)"}</code></span> · <span>base <code class="diff-base" title=${data.base}>${String(data.base).slice(0, 12)}</code></span>`}
      <button type="button" class="diff-small" onClick=${reload}>Refresh</button></p>
    <${Actions} of=${of} data=${data} reload=${reload} setNotice=${setNotice} />
    ${notice && html`<p class=${notice.bad ? "diff-notice diff-bad" : "diff-notice"} role="status">${notice.text}</p>`}
    ${error && html`<p class="diff-error" role="alert">${error}</p>`}
    ${data && html`
      <${Pending} pending=${pending} remove=${remove} send=${send} sending=${sending} />
      ${data.patch_truncated && html`<p class="hint">The diff is too large to show whole; the counts are complete.</p>`}
      ${files.length ? html`
        <nav class="diff-files" aria-label="changed files">
          <p class="diff-summary">${plural(files.length, "file")} changed, <span class="diff-ins">+${ins}</span> <span class="diff-del">${MINUS}${del}</span>
            <button type="button" class="diff-small" onClick=${() => allOpen(true)}>Expand all</button>
            <button type="button" class="diff-small" onClick=${() => allOpen(false)}>Collapse all</button></p>
          <ul>${files.map((f) => html`<li data-path=${f.path}>
            <button type="button" class="diff-jump" aria-label=${`Go to ${f.path}`} onClick=${() => { setOpen({ ...open, [f.path]: true }); requestAnimationFrame(() => document.getElementById(`diff-file-${f.index}`).scrollIntoView()); }}>${f.path}</button>
            <${Counts} file=${f} /></li>`)}</ul></nav>
        ${files.map((f) => html`<${FileDiff} key=${f.path} file=${f} section=${sections[f.index]} open=${isOpen(f)} toggle=${() => toggle(f)} ...${lineProps} />`)}`
        : html`<p class="hint">No changes against the base commit.</p>`}`}
  </div>`;
}

function DiffApp() {
  const params = useHash();
  const of = params.get("of") || "";
  if (params.get("view") !== "diff" || !OF.test(of)) {
    return html`<p class="hint">Open a subagent's changes from its row under Subagent turns ("Review changes"), or a session's from its header ("Changes").</p>`;
  }
  return html`<${DiffView} key=${of} of=${of} />`;
}

const root = document.getElementById("diff");
if (root) render(html`<${DiffApp} />`, root);
