// Previews: owner and share links, a live countdown of each share's 600 s, copy buttons.
// /api/previews has no live socket, so the list is fetched again every few seconds.
"use strict";

(() => {
  const list = document.getElementById("previews");
  let previews = [];

  function countdown(iso) {
    const left = Math.round((Date.parse(iso) - Date.now()) / 1000);
    if (left <= 0) return "share expired";
    return `share expires in ${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}`;
  }

  function copyButton(url, label) {
    const button = svc.el("button", { type: "button", textContent: label });
    button.onclick = async () => {
      try { await navigator.clipboard.writeText(url); button.textContent = "Copied"; } catch { button.textContent = "Copy failed"; }
      setTimeout(() => { button.textContent = label; }, 1500);
    };
    return button;
  }

  function card(p) {
    const title = p.title || (p.kind === "file" ? p.file : `port ${p.port}`);
    const item = svc.el("li", { className: "card" }, svc.el("strong", { textContent: title }));
    item.dataset.slug = p.slug;
    item.append(" ", svc.el("a", { href: p.owner_url, target: "_blank", rel: "noopener", textContent: p.kind === "file" ? "open Markdown" : "open (owner)" }));
    if (p.share_url) {
      const live = p.share_expires_at && Date.parse(p.share_expires_at) > Date.now();
      const timer = svc.el("span", { className: "countdown", textContent: countdown(p.share_expires_at) });
      timer.dataset.expires = p.share_expires_at;
      item.append(svc.el("div", {}, live ? svc.el("a", { href: p.share_url, target: "_blank", rel: "noopener", textContent: "share link" }) : null,
        " ", timer, " ", live ? copyButton(p.share_url, "Copy share link") : null));
    }
    item.append(svc.el("div", { className: "hint", textContent: p.workspace || "" }));
    return item;
  }

  function render() {
    list.replaceChildren(...(previews.length ? previews.map(card) : [svc.el("li", { className: "hint", textContent: "No previews yet: an agent makes one with the preview or md_preview tool." })]));
  }

  async function refresh() {
    try { previews = await svc.api("GET", "previews"); render(); } catch { /* the banner says why */ }
  }

  setInterval(() => list.querySelectorAll(".countdown").forEach((t) => { t.textContent = countdown(t.dataset.expires); }), 1000);
  setInterval(refresh, 5000);
  refresh();
})();
