// The Settings view: workspaces (register, rename, remove), profiles (keys never shown; added and
// edited through PATCH /api/settings, so settings.json stays the source of truth), agents
// (settings-agents.js), the agent integrations and this browser's notifications. On a paired device
// profiles, agents and integrations are read-only.
import { api, pageKey } from "./api.js";
import { IntegrationsBox } from "./integrations.js";
import { PushSettings } from "./push.js";
import { AgentsSettings } from "./settings-agents.js";
import { choices, loadChoices } from "./store.js";
import { Status, Submit, html, useRef, useState, useStatus } from "./ui.js";

const PROVIDERS = ["openai-chat", "openai-responses", "anthropic", "gemini"];

// An empty list says so in one short line instead of showing an empty table or list.
export const NoneYet = ({ empty, text }) => empty && html`<p class="hint none-yet">${text}</p>`;

function Workspace({ w, report, busy }) {
  const [renaming, setRenaming] = useState(false);
  const name = useRef(null);
  const rename = (event) => {
    event.preventDefault();
    report(async () => {
      await api("PATCH", `workspaces/${w.id}`, { name: name.current.value });
      setRenaming(false);
      await loadChoices();
      return "renamed";
    }, "renaming…");
  };
  const remove = () =>
    report(async () => {
      await api("DELETE", `workspaces/${w.id}`);
      await loadChoices();
      return "removed";
    }, "removing…");
  const start = () => {
    setRenaming(true);
    requestAnimationFrame(() => name.current.focus());
  };
  return html`<li data-workspace=${w.path}><span>${w.name} — ${w.path} </span>
    <span hidden=${renaming}><button type="button" aria-label=${`Rename workspace ${w.name}`} onClick=${start}>Rename</button>${" "}
      <button type="button" class="danger" aria-label=${`Remove workspace ${w.name}`} onClick=${remove}>Remove</button></span>
    <form class="row" hidden=${!renaming} onSubmit=${rename}>
      <label>Name <input name="name" ref=${name} value=${w.name} maxlength="200" placeholder="blank: the folder's name" /></label>
      <${Submit} busy=${busy}>Save name<//><button type="button" onClick=${() => setRenaming(false)}>Cancel</button>
    </form></li>`;
}

function Workspaces() {
  const { workspaces } = choices.value;
  const [text, run, , busy] = useStatus();
  const register = (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    run(async () => {
      await api("POST", "workspaces", { path: form.path.value, name: form.name.value });
      form.reset();
      await loadChoices();
      return "registered";
    }, "registering…");
  };
  return html`<h3>Workspaces</h3>
    <ul id="workspaces" hidden=${!workspaces.length}>${workspaces.map((w) => html`<${Workspace} key=${w.id} w=${w} report=${run} busy=${busy} />`)}</ul>
    <${NoneYet} empty=${!workspaces.length} text="No workspaces yet: register a folder below." />
    <form id="register-workspace" class="row" onSubmit=${register}>
      <label>Folder <input name="path" required placeholder="/absolute/path" /></label>
      <label>Name <input name="name" placeholder="optional" /></label>
      <${Submit} busy=${busy}>Register<//> <${Status} id="workspace-status" text=${text} busy=${busy} />
    </form>`;
}

// What the Key column says: where the key comes from and, when svc lacks it, which variable.
function keyText(p) {
  const key = p.key || { source: p.api_key ? "settings.json" : "none", set: Boolean(p.api_key) };
  if (key.source === "env") return key.set ? `from $${key.env} (set)` : `missing: $${key.env} is not set in svc's environment`;
  if (key.source === "settings.json") return "in settings.json (hidden)";
  return "none";
}

// The profile in the form, from settings.json (its other keys, unknown ones too, are kept on save).
async function fill(form, id) {
  const p = ((await api("GET", "settings")).profiles || {})[id] || {};
  form.profile_id.value = id;
  form.provider.value = p.provider || PROVIDERS[0];
  form.base_url.value = p.base_url || "";
  form.models.value = (p.models || []).join(", ");
  form.api_key_env.value = p.api_key_env || "";
  form.api_key.value = "";
  form.profile_id.focus();
}

async function save(form) {
  const id = form.profile_id.value.trim();
  const settings = await api("GET", "settings"); // secrets come back redacted …
  const profiles = { ...(settings.profiles || {}) }; // … and are kept on write-back
  const profile = { ...(profiles[id] || {}) };
  profile.provider = form.provider.value;
  profile.base_url = form.base_url.value.trim();
  profile.models = form.models.value
    .split(",")
    .map((m) => m.trim())
    .filter(Boolean);
  const env = form.api_key_env.value.trim();
  if (env) profile.api_key_env = env;
  else delete profile.api_key_env;
  if (form.api_key.value) profile.api_key = form.api_key.value;
  profiles[id] = profile;
  await api("PATCH", "settings", { profiles });
  form.reset();
  await loadChoices();
  return `saved ${id}`;
}

function ProfileRow({ p, edit }) {
  const missing = p.key && p.key.source === "env" && !p.key.set;
  return html`<tr data-profile=${p.id}><td>${p.id}</td><td>${p.provider}</td><td>${p.base_url}</td><td>${(p.models || []).join(", ")}</td>
    <td class=${missing ? "key-missing" : undefined}>${keyText(p)}</td>
    <td><button type="button" aria-label=${`Edit profile ${p.id}`} onClick=${() => edit(p.id)}>Edit</button></td></tr>`;
}

function Profiles() {
  const { profiles } = choices.value;
  const form = useRef(null);
  const [text, run, setText, busy] = useStatus();
  const submit = (event) => {
    event.preventDefault();
    run(() => save(form.current), "saving…");
  };
  return html`<h3>Profiles</h3>
    <div class="table-wrap" tabindex="0" role="region" aria-label="profiles table" hidden=${!profiles.length}><table id="profiles">
      <thead><tr><th scope="col">Profile</th><th scope="col">Provider</th><th scope="col">Base URL</th><th scope="col">Models</th><th scope="col">Key</th><th scope="col">Edit</th></tr></thead>
      <tbody>${profiles.map((p) => html`<${ProfileRow} key=${p.id} p=${p} edit=${(id) => fill(form.current, id).catch((e) => setText(e.message))} />`)}</tbody>
    </table></div>
    <${NoneYet} empty=${!profiles.length} text="No profiles yet: add one below." />
    <form id="profile-form" class="row" ref=${form} onSubmit=${submit}>
      <label>Profile <input name="profile_id" required pattern="[a-z0-9][a-z0-9_\\-]{0,63}" placeholder="e.g. openai" /></label>
      <label>Provider <select name="provider">${PROVIDERS.map((p) => html`<option value=${p}>${p}</option>`)}</select></label>
      <label>Base URL <input name="base_url" required placeholder="https://api.openai.com/v1" /></label>
      <label>Models <input name="models" placeholder="comma-separated" /></label>
      <label>Key variable <input name="api_key_env" placeholder="OPENAI_API_KEY" /></label>
      <label>Key <input name="api_key" type="password" autocomplete="off" placeholder="or a literal key (blank: keep)" /></label>
      <${Submit} busy=${busy}>Save profile<//> <${Status} id="profile-status" text=${text} busy=${busy} />
    </form>`;
}

// What a paired device may read but not change (docs/remote.md "What a paired device may change":
// its writes are refused with 403 main_port_only): shown with every control disabled and a note
// saying where it is changed. Workspaces and this browser's notifications stay editable there.
function MachineOnly({ name, children }) {
  if (!pageKey()) return children;
  return html`<fieldset class="machine-only" disabled data-machine-only=${name}>
    <legend class="notice">Read-only on this paired device: ${name} are changed on svc's own machine (its dashboard, or <code>bin/svc</code> there).</legend>
    ${children}</fieldset>`;
}

export function SettingsView() {
  return html`<${Workspaces} />
    <${MachineOnly} name="profiles"><${Profiles} /><//>
    <${MachineOnly} name="agents"><${AgentsSettings} /><//>
    <${MachineOnly} name="agent integrations"><${IntegrationsBox} /><//>
    <${PushSettings} />`;
}
