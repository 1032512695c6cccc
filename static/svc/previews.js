// Previews: owner and share links, a live countdown of each share's 600 s, copy buttons.
// /api/previews has no live socket, so the list is fetched again every few seconds.
import { api } from "./api.js";
import { CopyButton, html, useEffect, useState, useTick } from "./ui.js";

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

function Card({ p, now }) {
  const title = p.title || (p.kind === "file" ? p.file : `port ${p.port}`);
  return html`<li class="card" data-slug=${p.slug}>
    <strong>${title}</strong> <a href=${p.owner_url} target="_blank" rel="noopener">${p.kind === "file" ? "open Markdown" : "open (owner)"}</a>
    ${p.share_url && html`<${Share} p=${p} now=${now} />`}
    <div class="hint">${p.workspace || ""}</div>
  </li>`;
}

export function PreviewsView() {
  const [previews, setPreviews] = useState([]);
  const now = useTick(1000);
  useEffect(() => {
    const refresh = () => api("GET", "previews").then(setPreviews).catch(() => { /* the banner says why */ });
    refresh();
    const timer = setInterval(refresh, 5000);
    return () => clearInterval(timer);
  }, []);
  return html`<p class="hint">Owner links need your login; share links work for anyone for 600 s (read-only).</p>
    <ul id="previews" class="cards">${previews.length ? previews.map((p) => html`<${Card} key=${p.slug} p=${p} now=${now} />`)
      : html`<li class="hint">No previews yet: an agent makes one with the preview or md_preview tool.</li>`}</ul>`;
}
