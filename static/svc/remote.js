// Remote access (contract §13): the ways in with nothing but this machine (remote-lan.js), what
// works on this machine offered as one-click tunnels, the tunnels (status, public URL with a copy
// button and a QR code for a phone, start/stop/remove) and pairing (each waiting phone with its
// code and Approve beside the QR, approve a code, invite a phone, paired devices with their
// names). A paired phone sees its devices but approves and starts nothing; it renames only itself.
import { age, api, call, deviceId, pageKey } from "./api.js";
import { QRCode } from "./qr.js";
import { ReachHere } from "./remote-lan.js";
import { pairings, tunnels } from "./store.js";
import { CopyButton, RetryIn, Status, html, useEffect, useRef, useState, useStatus, useTick } from "./ui.js";

const time = (iso) => new Date(iso).toLocaleString();

function TunnelCard({ t, report, remote }) {
  const act = (action) => () => {
    // Stopping the tunnel this page came through cuts this browser off: ask first.
    const here = t.public_url && new URL(t.public_url).host === location.host;
    if (action === "stop" && here && !confirm(`This page reaches svc through ${t.name}: stop it anyway?`)) return;
    report(async () => {
      try {
        await api("POST", `tunnels/${encodeURIComponent(t.name)}/${action}`);
      } catch (error) {
        throw new Error(`${t.name}: ${error.message}`);
      }
    });
  };
  const remove = () => {
    if (!confirm(`Remove the tunnel ${t.name} from settings.json?`)) return;
    report(() => api("DELETE", `tunnels/${encodeURIComponent(t.name)}`));
  };
  return html`<li class="card" data-tunnel=${t.name}>
    <strong>${t.name}</strong> ${t.provider} · <span class=${`tunnel-${t.status}`}>${t.status}</span>${" "}
    ${t.status === "stopped" ? html`<button type="button" onClick=${act("start")}>Start</button>` : html`<button type="button" onClick=${act("stop")}>Stop</button>`}
    ${!remote && html` <button type="button" class="danger" onClick=${remove}>Remove</button>`}
    ${(t.status === "error" || t.status === "starting") && t.detail && html`<div class="hint tunnel-detail">${t.detail}<${RetryIn} row=${t} /></div>`}
    ${
      t.public_url &&
      html`<div><a href=${t.public_url} target="_blank" rel="noopener">${t.public_url}</a> <${CopyButton} text=${t.public_url} name=${`Copy ${t.public_url}`} /></div>
      <${QRCode} text=${t.public_url} />`
    }
  </li>`;
}

const FIELD = {
  host: { label: "Host", placeholder: "user@vps.example.com or example.com", type: "text" },
  token: { label: "Authtoken", placeholder: "from dashboard.ngrok.com", type: "password" },
};

// One offer: a button, with the fields it needs first (ngrok's token, ssh's host). An SSH
// "user@host" is split so the entry reads like the ones written by hand.
function Offer({ o, report }) {
  const start = (event) => {
    event.preventDefault();
    const body = { provider: o.provider };
    for (const need of o.needs) body[need] = event.target.elements[need].value.trim();
    if (o.provider === "ssh" && body.host.includes("@")) [body.user, body.host] = body.host.split("@", 2);
    report(async () => {
      const row = await api("POST", "tunnels", body);
      return `${row.name}: ${row.status}`;
    });
  };
  const id = `offer-${o.provider}`;
  return html`<li class="card" data-offer=${o.provider}>
    <form class="row" onSubmit=${start} aria-label=${o.label}>
      ${o.needs.map((need) => html`<label>${FIELD[need].label} <input name=${need} type=${FIELD[need].type} required autocomplete="off" placeholder=${FIELD[need].placeholder} /></label> `)}
      <button type="submit" id=${id} class=${o.available ? "primary" : ""} disabled=${!o.available}>Start ${o.label}</button>
    </form>
    ${!o.available && html`<div class="hint">${o.reason}</div>`}
  </li>`;
}

// What works on this machine, asked once per visit (it runs `tailscale status`).
function Offers({ report }) {
  const [offers, setOffers] = useState(null);
  useEffect(() => {
    api("GET", "tunnels/offers").then(setOffers, (error) => setOffers({ error: error.message }));
  }, []);
  if (!offers) return null;
  if (offers.error) return html`<p class="hint">${offers.error}</p>`;
  return html`<h3>Reach svc from your phone</h3>
    <p class="hint">One click starts a tunnel (written into settings.json); open its URL or scan its QR code on the phone, then approve the phone here.</p>
    <ul id="tunnel-offers" class="cards">${offers.map((o) => html`<${Offer} key=${o.provider} o=${o} report=${report} />`)}</ul>`;
}

function Tunnels({ remote }) {
  const [text, report] = useStatus();
  const rows = tunnels.value;
  return html`${!remote && html`<${Offers} report=${report} />`}
    <h3>Tunnels</h3>
    <ul id="tunnels" class="cards">${
      rows &&
      (rows.length
        ? rows.map((t) => html`<${TunnelCard} key=${t.name} t=${t} report=${report} remote=${remote} />`)
        : html`<li class="hint">No tunnels yet${remote ? "" : ": start one above"}.</li>`)
    }</ul>
    <p id="tunnels-status" class="hint" role="status">${text}</p>`;
}

// Not api(): its 403 means "logged out", while a wrong code here is a 403 of its own.
function Approve({ text, run, hidden }) {
  const code = useRef(null);
  const submit = (event) => {
    event.preventDefault();
    run(async () => {
      const approved = await call("POST", "pairings/approve", { code: code.current.value.trim() });
      event.target.reset();
      return `Approved: ${approved.device || "the browser"} is paired as soon as its page notices.`;
    }, "approving…");
  };
  return html`<form id="pair-approve" class="row" hidden=${hidden} onSubmit=${submit}>
    <label>Pairing code <input name="code" ref=${code} required inputmode="numeric" pattern="[0-9]{6}" minlength="6" maxlength="6" autocomplete="off" placeholder="123456" /></label>
    <button type="submit" class="primary">Approve</button> <${Status} id="pair-approve-status" text=${text} />
  </form>`;
}

// An invite: a link (QR code for a phone) whose fragment carries a one-use secret; the browser
// that opens it through the tunnel is paired without a code (docs/remote.md).
function Invite() {
  const [made, setMade] = useState(null);
  const make = async () => {
    setMade(null);
    try {
      setMade(await api("POST", "pairings/invites"));
    } catch (error) {
      setMade({ hint: error.message });
    }
  };
  const until = made && made.url && new Date(Date.now() + made.expires_in * 1000).toLocaleTimeString();
  return html`<div id="pair-invite" class="row">
      <button type="button" id="pair-invite-make" onClick=${make}>Invite a phone</button>
      <span class="hint">a link that pairs the browser opening it within 10 minutes, once; it works even while strangers flood the pairing page</span>
    </div>
    <div id="pair-invite-link" aria-live="polite">${
      made &&
      (made.url
        ? html`
      <div><code>${made.url}</code> <${CopyButton} text=${made.url} name=${`Copy ${made.url}`} /></div><${QRCode} text=${made.url} />
      <p class="hint">Open it on the phone before ${until}; it works once.</p>`
        : html`<p class="hint">${made.hint}</p>`)
    }</div>`;
}

function PairingCard({ p, report, code }) {
  if (p.kind === "request") {
    const deny = () => report(() => api("POST", `pairings/requests/${encodeURIComponent(p.id)}/deny`));
    // The code is the phone's: Approve sends it, as typing it would (wrong codes count alike).
    const approve = () => report(() => call("POST", "pairings/approve", { code }));
    return html`<li class="card" data-request=${p.id}>waiting: ${p.device || "unknown browser"} since ${time(p.created_at)}
      ${code && html` · code <strong class="pair-code">${code}</strong> <button type="button" class="primary" aria-label=${`Approve ${code}`} onClick=${approve}>Approve</button>`}
      <button type="button" class="danger" onClick=${deny}>Deny</button></li>`;
  }
  return html`<${DeviceCard} p=${p} report=${report} />`;
}

// A paired device: its name (readable from its User-Agent when it paired, or as renamed), what
// its User-Agent reads as when the name says something else (the whole string on hover), so a
// name hides nothing, Rename — on svc's
// machine for every device, on a paired one for itself only — and Revoke. A rename reaches every
// open list live (/ws/pairings).
function DeviceCard({ p, report }) {
  const [renaming, setRenaming] = useState(false);
  const [text, run, setText] = useStatus();
  const field = useRef(null);
  const self = deviceId() === p.id;
  const mayRename = !pageKey() || self;
  const save = (event) => {
    event.preventDefault();
    run(async () => {
      await api("PATCH", `pairings/${encodeURIComponent(p.id)}`, { name: field.current.value });
      setRenaming(false);
    }, "saving…");
  };
  // The field is filled once, when the form opens: a rename arriving meanwhile keeps what is typed.
  const start = () => {
    field.current.value = p.name;
    setText("");
    setRenaming(true);
    requestAnimationFrame(() => field.current.select());
  };
  const revoke = () => report(() => api("DELETE", `pairings/${encodeURIComponent(p.id)}`));
  return html`<li class="card" data-device=${p.id}>
    <span hidden=${renaming}><strong class="device-name">${p.name}</strong>${self && html` <span class="device-self">(this device)</span>`}${" "}
      ${mayRename && html`<button type="button" class="device-rename-button" aria-label=${`Rename ${p.name}`} onClick=${start}>Rename</button>`}${" "}
      <button type="button" class="danger" data-revoke=${p.id} aria-label=${`Revoke ${p.name}`} onClick=${revoke}>Revoke</button></span>
    ${
      mayRename &&
      html`<form class="row device-rename" hidden=${!renaming} onSubmit=${save}>
      <label>Name <input name="name" ref=${field} maxlength="60" autocomplete="off" placeholder="blank: from its browser" /></label>
      <button type="submit" class="primary">Save name</button><button type="button" onClick=${() => setRenaming(false)}>Cancel</button>
      <${Status} text=${text} />
    </form>`
    }
    <div class="hint" title=${p.device}>${p.name !== p.browser && `${p.browser} · `}via ${p.host || "?"} · first seen ${time(p.first_seen)} · last seen ${age(p.last_seen)} ago</div>
  </li>`;
}

// A request's code lasts 60 s and no message says when it lapses: it is dropped here.
// On svc's own machine each waiting request's code comes from GET /api/pairings/pending (the
// live list, which paired phones read too, never carries it), again whenever the list changes.
function useCodes(remote) {
  const [codes, setCodes] = useState({});
  const list = pairings.value;
  useEffect(() => {
    if (remote || !list.some((p) => p.kind === "request")) return;
    api("GET", "pairings/pending").then(
      (rows) => setCodes(Object.fromEntries(rows.map((r) => [r.id, r.code]))),
      () => {},
    );
  }, [list, remote]);
  return codes;
}

function Pairings({ report, remote }) {
  const now = useTick(1000);
  const codes = useCodes(remote);
  const rows = pairings.value.filter((p) => p.kind !== "request" || Date.parse(p.expires_at) > now);
  return html`<ul id="pairings" class="cards">${
    rows.length
      ? rows.map((p) => html`<${PairingCard} key=${p.id} p=${p} report=${report} code=${codes[p.id]} />`)
      : html`<li class="hint">No paired devices. Open a tunnel's URL on your phone to pair it.</li>`
  }</ul>`;
}

export function RemoteView() {
  const remote = Boolean(pageKey());
  const [text, run, setText] = useStatus();
  // Deny and Revoke say what went wrong where Approve does; success leaves that line as it was.
  const report = (action) => action().catch((error) => setText(error.message));
  return html`<p class="hint">A phone on the same network, an SSH forward or a tunnel makes svc reachable from elsewhere; a browser that comes through one must be paired first.</p>
    <${ReachHere} />
    <${Tunnels} remote=${remote} />
    <h3>Phones and paired devices</h3>
    <${Pairings} report=${report} remote=${remote} />
    <${Approve} text=${text} run=${run} hidden=${remote} />
    ${remote ? html`<p class="hint">New devices are approved on svc's own machine (dashboard or <code>svc pair CODE</code>).</p>` : html`<${Invite} />`}`;
}
