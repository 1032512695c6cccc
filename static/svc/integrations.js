// Auto-install into agents (contract §9): what svc wrote into each agent's global config, from
// GET /api/integrations (the last report), and a button that runs the sync again. States: written,
// up to date, removed, skipped (with why). Agents that are not enabled share one line.
import { api } from "./api.js";
import { html, useEffect, useState } from "./ui.js";

function Part({ part }) {
  return html`<td class=${`integration-${part.state.replace(/ /g, "-")}`} title=${part.path + (part.reason ? `\n${part.reason}` : "")}>
    ${part.state}${part.reason && html`<div class="hint">${part.reason}</div>`}</td>`;
}

function Report({ report }) {
  const enabled = report.agents.filter((agent) => agent.enabled !== false);
  const off = report.agents.filter((agent) => agent.enabled === false).map((agent) => agent.agent);
  return html`<table id="integrations" hidden=${!enabled.length}>
      <thead><tr><th scope="col">agent</th><th scope="col">MCP entry</th><th scope="col">skills</th></tr></thead>
      <tbody>${enabled.map((agent) => html`<tr key=${agent.agent} data-agent=${agent.agent}><td>${agent.agent}</td><${Part} part=${agent.mcp} /><${Part} part=${agent.skills} /></tr>`)}</tbody>
    </table>
    <p id="integrations-none" class="hint" hidden=${enabled.length > 0}>No agent is enabled yet, so svc installed nothing.</p>
    <p id="integrations-disabled" class="hint" hidden=${!off.length}>${
      off.length
        ? `Not enabled, so nothing installed: ${off.join(", ")}. svc enables an agent whose ` +
          "executable is on PATH; set agents.<name>.enabled to true in settings.json to install anyway."
        : ""
    }</p>`;
}

export function IntegrationsBox() {
  const [report, setReport] = useState(null);
  const [text, setText] = useState("");
  const load = (method, failed) =>
    api(method, "integrations")
      .then((made) => {
        setReport(made);
        setText(`last sync ${made.synced_at} → ${made.mcp_url}`);
      })
      .catch((error) => setText(`${failed}: ${error.message}`));
  useEffect(() => {
    load("GET", "could not load");
  }, []);
  const sync = () => {
    setText("syncing…");
    load("POST", "sync failed");
  };
  return html`<section id="integrations-box" aria-labelledby="integrations-title"><h3 id="integrations-title">Agent integrations</h3>
    <p class="hint">svc's MCP entry and skills in each agent's global config, so an agent started anywhere has svc's tools.</p>
    ${report && html`<${Report} report=${report} />`}
    <button type="button" id="integrations-sync" onClick=${sync}>Sync again</button> <span id="integrations-status" role="status">${text}</span>
  </section>`;
}
