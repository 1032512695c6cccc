// Subagent turns: each subagent's status, summary and measured changes; open its chat; review its
// changes (diff.js, by the subagent's id); cancel a running turn. Fetched again whenever
// /ws/agents/runtime changes (it carries every running turn), which is also the "Agents running" list.
import { api } from "./api.js";
import { openSession } from "./nav.js";
import { runtime } from "./store.js";
import { html, useSignalEffect, useState } from "./ui.js";

function changes(c) {
  if (!c || c.commits === undefined) return "";
  return `${c.branch}: ${c.commits} commits, ${c.files_changed} files, +${c.insertions} −${c.deletions}`;
}

// Measured changes in a worktree of its own: something to review, merge or discard.
const hasChanges = (c) => Boolean(c && c.branch && c.commits !== undefined && (c.commits > 0 || c.files_changed > 0));

function SubagentRow({ s }) {
  const open = async () => openSession(await api("GET", `sessions/${s.session_id}`));
  return html`<tr class=${`status-${s.status}`} data-subagent=${s.name}>
    <td>${s.name || ""}</td><td>${s.agent || ""}</td><td>${s.status || ""}</td>
    <td class="path">${s.summary || ""}</td><td class="path">${changes(s.changes)}</td>
    <td class="actions">
      ${s.session_id && html`<button type="button" onClick=${open}>Open chat</button>`}
      ${
        hasChanges(s.changes) &&
        html`<button type="button" aria-label=${`Review changes of ${s.name}`}
        onClick=${() => {
          location.hash = `#view=diff&of=subagents/${s.id}`;
        }}>Review changes</button>`
      }
    </td>
  </tr>`;
}

function CancelTurn({ t, refresh }) {
  const [busy, setBusy] = useState(false);
  const [said, setSaid] = useState("");
  const [cleanup, setCleanup] = useState(false);
  const cancel = async () => {
    setBusy(true);
    await api("DELETE", `subagent-turns/${t.turn_id}${cleanup ? "?cleanup=1" : ""}`).catch((e) => setSaid(e.message));
    refresh();
  };
  return html`<div class="row"><button type="button" class="danger" disabled=${busy} onClick=${cancel}>${said || "Cancel turn"}</button>
    <label><input type="checkbox" checked=${cleanup} onChange=${(e) => setCleanup(e.currentTarget.checked)} /> also remove its worktrees and branches</label></div>`;
}

function Turn({ t, refresh }) {
  return html`<article class="turn card" data-turn=${t.turn_id}>
    <h3>${t.mode} · ${t.status} · ${t.cwd}</h3>
    <div class="table-wrap" tabindex="0" role="region" aria-label="subagents"><table class="stack">
      <thead><tr>${["Name", "Agent", "Status", "Summary", "Changes", ""].map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
      <tbody>${t.subagents.map((s) => html`<${SubagentRow} key=${s.name} s=${s} />`)}</tbody>
    </table></div>
    ${t.status === "running" && html`<${CancelTurn} t=${t} refresh=${refresh} />`}
  </article>`;
}

const runtimeLine = (a) =>
  a.kind === "subagent_turn"
    ? `subagent turn ${a.turn_id.slice(0, 8)} (${a.mode}, ${a.status}): ${a.subagents.map((s) => `${s.name} ${s.status}`).join(", ")}`
    : `${a.agent || ""} ${a.agent_name ? `(${a.agent_name} ${a.agent_version || ""}) ` : ""}${a.busy ? "working" : "idle"} · ${a.session_id.slice(0, 8)}`;

export function TurnsView() {
  const [turns, setTurns] = useState(null);
  const refresh = () =>
    api("GET", "subagent-turns")
      .then(setTurns)
      .catch(() => {
        /* the banner says why */
      });
  useSignalEffect(() => {
    runtime.value;
    refresh();
  });
  return html`<div id="turns">${
    turns &&
    (turns.length
      ? turns.slice(0, 10).map((t) => html`<${Turn} key=${t.turn_id} t=${t} refresh=${refresh} />`)
      : html`<p class="hint">No subagent turns yet: an agent starts one with initialize_subagents.</p>`)
  }</div>
    <div id="runtime-box">
      <h3 id="runtime-title">Agents running</h3>
      <ul id="agents_runtime">${runtime.value.map((a) => html`<li>${runtimeLine(a)}</li>`)}</ul>
    </div>`;
}
