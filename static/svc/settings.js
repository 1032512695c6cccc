// Settings views: workspaces (list, register, remove), profiles (keys never shown), agents.
"use strict";

(() => {
  function rows(tbody, items, cells) {
    document.querySelector(tbody).replaceChildren(...items.map((item) => svc.el("tr", {}, ...cells(item).map((v) => svc.el("td", { textContent: v })))));
  }

  function renderWorkspaces(workspaces) {
    document.getElementById("workspaces").replaceChildren(...workspaces.map((w) => svc.el("li", {},
      `${w.name} — ${w.path} `,
      svc.el("button", { type: "button", textContent: "Remove", onclick: async () => { await svc.api("DELETE", `workspaces/${w.id}`); fillPickers(); } }))));
  }

  document.addEventListener("svc:settings", ({ detail }) => {
    renderWorkspaces(detail.workspaces);
    rows("#profiles tbody", detail.profiles, (p) => [p.id, p.provider, p.base_url, (p.models || []).join(", "), p.api_key ? "set (hidden)" : "none"]);
    rows("#agents tbody", detail.agents, (a) => [a.name, a.executable_found ? "found" : "not found", a.enabled ? "yes" : "no", a.source]);
  });

  document.getElementById("register-workspace").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    const status = document.getElementById("workspace-status");
    try {
      await svc.api("POST", "workspaces", { path: form.path.value, name: form.name.value });
      status.textContent = "registered";
      form.reset();
      await fillPickers();
    } catch (error) {
      status.textContent = error.message;
    }
  });
})();
