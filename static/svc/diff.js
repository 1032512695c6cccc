// Diff review (contract §10): what a session or a subagent changed against its base commit, as
// the API measured it with git — files with their +/− counts, hunks with old/new line numbers,
// highlighted when highlight.js is on the page. Line comments collect in a pending list and go to
// the agent as one prompt; a subagent's branch can be merged or discarded from here.
// Shown for `#view=diff&of=sessions/<id>` or `#view=diff&of=subagents/<id>`.
import { api, request } from "./api.js";
import { languageOf, parsePatch, withMarkup } from "./diff-patch.js";
import { view } from "./nav.js";
import { SLOW_MS, html, useCallback, useEffect, useHash, useMemo, useRef, useState } from "./ui.js";

const OF = /^(sessions|subagents)\/[A-Za-z0-9-]+$/;
const OPEN_LINES = 1500; // files are shown open until this many diff lines; the rest start collapsed
const MINUS = "\u2212";

const keyOf = (c) => `${c.path}\u0000${c.side}\u0000${c.line}`;
const where = (c) => `${c.path}:${c.line}${c.side === "old" ? " (original)" : ""}`;
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// A POST whose refusal body matters (a merge conflict names its files): api() keeps only the message.
const post = (path) => request("POST", path);

function Counts({ file }) {
  if (file.binary) return html`<span class="diff-counts"><span class="diff-binary">binary</span></span>`;
  return html`<span class="diff-counts" aria-label=${`${file.insertions} added, ${file.deletions} removed`}>
    <span class="diff-ins">+${file.insertions}</span> <span class="diff-del">${MINUS}${file.deletions}</span></span>`;
}

function CommentBox({ comment, onSave, onCancel }) {
  const [text, setText] = useState(comment.text || "");
  const box = useRef(null);
  useEffect(() => {
    if (box.current) box.current.focus();
  }, []);
  const save = () => {
    if (text.trim()) onSave({ ...comment, text: text.trim() });
  };
  return html`<div class="diff-comment-box">
    <textarea rows="3" aria-label=${`Your comment on ${where(comment)}`} value=${text} ref=${box}
      onInput=${(e) => setText(e.currentTarget.value)}
      onKeyDown=${(e) => {
        if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) save();
        if (e.key === "Escape") onCancel();
      }}></textarea>
    <div class="row"><button type="button" onClick=${save} disabled=${!text.trim()}>Add comment</button>
      <button type="button" onClick=${onCancel}>Cancel</button></div></div>`;
}

function Line({ file, line, pending, draft, setDraft, addComment, commentable }) {
  if (line.note) {
    return html`<tr class="diff-note"><td class="diff-no"></td><td class="diff-no"></td><td class="diff-mark"></td><td class="diff-code">${line.text}</td></tr>`;
  }
  const side = line.mark === "-" ? "old" : "new";
  const number = side === "old" ? line.oldNo : line.newNo;
  const comment = { path: file.path, line: number, side, quote: `${line.mark}${line.text}` };
  const key = keyOf(comment);
  const button = !commentable
    ? number
    : html`<button type="button" class="diff-ln" aria-label=${`Comment on ${where(comment)}`}
    onClick=${() => setDraft(draft === key ? null : key)}>${number}</button>`;
  const kind = { "+": "diff-add", "-": "diff-rem", " ": "diff-ctx" }[line.mark];
  const mark = { "+": "+", "-": MINUS, " ": "" }[line.mark];
  const here = pending.filter((c) => keyOf(c) === key);
  return html`
    <tr class=${kind}>
      <td class="diff-no">${side === "old" ? button : line.oldNo}</td>
      <td class="diff-no">${side === "new" ? button : ""}</td>
      <td class="diff-mark" aria-hidden="true">${mark}</td>
      ${
        line.markup !== undefined
          ? html`<td class="diff-code hljs" dangerouslySetInnerHTML=${{ __html: line.markup || " " }}></td>`
          : html`<td class="diff-code">${line.text || " "}</td>`
      }
    </tr>
    ${here.map((c) => html`<tr class="diff-pending-row"><td colspan="3"></td><td><span class="diff-pending-label">Pending comment:</span> ${c.text}</td></tr>`)}
    ${
      draft === key &&
      html`<tr class="diff-draft-row"><td colspan="4">
      <${CommentBox} comment=${comment} onCancel=${() => setDraft(null)} onSave=${(c) => {
        addComment(c);
        setDraft(null);
      }} /></td></tr>`
    }`;
}

function FileDiff({ file, section, open, toggle, ...lineProps }) {
  const hunks = useMemo(() => (open && section ? withMarkup(section.hunks, languageOf(file.path)) : []), [open, section, file.path]);
  const id = `diff-file-${file.index}`;
  let body;
  if (!section) body = html`<p class="hint">Not shown: the diff was too large to send whole.</p>`;
  else if (section.binary) body = html`<p class="hint">Binary file: no lines to show.</p>`;
  else if (!section.hunks.length) body = html`<p class="hint">${section.header.filter((h) => /mode/.test(h)).join("; ") || "No line changes."}</p>`;
  else
    body = html`<div class="diff-scroll" tabindex="0" role="region" aria-label=${`diff of ${file.path}`}>
    <table class="diff-table"><tbody>
      ${hunks.map(
        (hunk) => html`
        <tr class="diff-hunk"><td colspan="4">${hunk.head}</td></tr>
        ${hunk.lines.map((line) => html`<${Line} file=${file} line=${line} ...${lineProps} />`)}`,
      )}
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
  return html`<section class="diff-pending card" aria-label="pending comments">
    <h3>Pending comments</h3>
    <ol>${pending.map(
      (c) => html`<li><code>${where(c)}</code> ${c.text}
      <button type="button" class="small diff-small" aria-label=${`Remove comment on ${where(c)}`} onClick=${() => remove(c)}>Remove</button></li>`,
    )}</ol>
    <button type="button" class="primary diff-primary" disabled=${sending} onClick=${send}>Send ${plural(pending.length, "comment")} to the agent</button>
  </section>`;
}

// What a merge did, in a sentence.
function merged(r) {
  let text = r.up_to_date
    ? `Nothing new to merge: ${r.base_branch} already contains ${r.branch}.`
    : r.fast_forward
      ? `Merged: ${r.base_branch} fast-forwarded to ${r.base_commit.slice(0, 12)}.`
      : `Merged: merge commit ${r.base_commit.slice(0, 12)} on ${r.base_branch}.`;
  if (r.committed && r.committed.length) text += ` Left uncommitted by the agent, committed on ${r.branch} first: ${r.committed.join(", ")}.`;
  return text;
}

function Actions({ of, data, reload, setNotice }) {
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [conflict, setConflict] = useState(null);
  useEffect(() => {
    setConflict(null);
    setConfirming(false);
  }, [of]);
  if (!of.startsWith("subagents/")) return null;
  const merge = async () => {
    setBusy(true);
    setConflict(null);
    setNotice(null);
    const slow = setTimeout(() => setNotice({ busy: true, text: "Merging…" }), SLOW_MS);
    try {
      const { ok, data: r } = await post(`${of}/merge`);
      if (!ok) {
        const error = (r && r.error) || {};
        if (error.files && error.files.length) {
          setNotice(null);
          setConflict({ files: error.files, message: error.message });
        } else setNotice({ bad: true, text: `Not merged: ${error.message || "the merge failed"}` });
        return;
      }
      setNotice({ text: merged(r) });
      reload();
    } catch (e) {
      setNotice({ bad: true, text: e.message });
    } finally {
      clearTimeout(slow);
      setBusy(false);
    }
  };
  const discard = async () => {
    setBusy(true);
    setConfirming(false);
    setConflict(null);
    setNotice(null);
    const slow = setTimeout(() => setNotice({ busy: true, text: "Discarding…" }), SLOW_MS);
    try {
      await api("POST", `${of}/discard`);
      setNotice({ text: `Discarded: the worktree and branch ${data ? data.branch : ""} were removed.` });
      reload();
    } catch (e) {
      setNotice({ bad: true, text: e.message });
    } finally {
      clearTimeout(slow);
      setBusy(false);
    }
  };
  return html`<div class="diff-actions">
    <div class="row">
      <button type="button" class="primary diff-primary" disabled=${busy || !data} onClick=${merge}>Merge</button>
      <button type="button" class="danger diff-danger" disabled=${busy || !data} aria-expanded=${confirming ? "true" : "false"} onClick=${() => setConfirming(!confirming)}>Discard…</button>
      <span class="hint">Merge brings the branch's commits into the branch it was made from: a fast-forward when possible, otherwise a merge commit.</span>
    </div>
    ${
      confirming &&
      html`<div class="diff-confirm notice notice-warn" role="group" aria-label="confirm discard">
      <span>Remove the worktree and delete branch <code>${data && data.branch}</code>? Its changes are lost.</span>
      <button type="button" class="danger diff-danger" onClick=${discard}>Discard worktree and branch</button>
      <button type="button" onClick=${() => setConfirming(false)}>Keep them</button></div>`
    }
    ${
      conflict &&
      html`<div class="diff-conflict notice notice-bad" role="alert">
      <strong>Merge conflict: nothing was merged.</strong> The base branch was left unchanged. Conflicting files:
      <ul>${conflict.files.map((f) => html`<li><code>${f}</code></li>`)}</ul></div>`
    }
  </div>`;
}

// What git says of `of`, fetched again on Refresh, after a merge or discard, and when the view is
// shown again (the layout switches views without a hashchange).
function useDiff(of) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [generation, setGeneration] = useState(0);
  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  const shownNow = view.value === "diff";
  const wasShown = useRef(shownNow);
  useEffect(() => {
    if (shownNow && !wasShown.current) reload();
    wasShown.current = shownNow;
  }, [shownNow]);
  useEffect(() => {
    let stale = false;
    setError(null);
    api("GET", `${of}/diff`)
      .then((d) => {
        if (!stale) setData(d);
      })
      .catch((e) => {
        if (!stale) {
          setData(null);
          setError(e.message);
        }
      });
    return () => {
      stale = true;
    };
  }, [of, generation]);
  return { data, error, reload };
}

// A plain shell takes no comments (svc refuses: the shell would run the quoted lines).
function useShell(of) {
  const [shell, setShell] = useState(false);
  useEffect(() => {
    if (!of.startsWith("sessions/")) return;
    api("GET", of)
      .then((s) => setShell(s.kind === "terminal" && s.agent === "shell"))
      .catch(() => {});
  }, [of]);
  return shell;
}

// Line comments collect here and go to the agent as one prompt.
function useComments(of, setNotice) {
  const [pending, setPending] = useState([]);
  const [draft, setDraft] = useState(null);
  const [sending, setSending] = useState(false);
  const addComment = (c) => setPending((list) => [...list, c]);
  const remove = (c) => setPending((list) => list.filter((x) => x !== c));
  const send = async () => {
    setSending(true);
    setNotice(null);
    const slow = setTimeout(() => setNotice({ busy: true, text: "Sending…" }), SLOW_MS);
    try {
      const comments = pending.map(({ path, line, side, text }) => ({ path, line, side, text }));
      const sent = await api("POST", `${of}/diff/comments`, { comments });
      setPending([]);
      const how = sent.delivered === "typed" ? "typed into its terminal" : sent.resumed ? "resumed it and sent the prompt" : "sent as one prompt";
      setNotice({ text: `${plural(comments.length, "comment")} sent to the agent of session ${String(sent.session_id).slice(0, 8)} (${how}).` });
    } catch (e) {
      setNotice({ bad: true, text: `Not sent: ${e.message}` });
    } finally {
      clearTimeout(slow);
      setSending(false);
    }
  };
  return { pending, draft, setDraft, addComment, remove, send, sending };
}

function FileList({ files, allOpen, jump }) {
  const ins = files.reduce((n, f) => n + (f.insertions || 0), 0);
  const del = files.reduce((n, f) => n + (f.deletions || 0), 0);
  return html`<nav class="diff-files" aria-label="changed files">
    <p class="diff-summary">${plural(files.length, "file")} changed, <span class="diff-ins">+${ins}</span> <span class="diff-del">${MINUS}${del}</span>
      <button type="button" class="small diff-small" onClick=${() => allOpen(true)}>Expand all</button>
      <button type="button" class="small diff-small" onClick=${() => allOpen(false)}>Collapse all</button></p>
    <ul>${files.map(
      (f) => html`<li data-path=${f.path}>
      <button type="button" class="diff-jump" aria-label=${`Go to ${f.path}`} onClick=${() => jump(f)}>${f.path}</button>
      <${Counts} file=${f} /></li>`,
    )}</ul></nav>`;
}

// The files, each open or collapsed: open until the diff is long, then only the first.
function Files({ data, lineProps }) {
  const [open, setOpen] = useState({});
  const sections = useMemo(() => parsePatch(data.patch || ""), [data]);
  const files = useMemo(() => data.files.map((f, index) => ({ ...f, index })), [data]);
  const total = sections.reduce((n, s) => n + s.hunks.reduce((m, h) => m + h.lines.length, 0), 0);
  const isOpen = (f) => (f.path in open ? open[f.path] : total <= OPEN_LINES || f.index === 0);
  const allOpen = (value) => setOpen(Object.fromEntries(files.map((f) => [f.path, value])));
  const jump = (f) => {
    setOpen({ ...open, [f.path]: true });
    requestAnimationFrame(() => document.getElementById(`diff-file-${f.index}`).scrollIntoView());
  };
  if (!files.length) return html`<p class="hint">No changes against the base commit.</p>`;
  return html`<${FileList} files=${files} allOpen=${allOpen} jump=${jump} />
    ${files.map(
      (f) => html`<${FileDiff} key=${f.path} file=${f} section=${sections[f.index]} open=${isOpen(f)}
      toggle=${() => setOpen({ ...open, [f.path]: !isOpen(f) })} ...${lineProps} />`,
    )}`;
}

function Meta({ of, data, reload }) {
  return html`<p class="diff-meta"><span>${of.startsWith("subagents/") ? "Subagent" : "Session"} <code>${of.split("/")[1].slice(0, 8)}</code></span>
    ${data && html` · <span>branch <code class="diff-branch">${data.branch || "(detached)"}</code></span> · <span>base <code class="diff-base" title=${data.base}>${String(data.base).slice(0, 12)}</code></span>`}
    <button type="button" class="small diff-small" onClick=${reload}>Refresh</button></p>`;
}

const NO_COMMENTS =
  "Comments go to agents. This session is a plain shell, which would run the quoted lines as commands, so svc does not send comments to it: open these changes from an agent's session (claude, codex, …) in this workspace to comment.";

function DiffView({ of }) {
  const { data, error, reload } = useDiff(of);
  const shell = useShell(of);
  const [notice, setNotice] = useState(null);
  const comments = useComments(of, setNotice);
  const lineProps = { pending: comments.pending, draft: comments.draft, setDraft: comments.setDraft, addComment: comments.addComment, commentable: !shell };
  return html`<div class="diff-view">
    <${Meta} of=${of} data=${data} reload=${reload} />
    <${Actions} of=${of} data=${data} reload=${reload} setNotice=${setNotice} />
    ${notice && html`<p class=${notice.bad ? "diff-notice notice notice-bad" : notice.busy ? "diff-notice notice" : "diff-notice notice notice-ok"} role="status" aria-busy=${notice.busy ? "true" : undefined}>${notice.text}</p>`}
    ${error && html`<p class="diff-error notice notice-bad" role="alert">${error}</p>`}
    ${
      data &&
      html`
      ${
        shell
          ? html`<p class="hint diff-no-comments">${NO_COMMENTS}</p>`
          : html`<${Pending} pending=${comments.pending} remove=${comments.remove} send=${comments.send} sending=${comments.sending} />`
      }
      ${data.patch_truncated && html`<p class="hint">The diff is too large to show whole; the counts are complete.</p>`}
      <${Files} data=${data} lineProps=${lineProps} />`
    }
  </div>`;
}

export function DiffApp() {
  const params = useHash();
  const of = params.get("of") || "";
  if (params.get("view") !== "diff" || !OF.test(of)) {
    return html`<p class="hint">Open a subagent's changes from its row under Subagent turns ("Review changes"), or a session's from its header ("Changes").</p>`;
  }
  return html`<${DiffView} key=${of} of=${of} />`;
}
