// Settings views: the workspace register form and profiles (keys never shown; add and edit
// through PATCH /api/settings, so settings.json stays the source of truth). The workspaces list
// and the agents are settings-agents.js's.
"use strict";

(() => {
  const PROVIDERS = ["openai-chat", "openai-responses", "anthropic", "gemini"];

  // An empty list says so in one short line instead of showing an empty table or list.
  function noneYet(container, empty, text) {
    let note = container.nextElementSibling;
    if (!note || !note.classList.contains("none-yet")) {
      note = svc.el("p", { className: "hint none-yet", textContent: text });
      container.after(note);
    }
    note.hidden = !empty;
    container.hidden = empty;
  }
  svc.noneYet = noneYet;  // settings-agents.js says so for workspaces

  function rows(tbody, items, cells) {
    document.querySelector(tbody).replaceChildren(...items.map((item) => svc.el("tr", {}, ...cells(item).map((v) => (v instanceof Node ? svc.el("td", {}, v) : svc.el("td", { textContent: v }))))));
  }

  // What the Key column says: where the key comes from and, when svc lacks it, which variable.
  function keyText(p) {
    const key = p.key || { source: p.api_key ? "settings.json" : "none", set: Boolean(p.api_key) };
    if (key.source === "env") return key.set ? `from $${key.env} (set)` : `missing: $${key.env} is not set in svc's environment`;
    if (key.source === "settings.json") return "in settings.json (hidden)";
    return "none";
  }

  // --- the profile form: add a profile, or edit one (its other keys, unknown ones too, are kept)

  const form = svc.el("form", { id: "profile-form", className: "row" },
    svc.el("label", {}, "Profile ", svc.el("input", { name: "profile_id", required: true, pattern: "[a-z0-9][a-z0-9_\\-]{0,63}", placeholder: "e.g. openai" })),
    svc.el("label", {}, "Provider ", svc.el("select", { name: "provider" }, ...PROVIDERS.map((p) => svc.el("option", { value: p, textContent: p })))),
    svc.el("label", {}, "Base URL ", svc.el("input", { name: "base_url", required: true, placeholder: "https://api.openai.com/v1" })),
    svc.el("label", {}, "Models ", svc.el("input", { name: "models", placeholder: "comma-separated" })),
    svc.el("label", {}, "Key variable ", svc.el("input", { name: "api_key_env", placeholder: "OPENAI_API_KEY" })),
    svc.el("label", {}, "Key ", svc.el("input", { name: "api_key", type: "password", autocomplete: "off", placeholder: "or a literal key (blank: keep)" })),
    svc.el("button", { type: "submit", textContent: "Save profile" }), " ",
    svc.el("span", { id: "profile-status", role: "status" }));
  document.getElementById("profiles").closest(".table-wrap").after(form);
  const headRow = document.querySelector("#profiles thead tr");
  headRow.append(svc.el("th", { scope: "col", textContent: "Edit" }));

  async function edit(id) {
    const settings = await svc.api("GET", "settings");
    const p = (settings.profiles || {})[id] || {};
    form.profile_id.value = id;
    form.provider.value = p.provider || PROVIDERS[0];
    form.base_url.value = p.base_url || "";
    form.models.value = (p.models || []).join(", ");
    form.api_key_env.value = p.api_key_env || "";
    form.api_key.value = "";
    form.profile_id.focus();
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const status = document.getElementById("profile-status");
    const id = form.profile_id.value.trim();
    try {
      const settings = await svc.api("GET", "settings");  // secrets come back redacted …
      const profiles = { ...(settings.profiles || {}) };  // … and are kept on write-back
      const profile = { ...(profiles[id] || {}) };
      profile.provider = form.provider.value;
      profile.base_url = form.base_url.value.trim();
      profile.models = form.models.value.split(",").map((m) => m.trim()).filter(Boolean);
      const env = form.api_key_env.value.trim();
      if (env) profile.api_key_env = env; else delete profile.api_key_env;
      if (form.api_key.value) profile.api_key = form.api_key.value;
      profiles[id] = profile;
      await svc.api("PATCH", "settings", { profiles });
      status.textContent = `saved ${id}`;
      form.reset();
      await fillPickers();
    } catch (error) {
      status.textContent = error.message;
    }
  });

  document.addEventListener("svc:settings", ({ detail }) => {
    rows("#profiles tbody", detail.profiles, (p) => [p.id, p.provider, p.base_url, (p.models || []).join(", "), keyText(p),
      svc.el("button", { type: "button", textContent: "Edit", ariaLabel: `Edit profile ${p.id}`, onclick: () => edit(p.id).catch((e) => { document.getElementById("profile-status").textContent = e.message; }) })]);
    document.querySelectorAll("#profiles tbody tr").forEach((tr, i) => {
      tr.dataset.profile = detail.profiles[i].id;
      const key = detail.profiles[i].key;
      if (key && key.source === "env" && !key.set) tr.children[4].className = "key-missing";
    });
    noneYet(document.getElementById("profiles").closest(".table-wrap"), detail.profiles.length === 0, "No profiles yet: add one below.");
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
