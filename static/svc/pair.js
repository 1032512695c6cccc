// The pairing page (docs/remote.md): ask for a code, show it, wait for the owner's approval.
// A reload mid-flow resumes the same request (sessionStorage), and each tab pairs on its own.
"use strict";
(() => {
  const codeBox = document.getElementById("code");
  const statusBox = document.getElementById("status");
  const button = document.getElementById("start");
  const saved = () => JSON.parse(sessionStorage.getItem("svc-pairing") || "null");
  let timer = null;

  function show(text) { statusBox.textContent = text; }

  async function begin() {
    button.disabled = true;
    const response = await fetch("/pair/start", { method: "POST", credentials: "same-origin" });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      show((data.error && data.error.message) || `Could not start pairing (HTTP ${response.status}).`);
      button.disabled = false;
      return;
    }
    const pairing = { pair_id: data.pair_id, code: data.code, until: Date.now() + data.expires_in * 1000 };
    sessionStorage.setItem("svc-pairing", JSON.stringify(pairing));
    wait(pairing);
  }

  function wait(pairing) {
    codeBox.textContent = pairing.code;
    button.hidden = true;
    clearInterval(timer);
    const tick = async () => {
      const left = Math.max(0, Math.round((pairing.until - Date.now()) / 1000));
      const response = await fetch(`/pair/status?pair_id=${encodeURIComponent(pairing.pair_id)}`, { credentials: "same-origin" });
      const data = await response.json().catch(() => ({ status: "pending" }));
      if (data.status === "approved") {
        clearInterval(timer);
        sessionStorage.removeItem("svc-pairing");
        show("Approved. Opening svc…");
        location.replace("/");
      } else if (data.status === "pending") {
        show(`Waiting for approval… (${left} s left)`);
      } else {
        clearInterval(timer);
        sessionStorage.removeItem("svc-pairing");
        codeBox.textContent = "";
        show(data.status === "denied" ? "The request was denied." : "The code expired. Ask for a new one.");
        button.hidden = false;
        button.disabled = false;
      }
    };
    tick();
    timer = setInterval(tick, 1000);
  }

  button.addEventListener("click", begin);
  const pending = saved();
  if (pending && pending.until > Date.now()) wait(pending);
  // Opened from a link on another site: the SameSite=Strict cookie was not sent with this load.
  fetch("/pair/session", { credentials: "same-origin" }).then((r) => r.json()).then((d) => {
    if (d.paired && location.pathname === "/") location.reload();
  }).catch(() => {});
})();
