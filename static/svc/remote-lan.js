// Reaching svc with nothing but this machine (contract §13; docs/remote.md "A phone on the same
// network"): the remote listener's address and port, the phone-on-the-same-network card (turned
// on and off on svc's own machine; its URL as a QR code that carries the certificate's
// fingerprint) and the SSH command for a computer that can log in here. GET /api/remote says it
// all; PUT /api/remote/lan turns the LAN listener on or off.
import { api, pageKey } from "./api.js";
import { QRCode } from "./qr.js";
import { CopyButton, Status, html, useEffect, useState, useStatus } from "./ui.js";

const LABEL = { on: "on", off: "off", error: "cannot serve" };
const CLASS = { on: "tunnel-online", off: "tunnel-stopped", error: "tunnel-error" };

function LanCard({ lan, remote, setAccess }) {
  const [text, run] = useStatus();
  const toggle = () =>
    run(
      async () => {
        setAccess(await api("PUT", "remote/lan", { enabled: !lan.enabled }));
      },
      lan.enabled ? "turning off…" : "turning on… (the first time, a certificate is made)",
    );
  const on = lan.status === "on";
  return html`<li class="card" id="lan-listener" data-status=${lan.status}>
    <strong>Phone on the same network</strong> · <span class=${CLASS[lan.status]}>${LABEL[lan.status]}</span>${" "}
    ${!remote && html`<button type="button" id="lan-toggle" class=${lan.enabled ? "" : "primary"} onClick=${toggle}>${lan.enabled ? "Turn off" : "Turn on"}</button> `}
    <${Status} id="lan-status" text=${text} />
    <div class="hint">No tunnel, no internet: svc serves its pairing page and dashboard on this machine's network address too, over https with a certificate made here.${on ? "" : " Off until turned on."}</div>
    ${lan.detail && html`<div class="hint">${lan.detail}</div>`}
    ${
      on &&
      html`<div>Listening on <code id="lan-address">${lan.address}:${lan.port}</code> (https)</div>
      <div><a href=${lan.link} target="_blank" rel="noopener">${lan.url}</a> <${CopyButton} text=${lan.link} name=${`Copy ${lan.url}`} /></div>
      <${QRCode} text=${lan.link} />
      <p class="hint">The phone's browser warns that it does not know the certificate: it was made on this machine. Before you go on, check that its SHA-256 fingerprint (the warning's details, or the certificate viewer) is
        <code id="lan-fingerprint" class="wrap-anywhere">${lan.fingerprint}</code>; the pairing page shows the same. Then pair the phone as below.</p>`
    }
  </li>`;
}

function ListenerCard({ access }) {
  const { listener, ssh } = access;
  return html`<li class="card" id="remote-listener">
    <strong>The remote listener</strong> · <code id="remote-listener-address">${listener.address}:${listener.port || "not bound"}</code>
    <div class="hint">Tunnels forward here; only pairing, the dashboard for paired browsers and shares are served.</div>
    ${
      ssh &&
      html`<div id="ssh-access">From a computer that can log in to this machine by SSH, run
      <div><code id="ssh-command" class="wrap-anywhere">${ssh.command}</code> <${CopyButton} text=${ssh.command} name="Copy the SSH command" /></div>
      <span class="hint">then open <code>${ssh.url}</code> there and pair that browser.</span></div>`
    }
  </li>`;
}

// The card pair above the tunnels; a paired phone sees them without the switch.
export function ReachHere() {
  const remote = Boolean(pageKey());
  const [access, setAccess] = useState(null);
  useEffect(() => {
    api("GET", "remote").then(setAccess, (error) => setAccess({ error: error.message }));
  }, []);
  if (!access) return null;
  if (access.error) return html`<p class="hint">${access.error}</p>`;
  return html`<h3>Reach svc with nothing but this machine</h3>
    <ul id="reach-here" class="cards">
      <${LanCard} lan=${access.lan} remote=${remote} setAccess=${setAccess} />
      <${ListenerCard} access=${access} />
    </ul>`;
}
