// Previews: made here (a port, or a Markdown file of a workspace), owner and share links, a live
// countdown of each share's 600 s, copy buttons, Remove. /api/previews has no live socket, so the
// list is fetched again every few seconds. Making and removing are the machine's own (a paired
// device gets 403 main_port_only), so through a tunnel the form is not offered.
import { api, pageKey } from "./api.js";
import { choices } from "./store.js";
import { CopyButton, Option, Status, Submit, html, useEffect, useState, useStatus, useTick } from "./ui.js";

function countdown(iso, now) {
  const left = Math.round((Date.parse(iso) - now) / 1000);
  if (left <= 0) return "share expired";
  return `share expires in ${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}`;
}

function Share({ p, now }) {
  const live = p.share_expires_at && Date.parse(p.share_expires_at) > now;
  return html`<div class="row">
    ${live && html`<a href=${p.share_url} target="_blank" rel="noopener">share link</a>`}
    <span class="countdown">${countdown(p.share_expires_at, now)}</span>
    ${live && html`<${CopyButton} text=${p.share_url} label="Copy share link" />`}
  </div>`;
}

function Card({ p, now, onRemoved }) {
  const title = p.title || (p.kind === "file" ? p.file : `port ${p.port}`);
  const [status, run, , busy] = useStatus();
  const remove = () =>
    busy ||
    run(async () => {
      await api("DELETE", `previews/${p.slug}`);
      onRemoved();
    }, "removing…");
  return html`<li class="card" data-slug=${p.slug}>
    <strong>${title}</strong> <a href=${p.owner_url} target="_blank" rel="noopener">${p.kind === "file" ? "open Markdown" : "open (owner)"}</a>
    ${!pageKey() && html` <button type="button" class="small danger preview-remove" aria-label=${`Remove preview ${title}`} aria-disabled=${busy ? "true" : undefined} onClick=${remove}>Remove</button>`}
    ${p.share_url && html`<${Share} p=${p} now=${now} />`}
    <div class="hint">${p.workspace || ""}</div>
    ${status && html`<${Status} text=${status} busy=${busy} />`}
  </li>`;
}

// The workspace's Markdown files, listed by svc (inside the workspace only), for the picker.
function useMarkdownFiles(workspace) {
  const [files, setFiles] = useState([]);
  useEffect(() => {
    setFiles([]);
    if (!workspace) return;
    api("GET", `preview-files?workspace=${encodeURIComponent(workspace)}`)
      .then((answer) => setFiles(answer.files))
      .catch(() => setFiles([]));
  }, [workspace]);
  return files;
}

function NewPreview({ onMade }) {
  const places = choices.value.workspaces.map((w) => w.path);
  const [kind, setKind] = useState("port");
  const [picked, setPicked] = useState("");
  const workspace = places.includes(picked) ? picked : places[0] || "";
  const files = useMarkdownFiles(kind === "file" ? workspace : "");
  const [status, run, , busy] = useStatus();
  const [warning, setWarning] = useState("");
  const submit = (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    const body = kind === "port" ? { port: Number(form.port.value), workspace } : { file: form.file.value, workspace };
    setWarning("");
    run(async () => {
      const made = await api("POST", "previews", body);
      setWarning(made.warning || "");
      onMade();
      return `Preview made: ${made.title || made.file || `port ${made.port}`}.`;
    }, "Making the preview…");
  };
  return html`<form id="new-preview" class="row" onSubmit=${submit} aria-label="New preview">
    <label>Of <select name="kind" value=${kind} onChange=${(e) => setKind(e.currentTarget.value)}>
      <${Option} value="port">a port (a dev server)<//><${Option} value="file">a Markdown file<//></select></label>
    <label>Workspace <select name="workspace" value=${workspace} onChange=${(e) => setPicked(e.currentTarget.value)}>
      ${places.length ? places.map((p) => html`<${Option} key=${p} value=${p}>${p}<//>`) : html`<option value="">(no workspace yet)</option>`}</select></label>
    ${
      kind === "port"
        ? html`<label>Port <input name="port" type="number" min="1" max="65535" required inputmode="numeric" placeholder="5173" /></label>`
        : html`<label>File <select name="file" required>${
            files.length ? files.map((f) => html`<${Option} key=${f} value=${f}>${f}<//>`) : html`<option value="">(no Markdown file here)</option>`
          }</select></label>`
    }
    <${Submit} busy=${busy}>Create<//>
    <${Status} id="new-preview-status" text=${status} busy=${busy} />
    ${warning && html`<p class="notice notice-warn preview-warning" role="alert">${warning}</p>`}
  </form>`;
}

export function PreviewsView() {
  const [previews, setPreviews] = useState([]);
  const [count, setCount] = useState(0); // bumped by a change made here: the list is fetched at once
  const now = useTick(1000);
  useEffect(() => {
    const refresh = () =>
      api("GET", "previews")
        .then(setPreviews)
        .catch(() => {
          /* the banner says why */
        });
    refresh();
    const timer = setInterval(refresh, 5000);
    return () => clearInterval(timer);
  }, [count]);
  const changed = () => setCount((c) => c + 1);
  return html`${pageKey() ? html`<p class="hint">Previews are made and removed on svc's own machine.</p>` : html`<${NewPreview} onMade=${changed} />`}
    <p class="hint">Owner links need your login; share links work for anyone for 600 s (read-only).</p>
    <ul id="previews" class="cards">${
      previews.length
        ? previews.map((p) => html`<${Card} key=${p.slug} p=${p} now=${now} onRemoved=${changed} />`)
        : html`<li class="hint">No previews yet: make one above, or an agent makes one with its preview or md_preview tool.</li>`
    }</ul>`;
}
