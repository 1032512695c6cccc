// The Machines view (contract §18): every machine of the fleet, live from /ws/machines — its
// name, whether it is online or unreachable (said in words and marked by a sign, not by colour
// alone), version, sessions running, load, when it was last seen, its agents and workspaces; the
// one answering is "this machine". A daemon alone lists itself. The live list is pushed when a
// machine appears, flips or changes what it says, not when only its load or last renewal moves:
// while the view is shown, it is read again every 5 s so those stay true.
import { age, api } from "./api.js";
import { view } from "./nav.js";
import { clock, isFleet, machines } from "./store.js";
import { html, useEffect } from "./ui.js";

function useFreshWhileShown(shown) {
  useEffect(() => {
    if (!shown) return undefined;
    let stopped = false;
    let timer = null;
    const read = async () => {
      try {
        const list = await api("GET", "machines");
        if (!stopped) machines.value = list;
      } catch {
        /* the banner says it */
      }
      if (!stopped) timer = setTimeout(read, 5000);
    };
    timer = setTimeout(read, 5000);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [shown]);
}

const SIGN = { online: "●", unreachable: "○" };

function Facts({ m, now }) {
  const seen = m.last_seen ? `${age(m.last_seen, now)} ago` : "never";
  const load = typeof m.load === "number" ? m.load.toFixed(2) : "—";
  return html`<dl class="machine-facts">
    <div><dt>Version</dt><dd class="machine-version">${m.version || "—"}</dd></div>
    <div><dt>Sessions running</dt><dd class="machine-sessions">${m.sessions_running}</dd></div>
    <div><dt>Load (1 min)</dt><dd class="machine-load">${load}</dd></div>
    <div><dt>Last seen</dt><dd class="machine-seen" title=${m.last_seen ? new Date(m.last_seen).toLocaleString() : undefined}>${seen}</dd></div>
  </dl>`;
}

function MachineCard({ m }) {
  const agents = m.agents.length ? m.agents.join(", ") : "none enabled";
  return html`<li class="card machine" data-machine=${m.id} data-name=${m.name} data-status=${m.status}>
    <h3 class="machine-head">
      <span class="machine-name">${m.name}</span>
      ${m.self && html`<span class="machine-self">this machine</span>`}
      <span class=${`machine-status machine-${m.status}`}><span aria-hidden="true">${SIGN[m.status] || "?"} </span>${m.status}</span>
    </h3>
    ${
      m.status !== "online" &&
      html`<p class="hint machine-away">Not heard from for 15 s or more: its sessions read unreachable here
      and come back when it rejoins.</p>`
    }
    <${Facts} m=${m} now=${clock.value} />
    <p class="hint machine-agents"><span class="machine-label">Agents:</span> ${agents}</p>
    ${m.workspaces.length > 0 && html`<p class="hint machine-workspaces"><span class="machine-label">Workspaces:</span> ${m.workspaces.join(", ")}</p>`}
    ${m.url && html`<p class="hint machine-url"><span class="machine-label">Address:</span> <code>${m.url}</code></p>`}
  </li>`;
}

export function MachinesView() {
  useFreshWhileShown(view.value === "machines");
  const list = machines.value;
  const online = list.filter((m) => m.status === "online").length;
  return html`<p class="hint" id="machines-summary">${
    isFleet.value
      ? `${list.length} machines share this fleet; ${online} online. Sessions of every machine show in Sessions and the sidebar, and a new session can start on any of them.`
      : "This machine alone. Daemons that share one PostgreSQL, one Redis and a fleet secret form a fleet: every machine of it shows here (docs/fleet.md)."
  }</p>
    <ul class="cards machines" id="machines" aria-label="machines">${list.map((m) => html`<${MachineCard} key=${m.id} m=${m} />`)}</ul>`;
}
