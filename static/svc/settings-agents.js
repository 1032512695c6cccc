// Settings views, continued: workspaces (rename, remove; the register form is in settings.js) and
// agents (edit, add, drop an entry) through /api/workspaces and /api/agents. settings.json stays
// the source of truth: a save replaces only the keys the form shows and keeps every other one.
"use strict";

(() => {
  // --- workspaces: the list lives in settings.json (paths), the names in svc's database

  function workspaceItem(w) {
    const status = document.getElementById("workspace-status");
    const act = (call) => call().then(() => fillPickers()).catch((error) => { status.textContent = error.message; });
    const label = svc.el("span", { textContent: `${w.name} — ${w.path} ` });
    const input = svc.el("input", { name: "name", value: w.name, maxLength: 200, placeholder: "blank: the folder's name" });
    const rename = svc.el("form", { className: "row", hidden: true },
      svc.el("label", {}, "Name ", input),
      svc.el("button", { type: "submit", textContent: "Save name" }),
      svc.el("button", { type: "button", textContent: "Cancel", onclick: () => { rename.hidden = true; buttons.hidden = false; } }));
    rename.addEventListener("submit", (event) => {
      event.preventDefault();
      act(async () => { await svc.api("PATCH", `workspaces/${w.id}`, { name: input.value }); status.textContent = "renamed"; });
    });
    const buttons = svc.el("span", {},
      svc.el("button", { type: "button", textContent: "Rename", ariaLabel: `Rename workspace ${w.name}`,
        onclick: () => { rename.hidden = false; buttons.hidden = true; input.focus(); } }), " ",
      svc.el("button", { type: "button", textContent: "Remove", ariaLabel: `Remove workspace ${w.name}`,
        onclick: () => act(async () => { await svc.api("DELETE", `workspaces/${w.id}`); status.textContent = "removed"; }) }));
    const item = svc.el("li", {}, label, buttons, rename);
    item.dataset.workspace = w.path;
    return item;
  }

  function renderWorkspaces(workspaces) {
    const list = document.getElementById("workspaces");
    list.replaceChildren(...workspaces.map(workspaceItem));
    svc.noneYet(list, workspaces.length === 0, "No workspaces yet: register a folder below.");
  }

  // --- agents: argv as words (quote a word that holds spaces), env as NAME=value lines

  const WORD = /(?:"[^"]*"|'[^']*'|[^\s"']+)+/g;
  function words(text, field) {
    if (text.replace(WORD, "").trim()) throw new Error(`${field}: a quote is not closed`);
    return (text.match(WORD) || []).map((w) => w.replace(/"([^"]*)"|'([^']*)'/g, (_, d, s) => (d !== undefined ? d : s)));
  }
  const shown = (argv) => (argv || []).map((a) => (a === "" || /[\s"']/.test(a) ? (a.includes("'") ? `"${a}"` : `'${a}'`) : a)).join(" ");

  function envOf(text) {
    const env = {};
    for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
      const at = line.indexOf("=");
      if (at < 1) throw new Error(`env: "${line}" is not NAME=value`);
      env[line.slice(0, at).trim()] = line.slice(at + 1);
    }
    return env;
  }

  const ENABLED = [["", "when its command is found"], ["true", "on"], ["false", "off"]];
  const form = svc.el("form", { id: "agent-form" },
    svc.el("div", { className: "row" },
      svc.el("label", {}, "Agent ", svc.el("input", { name: "agent_name", required: true, pattern: "[a-z0-9][a-z0-9_\\-]{0,63}", placeholder: "e.g. my-agent", autocomplete: "off" })),
      svc.el("label", {}, "Enabled ", svc.el("select", { name: "enabled" }, ...ENABLED.map(([value, text]) => svc.el("option", { value, textContent: text }))))),
    svc.el("div", { className: "row" },
      svc.el("label", {}, "Command ", svc.el("input", { name: "command", size: 40, autocomplete: "off", placeholder: "terminal argv, e.g. my-agent --flag" })),
      svc.el("label", {}, "ACP command ", svc.el("input", { name: "acp_command", size: 40, autocomplete: "off", placeholder: "argv speaking ACP on stdio" }))),
    svc.el("div", { className: "row" },
      svc.el("label", {}, "Environment ", svc.el("textarea", { name: "env", rows: 2, cols: 40, placeholder: "NAME=value, one a line" }))),
    svc.el("div", { className: "row" },
      svc.el("button", { type: "submit", textContent: "Save agent" }),
      svc.el("button", { type: "button", id: "agent-drop", hidden: true, textContent: "Drop its settings.json entry" }),
      svc.el("button", { type: "reset", textContent: "New agent" }),
      svc.el("span", { id: "agent-status", role: "status" })));
  const heading = svc.el("h4", { id: "agent-form-title", textContent: "Add an agent" });
  form.setAttribute("aria-labelledby", "agent-form-title");
  document.getElementById("agents").closest(".table-wrap").after(heading, form);
  document.querySelector("#agents thead tr").append(svc.el("th", { scope: "col", textContent: "Edit" }));
  const status = document.getElementById("agent-status");
  const drop = document.getElementById("agent-drop");
  let rowsByName = {};

  // Placeholders say what a blank field means: a built-in's own argv, or none.
  function placeholders(row) {
    form.command.placeholder = row && row.builtin ? `built-in: ${shown(row.command)}` : "terminal argv, e.g. my-agent --flag";
    form.acp_command.placeholder = row && row.builtin ? `built-in: ${shown(row.acp_command) || "none"}` : "argv speaking ACP on stdio";
  }

  // The form says it is loading until the agent's entry has come: what is typed meanwhile would
  // be overwritten by it.
  async function edit(name) {
    form.setAttribute("aria-busy", "true");
    const settings = await svc.api("GET", "settings").finally(() => form.removeAttribute("aria-busy"));
    const entry = (settings.agents || {})[name] || {};
    form.reset();
    form.agent_name.value = name;
    form.enabled.value = typeof entry.enabled === "boolean" ? String(entry.enabled) : "";
    form.command.value = shown(entry.command);
    form.acp_command.value = shown(entry.acp_command);
    form.env.value = Object.entries(entry.env || {}).map(([k, v]) => `${k}=${v}`).join("\n");
    placeholders(rowsByName[name]);
    drop.hidden = !(name in (settings.agents || {}));
    heading.textContent = `Edit agent ${name}`;
    status.textContent = "";
    form.enabled.focus();
  }

  form.addEventListener("reset", () => { placeholders(null); drop.hidden = true; heading.textContent = "Add an agent"; });
  form.agent_name.addEventListener("change", () => placeholders(rowsByName[form.agent_name.value.trim()]));

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = form.agent_name.value.trim();
    try {
      const body = {
        enabled: form.enabled.value === "" ? null : form.enabled.value === "true",
        command: words(form.command.value, "command"),
        acp_command: words(form.acp_command.value, "acp_command"),
        env: envOf(form.env.value),
      };
      await svc.api("PUT", `agents/${encodeURIComponent(name)}`, body);
      status.textContent = `saved ${name}`;
      drop.hidden = false;
      heading.textContent = `Edit agent ${name}`;
      await fillPickers();
    } catch (error) {
      status.textContent = error.message;
    }
  });

  drop.addEventListener("click", async () => {
    const name = form.agent_name.value.trim();
    try {
      await svc.api("DELETE", `agents/${encodeURIComponent(name)}`);
      form.reset();
      status.textContent = `dropped the entry of ${name}`;
      await fillPickers();
    } catch (error) {
      status.textContent = error.message;
    }
  });

  document.addEventListener("svc:settings", ({ detail }) => {
    renderWorkspaces(detail.workspaces);
    rowsByName = Object.fromEntries(detail.agents.map((a) => [a.name, a]));
    document.querySelector("#agents tbody").replaceChildren(...detail.agents.map((a) => {
      const tr = svc.el("tr", {}, ...[a.name, a.executable_found ? "found" : "not found", a.enabled ? "yes" : "no", a.source]
        .map((text) => svc.el("td", { textContent: text })),
        svc.el("td", {}, svc.el("button", { type: "button", textContent: "Edit", ariaLabel: `Edit agent ${a.name}`,
          onclick: () => edit(a.name).catch((error) => { status.textContent = error.message; }) })));
      tr.dataset.agent = a.name;
      return tr;
    }));
  });
})();
