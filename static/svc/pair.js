// The pairing page (docs/remote.md): ask for a code, show it, wait for the owner's approval.
// A reload mid-flow resumes the same request (sessionStorage), and each tab pairs on its own.
// An ES module of its own (the page loads nothing else), so it runs once the page is parsed.
const codeBox = document.getElementById("code");
const statusBox = document.getElementById("status");
const button = document.getElementById("start");
const saved = () => JSON.parse(sessionStorage.getItem("svc-pairing") || "null");
let timer = null;

function show(text) {
  statusBox.textContent = text;
}

// An invite made on svc's machine comes in the link's fragment (never sent to a server): it is
// taken out of the address bar at once and sent once, as a header (pairing takes no body).
const fragment = new URLSearchParams(location.hash.slice(1));
const invite = fragment.get("invite");
if (invite) history.replaceState(null, "", location.pathname + location.search);

// On the LAN listener the QR code carries the certificate's fingerprint (docs/remote.md): shown
// here for the person to compare with the one the browser's certificate viewer shows.
const pinned = fragment.get("cert");
if (pinned && /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/.test(pinned)) {
  document.getElementById("cert-fingerprint").textContent = pinned;
  document.getElementById("cert").hidden = false;
}

async function begin(withInvite) {
  button.disabled = true;
  const headers = withInvite ? { "X-Svc-Pair-Invite": withInvite } : {};
  const response = await fetch("/pair/start", { method: "POST", headers, credentials: "same-origin" });
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
  codeBox.textContent = pairing.code; // empty for an invite: approved already
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

button.addEventListener("click", () => begin(null));
const pending = saved();
if (invite) begin(invite);
else if (pending && pending.until > Date.now()) wait(pending);
// Opened from a link on another site: the SameSite=Strict cookie was not sent with this load.
fetch("/pair/session", { credentials: "same-origin" })
  .then((r) => r.json())
  .then((d) => {
    if (d.paired && location.pathname === "/") location.reload();
  })
  .catch(() => {});
