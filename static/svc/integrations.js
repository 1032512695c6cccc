// The "Agent integrations" panel: GET /api/integrations (the last auto-install report) and a
// button that runs the sync again. States: written / up to date / removed / skipped (with why).
"use strict";

(() => {
  const body = document.querySelector("#integrations tbody");
  const status = document.getElementById("integrations-status");

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
    body.replaceChildren(...report.agents.map((agent) => {
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
