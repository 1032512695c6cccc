// Remote access (contract §13): the tunnels (status, public URL with a copy button and a QR code
// for a phone, start/stop) and pairing (approve a code, pending requests, paired devices).
"use strict";

(() => {
  const tunnels = document.getElementById("tunnels");
  const tunnelsStatus = document.getElementById("tunnels-status");
  const pairings = document.getElementById("pairings");
  const approveForm = document.getElementById("pair-approve");
  const approveStatus = document.getElementById("pair-approve-status");
  const button = (label, onclick) => svc.el("button", { type: "button", textContent: label, onclick });
  const time = (iso) => new Date(iso).toLocaleString();

  // --- tunnels ----------------------------------------------------------------------------------

  function copyButton(text) {
    const copy = button("Copy", async () => {
      try { await navigator.clipboard.writeText(text); copy.textContent = "Copied"; } catch { copy.textContent = "Copy failed"; }
      setTimeout(() => { copy.textContent = "Copy"; }, 1500);
    });
    copy.setAttribute("aria-label", `Copy ${text}`);
    return copy;
  }

  // The URL as a QR code (qrcode-generator, static/vendor), drawn as SVG: dark on white in both
  // colour schemes, with the 4-module quiet zone scanners need.
  function qrCode(text) {
    const qr = qrcode(0, "M");
    qr.addData(text);
    qr.make();
    const count = qr.getModuleCount(), size = count + 8;
    let path = "";
    for (let row = 0; row < count; row++) {
      for (let col = 0; col < count; col++) if (qr.isDark(row, col)) path += `M${col + 4} ${row + 4}h1v1h-1z`;
    }
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", `0 0 ${size} ${size}`);
    svg.setAttribute("class", "qr");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", `QR code of ${text}`);
    const back = document.createElementNS(ns, "rect");
    Object.entries({ width: size, height: size, fill: "#fff" }).forEach(([k, v]) => back.setAttribute(k, v));
    const dark = document.createElementNS(ns, "path");
    dark.setAttribute("d", path);
    dark.setAttribute("fill", "#000");
    svg.append(back, dark);
    return svg;
  }

  async function tunnelAction(t, action) {
    // Stopping the tunnel this page came through cuts this browser off: ask first.
    const here = t.public_url && new URL(t.public_url).host === location.host;
    if (action === "stop" && here && !confirm(`This page reaches svc through ${t.name}: stop it anyway?`)) return;
    tunnelsStatus.textContent = "";
    try { await svc.api("POST", `tunnels/${encodeURIComponent(t.name)}/${action}`); } catch (error) { tunnelsStatus.textContent = `${t.name}: ${error.message}`; }
  }

  function tunnelCard(t) {
    const item = svc.el("li", { className: "card" },
      svc.el("strong", { textContent: t.name }), ` ${t.provider} · `,
      svc.el("span", { className: `tunnel-${t.status}`, textContent: t.status }), " ",
      t.status === "stopped" ? button("Start", () => tunnelAction(t, "start")) : button("Stop", () => tunnelAction(t, "stop")));
    item.dataset.tunnel = t.name;
    if ((t.status === "error" || t.status === "starting") && t.detail) {
      const retry = t.status === "error" && t.retry_in_s ? ` (retrying in ${Math.round(t.retry_in_s)} s)` : "";
      item.append(svc.el("div", { className: "hint", textContent: t.detail + retry }));
    }
    if (t.public_url) {
      item.append(svc.el("div", {}, svc.el("a", { href: t.public_url, target: "_blank", rel: "noopener", textContent: t.public_url }), " ", copyButton(t.public_url)),
        qrCode(t.public_url));
    }
    return item;
  }

  function renderTunnels(rows) {
    tunnels.replaceChildren(...(rows.length ? rows.map(tunnelCard)
      : [svc.el("li", { className: "hint", textContent: "No tunnels: declare one under \"tunnels\" in settings.json." })]));
  }

  // --- pairing ----------------------------------------------------------------------------------

  let pairingRows = [];

  function pairingCard(p) {
    if (p.kind === "request") {
      const deny = button("Deny", () => svc.api("POST", `pairings/requests/${encodeURIComponent(p.id)}/deny`).catch((error) => { approveStatus.textContent = error.message; }));
      const item = svc.el("li", { className: "card" }, `waiting: ${p.device || "unknown browser"} since ${time(p.created_at)} `, deny);
      item.dataset.request = p.id;
      return item;
    }
    const revoke = button("Revoke", () => svc.api("DELETE", `pairings/${encodeURIComponent(p.id)}`).catch((error) => { approveStatus.textContent = error.message; }));
    revoke.dataset.revoke = p.id;
    const item = svc.el("li", { className: "card" }, svc.el("strong", { textContent: p.device || "unknown browser" }), " ", revoke,
      svc.el("div", { className: "hint", textContent: `via ${p.host || "?"} · first seen ${time(p.first_seen)} · last seen ${svc.age(p.last_seen)} ago` }));
    item.dataset.device = p.id;
    return item;
  }

  function renderPairings() {
    pairings.replaceChildren(...(pairingRows.length ? pairingRows.map(pairingCard)
      : [svc.el("li", { className: "hint", textContent: "No paired devices. Open a tunnel's URL on your phone to pair it." })]));
  }

  // Not svc.api: its 403 means "logged out", while a wrong code here is a 403 of its own.
  async function approve(code) {
    let response;
    try {
      response = await fetch("/api/pairings/approve", { method: "POST", headers: svc.headers(), body: JSON.stringify({ code }), credentials: "same-origin" });
    } catch {
      throw new Error("svc is unreachable");
    }
    const data = await response.json().catch(() => null);
    if (!response.ok) throw new Error((data && data.error && data.error.message) || `HTTP ${response.status}`);
    return data;
  }

  approveForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    approveStatus.textContent = "approving…";
    try {
      const approved = await approve(approveForm.code.value.trim());
      approveStatus.textContent = `Approved: ${approved.device || "the browser"} is paired as soon as its page notices.`;
      approveForm.reset();
    } catch (error) {
      approveStatus.textContent = error.message;
    }
  });

  subscribe("/ws/tunnels", renderTunnels);
  // A request's code lasts 60 s and no message says when it lapses: it is dropped here.
  const live = (p) => p.kind !== "request" || Date.parse(p.expires_at) > Date.now();
  subscribe("/ws/pairings", (rows) => { pairingRows = rows.filter(live); renderPairings(); });
  setInterval(() => { if (!pairingRows.every(live)) { pairingRows = pairingRows.filter(live); renderPairings(); } }, 1000);
})();
