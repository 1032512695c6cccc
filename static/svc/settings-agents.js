// Settings, agents: the table of agents (detected — or how to install it —, enabled, where their
// entry comes from) and a form that edits, adds or drops an agent's settings.json entry through
// /api/agents. A save replaces only the keys the form shows and keeps every other one; the table
// shows it at once, and the check that it starts (seconds, for an ACP agent) follows.
import { api } from "./api.js";
import { choices, loadChoices } from "./store.js";
import { InstallHint } from "./install-hint.js";
import { Status, Submit, html, useRef, useState, useStatus } from "./ui.js";

// argv as words (quote a word that holds spaces), env as NAME=value lines.
const WORD = /(?:"[^"]*"|'[^']*'|[^\s"']+)+/g;
function words(text, field) {
  if (text.replace(WORD, "").trim()) throw new Error(`${field}: a quote is not closed`);
  return (text.match(WORD) || []).map((w) => w.replace(/"([^"]*)"|'([^']*)'/g, (_, d, s) => (d !== undefined ? d : s)));
}
const shown = (argv) => (argv || []).map((a) => (a === "" || /[\s"']/.test(a) ? (a.includes("'") ? `"${a}"` : `'${a}'`) : a)).join(" ");

function envOf(text) {
  const env = {};
  for (const line of text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)) {
    const at = line.indexOf("=");
    if (at < 1) throw new Error(`env: "${line}" is not NAME=value`);
    env[line.slice(0, at).trim()] = line.slice(at + 1);
  }
  return env;
}

const ENABLED = [
  ["", "when its command is found"],
  ["true", "on"],
  ["false", "off"],
];

// Placeholders say what a blank field means: a built-in's own argv, or none.
function placeholders(row) {
  return {
    command: row && row.builtin ? `built-in: ${shown(row.command)}` : "terminal argv, e.g. my-agent --flag",
    acp: row && row.builtin ? `built-in: ${shown(row.acp_command) || "none"}` : "argv speaking ACP on stdio",
  };
}

// The form says it is loading until the agent's entry has come: what is typed meanwhile would
// be overwritten by it.
async function fill(form, name) {
  const agents = (await api("GET", "settings")).agents || {};
  const entry = agents[name] || {};
  form.reset();
  form.agent_name.value = name;
  form.enabled.value = typeof entry.enabled === "boolean" ? String(entry.enabled) : "";
  form.command.value = shown(entry.command);
  form.acp_command.value = shown(entry.acp_command);
  form.env.value = Object.entries(entry.env || {})
    .map(([k, v]) => `${k}=${v}`)
    .join("\n");
  form.enabled.focus();
  return name in agents;
}

function bodyOf(form) {
  return {
    enabled: form.enabled.value === "" ? null : form.enabled.value === "true",
    command: words(form.command.value, "command"),
    acp_command: words(form.acp_command.value, "acp_command"),
    env: envOf(form.env.value),
  };
}

function detected(a) {
  if (a.executable_found) return "found";
  return a.install ? html`not installed: <${InstallHint} a=${a} />` : "not found";
}

function AgentRow({ a, edit }) {
  return html`<tr data-agent=${a.name}><td>${a.name}</td><td>${detected(a)}</td>
    <td>${a.enabled ? "yes" : "no"}</td><td>${a.source}</td>
    <td><button type="button" aria-label=${`Edit agent ${a.name}`} onClick=${() => edit(a.name)}>Edit</button></td></tr>`;
}

const checked = (name, check) => {
  if (!check) return `saved ${name}`;
  return check.ok ? `saved ${name} — checked: ${check.message}` : `saved ${name}, but it will not start: ${check.message}`;
};

// What the form is: {name, entry (whether settings.json has one), busy}; name null for a new agent.
function useAgentForm(form, rows, setText, run) {
  const [state, setState] = useState({ name: null, entry: false, busy: false, hints: placeholders(null) });
  const edit = async (name) => {
    setState((s) => ({ ...s, busy: true }));
    try {
      const entry = await fill(form.current, name);
      setState({ name, entry, busy: false, hints: placeholders(rows[name]) });
      setText("");
    } catch (error) {
      setState((s) => ({ ...s, busy: false }));
      setText(error.message);
    }
  };
  // Written first (the table shows it at once), then checked: starting an ACP agent to ask it
  // `initialize` takes seconds (an npx package is fetched first), and the status says so.
  const save = () =>
    run(async (say) => {
      const name = form.current.agent_name.value.trim();
      await api("PUT", `agents/${encodeURIComponent(name)}?check=0`, bodyOf(form.current));
      setState((s) => ({ ...s, name, entry: true }));
      await loadChoices();
      say(`saved ${name}; checking that it starts…`);
      return checked(name, await api("POST", `agents/${encodeURIComponent(name)}/check`));
    }, "saving…");
  const drop = () =>
    run(async () => {
      const name = form.current.agent_name.value.trim();
      await api("DELETE", `agents/${encodeURIComponent(name)}`);
      form.current.reset();
      await loadChoices();
      return `dropped the entry of ${name}`;
    }, "dropping…");
  const reset = () => setState({ name: null, entry: false, busy: false, hints: placeholders(null) });
  const named = (event) => setState((s) => ({ ...s, hints: placeholders(rows[event.currentTarget.value.trim()]) }));
  return { state, edit, save, drop, reset, named };
}

export function AgentsSettings() {
  const { agents } = choices.value;
  const rows = Object.fromEntries(agents.map((a) => [a.name, a]));
  const form = useRef(null);
  const [text, run, setText, busy] = useStatus();
  const { state, edit, save, drop, reset, named } = useAgentForm(form, rows, setText, run);
  const submit = (event) => {
    event.preventDefault();
    if (!busy) save();
  };
  return html`<h3>Agents</h3>
    <div class="table-wrap" tabindex="0" role="region" aria-label="agents table"><table id="agents">
      <thead><tr><th scope="col">Agent</th><th scope="col">Detected</th><th scope="col">Enabled</th><th scope="col">Source</th><th scope="col">Edit</th></tr></thead>
      <tbody>${agents.map((a) => html`<${AgentRow} key=${a.name} a=${a} edit=${edit} />`)}</tbody>
    </table></div>
    <h4 id="agent-form-title">${state.name ? `Edit agent ${state.name}` : "Add an agent"}</h4>
    <form id="agent-form" ref=${form} aria-labelledby="agent-form-title" aria-busy=${state.busy || busy ? "true" : undefined} onSubmit=${submit} onReset=${reset}>
      <div class="row">
        <label>Agent <input name="agent_name" required pattern="[a-z0-9][a-z0-9_\\-]{0,63}" placeholder="e.g. my-agent" autocomplete="off" onChange=${named} /></label>
        <label>Enabled <select name="enabled">${ENABLED.map(([value, label]) => html`<option value=${value}>${label}</option>`)}</select></label>
      </div>
      <div class="row">
        <label>Command <input name="command" size="40" autocomplete="off" placeholder=${state.hints.command} /></label>
        <label>ACP command <input name="acp_command" size="40" autocomplete="off" placeholder=${state.hints.acp} /></label>
      </div>
      <div class="row"><label>Environment <textarea name="env" rows="2" cols="40" placeholder="NAME=value, one a line"></textarea></label></div>
      <div class="row">
        <${Submit} busy=${busy}>Save agent<//>
        <button type="button" id="agent-drop" class="danger" hidden=${!state.entry} aria-disabled=${busy ? "true" : undefined} onClick=${() => busy || drop()}>Drop its settings.json entry</button>
        <button type="reset">New agent</button>
        <${Status} id="agent-status" text=${text} busy=${busy} />
      </div>
    </form>`;
}
