// How to install a built-in agent that is not installed: the line GET /api/agents gives (`install`,
// kept in sessions_app/agents.py, the one place that says it), with a Copy button. Shown by the
// new-session form's "Not installed here" list and the settings' agents table.
import { CopyButton, html } from "./ui.js";

export function InstallHint({ a }) {
  const how = a.install;
  return html`<span class="install-hint" data-install=${a.name}><code>${how.command}</code> <${CopyButton} text=${how.command} name=${`Copy the install command of ${a.name}`} />
    ${!how.manager_found && html` <span class="hint">(${how.manager} is not installed either: it comes with Node.js)</span>`}</span>`;
}
