// The "Agent integrations" panel: GET /api/integrations (the last auto-install report) and a
// button that runs the sync again. States: written / up to date / removed / skipped (with why).
// Agents that are not enabled get one line naming them all, not a row (and a reason) each.
"use strict";

(() => {
  const body = document.querySelector("#integrations tbody");
  const status = document.getElementById("integrations-status");
  const table = document.getElementById("integrations");
  const none = document.getElementById("integrations-none");
  const disabled = document.getElementById("integrations-disabled");

  function cell(part) {
    const td = document.createElement("td");
    td.className = "integration-" + part.state.replace(/ /g, "-");
    td.textContent = part.state;
    td.title = part.path + (part.reason ? "\n" + part.reason : "");
    if (part.reason) {
      const why = document.createElement("div");
      why.className = "hint";
      why.textContent = part.reason;
      td.appendChild(why);
    }
    return td;
  }

  function render(report) {
    const enabled = report.agents.filter((agent) => agent.enabled !== false);
    const off = report.agents.filter((agent) => agent.enabled === false).map((agent) => agent.agent);
    table.hidden = enabled.length === 0;
    none.hidden = enabled.length > 0;
    disabled.hidden = off.length === 0;
    disabled.textContent = off.length === 0 ? "" :
      `Not enabled, so nothing installed: ${off.join(", ")}. svc enables an agent whose ` +
      "executable is on PATH; set agents.<name>.enabled to true in settings.json to install anyway.";
    body.replaceChildren(...enabled.map((agent) => {
      const row = document.createElement("tr");
      row.dataset.agent = agent.agent;
      const name = document.createElement("td");
      name.textContent = agent.agent;
      row.append(name, cell(agent.mcp), cell(agent.skills));
      return row;
    }));
    status.textContent = `last sync ${report.synced_at} → ${report.mcp_url}`;
  }

  async function load(method) {
    const headers = {};
    const csrf = document.querySelector('meta[name="csrf-token"]');
    if (method !== "GET" && csrf) headers["X-CSRFToken"] = csrf.content;
    const key = document.querySelector('meta[name="svc-page-key"]');
    if (key) headers["X-Svc-Page-Key"] = key.content;
    const response = await fetch("/api/integrations", { method, headers, credentials: "same-origin" });
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
    render(await response.json());
  }

  document.getElementById("integrations-sync").addEventListener("click", () => {
    status.textContent = "syncing…";
    load("POST").catch((err) => { status.textContent = `sync failed: ${err.message}`; });
  });
  load("GET").catch((err) => { status.textContent = `could not load: ${err.message}`; });
})();
