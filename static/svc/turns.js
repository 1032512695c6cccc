// Subagent turns: each subagent's status, summary, measured changes; open its chat; review its
// changes (diff.js, by the subagent's id); cancel.
// Refreshed whenever /ws/agents/runtime changes (it carries every running turn).
"use strict";

(() => {
  const box = document.getElementById("turns");

  function changes(c) {
    if (!c || c.commits === undefined) return "";
    return `${c.branch}: ${c.commits} commits, ${c.files_changed} files, +${c.insertions} −${c.deletions}`;
  }

  // Measured changes in a worktree of its own: something to review, merge or discard.
  const hasChanges = (c) => Boolean(c && c.branch && c.commits !== undefined && (c.commits > 0 || c.files_changed > 0));

  function subagentRow(s) {
    const row = svc.el("tr", { className: `status-${s.status}` });
    row.dataset.subagent = s.name;
    row.append(...[s.name, s.agent, s.status].map((v) => svc.el("td", { textContent: v || "" })));
    row.append(...[s.summary, changes(s.changes)].map((v) => svc.el("td", { className: "path", textContent: v || "" })));
    const open = s.session_id ? svc.el("button", { type: "button", textContent: "Open chat", onclick: async () => openChat(await svc.api("GET", `sessions/${s.session_id}`)) }) : null;
    const review = hasChanges(s.changes) ? svc.el("button", { type: "button", textContent: "Review changes", ariaLabel: `Review changes of ${s.name}`, onclick: () => { location.hash = `#view=diff&of=subagents/${s.id}`; } }) : null;
    row.append(svc.el("td", { className: "actions" }, open, review));
    return row;
  }

  function turnCard(t) {
    const head = svc.el("h3", { textContent: `${t.mode} · ${t.status} · ${t.cwd}` });
    const table = svc.el("table", { className: "stack" }, svc.el("thead", {}, svc.el("tr", {}, ...["Name", "Agent", "Status", "Summary", "Changes", ""].map((h) => svc.el("th", { scope: "col", textContent: h })))),
      svc.el("tbody", {}, ...t.subagents.map(subagentRow)));
    const card = svc.el("article", { className: "turn" }, head, svc.el("div", { className: "table-wrap", tabIndex: 0, role: "region", ariaLabel: "subagents" }, table));
    card.dataset.turn = t.turn_id;
    if (t.status === "running") {
      const cleanup = svc.el("input", { type: "checkbox", id: `cleanup-${t.turn_id}` });
      const cancel = svc.el("button", { type: "button", textContent: "Cancel turn", onclick: async () => {
        cancel.disabled = true;
        await svc.api("DELETE", `subagent-turns/${t.turn_id}${cleanup.checked ? "?cleanup=1" : ""}`).catch((e) => { cancel.textContent = e.message; });
        refresh();
      } });
      card.append(svc.el("div", { className: "row" }, cancel, svc.el("label", { htmlFor: cleanup.id }, cleanup, " also remove its worktrees and branches")));
    }
    return card;
  }

  async function refresh() {
    try {
      const turns = await svc.api("GET", "subagent-turns");
      box.replaceChildren(...(turns.length ? turns.slice(0, 10).map(turnCard) : [svc.el("p", { className: "hint", textContent: "No subagent turns yet: an agent starts one with initialize_subagents." })]));
    } catch { /* the banner says why */ }
  }

  const runtimeLine = (a) => a.kind === "subagent_turn"
    ? `subagent turn ${a.turn_id.slice(0, 8)} (${a.mode}, ${a.status}): ${a.subagents.map((s) => `${s.name} ${s.status}`).join(", ")}`
    : `${a.agent || ""} ${a.agent_name ? `(${a.agent_name} ${a.agent_version || ""}) ` : ""}${a.busy ? "working" : "idle"} · ${a.session_id.slice(0, 8)}`;
  const renderRuntime = listRenderer("agents_runtime", runtimeLine);
  subscribe("/ws/agents/runtime", (items) => { renderRuntime(items); refresh(); });
})();
