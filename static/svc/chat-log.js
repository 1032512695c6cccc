// What a chat shows, from the /ws/chat events (contract §7), as plain data: `apply(log, event)`
// returns the next log, never changing the one it was given (a view keeps its rows while the rest
// of the log grows). Each row carries the seq of the event that started it: a search hit scrolls
// to the row that holds its event (streamed chunks share one row).
//
// A row: {key, kind, text, seq, ...}. Kinds: user, agent (Markdown), agent-error (a failed prompt,
// with its log one click away), thought, tool, plan, turn-end, error, end (of an event too large to
// show: `fetch`, where it is whole), permission, decision (who answered a permission request, from
// where, when: contract §17), handover.

// `asked`: each permission request seen, by request_id → {title, options, at (its row, if shown)}.
// `queued`: the prompts waiting for the running turn, in order (contract §17; not rows: they are
// shown above the message box until they are sent, then as the user row their turn starts with).
export const emptyLog = { rows: [], bubble: null, thinking: null, tools: {}, asked: {}, queued: [], running: false, next: 0 };

function add(log, kind, text, seq, extra = {}) {
  const row = { key: log.next, kind, text, seq, ...extra };
  return { ...log, rows: [...log.rows, row], next: log.next + 1 };
}

// Replaces row `index` by `change(row)`.
function update(log, index, change) {
  const rows = log.rows.slice();
  rows[index] = change(rows[index]);
  return { ...log, rows };
}

// Agent text streams into one row until another kind of event comes; so do thoughts.
function stream(log, field, kind, chunk, seq) {
  if (log[field] !== null) return update(log, log[field], (row) => ({ ...row, text: row.text + chunk }));
  const made = add(log, kind, chunk, seq);
  return { ...made, [field]: made.rows.length - 1 };
}

// A tool call is one row, updated in place as its status changes.
function tool(log, e) {
  const id = e.toolCallId || e.tool_call_id;
  const at = id ? log.tools[id] : undefined;
  const status = (row) => e.status || (row && row.status) || "pending";
  if (at === undefined) {
    const made = add(log, "tool", `⚙ ${e.title || id || "tool call"}`, e.seq, { id, status: status(null) });
    return id ? { ...made, tools: { ...made.tools, [id]: made.rows.length - 1 } } : made;
  }
  return update(log, at, (row) => ({ ...row, text: e.title ? `⚙ ${e.title}` : row.text, status: status(row) }));
}

const plan = (e) => (e.entries || []).map((p) => `${p.status === "completed" ? "☑" : "☐"} ${p.content}`).join("\n");

function turnEnd(e) {
  const said = e.stop_reason && e.stop_reason !== "end_turn" && e.stop_reason !== "error";
  return said ? `turn ${e.stop_reason}` : "";
}

function sessionLine(e) {
  const info = e.agent_info && e.agent_info.name ? ` · ${e.agent_info.name} ${e.agent_info.version}` : "";
  return `session ${e.status}${info}`;
}

const SURFACES = { dashboard: "the dashboard", telegram: "Telegram", slack: "Slack", api: "the API" };

// A permission request seen: what it asked, and the row that shows its buttons (a live one).
// A request still waiting comes again, live, each time the chat is opened: its row is drawn once.
function asking(log, e) {
  const known = log.asked[e.request_id];
  if (!e.replay && known && known.at !== null) return log;
  const title = (e.tool_call && e.tool_call.title) || "this action";
  const asked = { ...log.asked, [e.request_id]: { title, options: e.options || [], at: e.replay ? null : log.next } };
  const next = { ...log, asked };
  return e.replay ? next : add(next, "permission", `Allow ${title}? `, e.seq, { request: e.request_id, options: e.options, answered: false });
}

// Who decided, from where and when; what was chosen. Events stored before decisions were
// recorded carry no `decided_by` and say what they can.
function decision(log, e) {
  const asked = log.asked[e.request_id] || {};
  const what = asked.title || (e.tool_call && e.tool_call.title) || "an action";
  const by = e.decided_by || { surface: e.policy ? "policy" : e.answered ? "" : "cancelled", who: e.policy || "" };
  const option = (asked.options || e.options || []).find((o) => o.option_id === e.option_id);
  let text;
  if (by.surface === "policy") text = `permission for ${what} ${e.allowed ? "allowed" : "refused"} by svc (${by.who || e.policy})`;
  else if (by.surface === "cancelled") text = `permission for ${what} refused: ${by.who || "no answer"}`;
  else
    text = `permission for ${what}: ${(option && option.name) || e.option_id}${by.who ? ` — by ${by.who}` : ""}${SURFACES[by.surface] ? ` on ${SURFACES[by.surface]}` : ""}`;
  const row = add(log, "decision", text, e.seq, { surface: by.surface, who: by.who, at: e.decided_at || null });
  // The buttons of the request go: it is answered, here or anywhere else.
  const index = asked.at === null || asked.at === undefined ? -1 : row.rows.findIndex((r) => r.key === asked.at);
  return index < 0 ? row : update(row, index, (r) => ({ ...r, answered: true }));
}

function handover(e) {
  return `Handover code ${e.code}: pick this session up on another device within ${e.expires_in} s (dashboard → Pick up, or \`manage.py pickup ${e.code}\`).`;
}

// The events that add one row of their own (after ending any streamed row).
function single(log, e) {
  const seq = e.seq;
  switch (e.kind) {
    case "user_message_chunk":
      return { ...add(log, "user", e.text, seq), running: true };
    case "tool_call":
    case "tool_call_update":
      return tool(log, e);
    case "plan":
      return add(log, "plan", plan(e), seq);
    case "turn_end":
      return { ...add(log, "turn-end", turnEnd(e), seq), running: false };
    case "session":
      return { ...add(log, "end", sessionLine(e), seq), running: Boolean(e.busy) && e.status === "running" };
    case "permission_resolved":
      return decision(log, e);
    case "handover":
      return add(log, "handover", handover(e), seq);
    // svc found the agent gone when it started again, and (maybe later) started it again.
    case "interrupted":
      return { ...add(log, "end", e.message, seq), running: false };
    case "resumed":
      return add(log, "end", e.message, seq);
    case "permission_request":
      return asking(log, e);
    case "error":
      // A failed prompt: the agent's own words, and its log (its stderr) one click away.
      return /^prompt failed: /.test(e.message || "") ? add(log, "agent-error", e.message, seq, { hasLog: Boolean(e.log) }) : add(log, "error", e.message, seq);
    default:
      return log;
  }
}

// What waits after a `queue_change` (added, removed, order: contract §7): `order` says what
// waits and in which order; a prompt is known from the `queue` of the open or from `added`.
function queueChanged(queued, e) {
  const known = new Map(queued.map((item) => [item.id, item]));
  for (const item of e.added || []) known.set(item.id, item);
  return (e.order || []).filter((id) => known.has(id)).map((id) => known.get(id));
}

// An event too large for one frame (docs/sessions.md "Frames"): what it is; the row keeps where it
// is whole (`fetch`), which the view links.
const tooLarge = (e) => `${e.kind} too large to show here (${e.bytes} bytes)`;

export function apply(log, e) {
  if (e.kind === "queue") return { ...log, queued: e.items || [] }; // a streamed row goes on
  if (e.kind === "queue_change") return { ...log, queued: queueChanged(log.queued, e) };
  // The later parts of a split prompt go on its row (streamed chunks go on by themselves).
  if (e.part > 0 && e.kind === "user_message_chunk" && log.rows.length) {
    return update(log, log.rows.length - 1, (row) => ({ ...row, text: row.text + (e.text || "") }));
  }
  if (e.truncated) return add(apply(log, { ...e, truncated: false }), "end", tooLarge(e), e.seq, { fetch: e.fetch || null });
  // The chat opened again on a new socket (svc restarted) and still running: nothing to add.
  if (e.kind === "session" && e.again && e.status === "running") return { ...log, running: Boolean(e.busy) };
  if (e.kind === "agent_message_chunk") return stream(log, "bubble", "agent", e.text || "", e.seq);
  if (e.kind === "agent_thought_chunk") return stream(log, "thinking", "thought", e.text || "", e.seq);
  return single({ ...log, bubble: null, thinking: null }, e);
}

// The row a search hit `at` lands in: the last one whose first event is not after it.
export function rowAt(log, at) {
  let found = null;
  for (const row of log.rows) if (row.seq !== null && row.seq !== undefined && row.seq <= at) found = row;
  return found;
}

export function answered(log, key) {
  const index = log.rows.findIndex((row) => row.key === key);
  return index < 0 ? log : update(log, index, (row) => ({ ...row, answered: true }));
}
