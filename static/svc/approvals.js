// Approvals (contract §17): every permission decision, newest first, from GET /api/approvals —
// what an agent asked, what it was answered, who decided and from where (the dashboard, a chat
// channel, the API, svc's policy, or nobody: cancelled), and how long it waited. Filtered by
// session (`#view=approvals&of=<session id>` opens it filtered); each row links to the decision
// in the session's history.
import { api } from "./api.js";
import { view, visible } from "./nav.js";
import { sessions } from "./store.js";
import { hashParams, html, useEffect, useRef, useState } from "./ui.js";

const LIMIT = 200;
const REFRESH_MS = 10_000;
const SURFACES = {
  dashboard: "dashboard",
  telegram: "Telegram",
  slack: "Slack",
  api: "API",
  policy: "svc's policy",
  cancelled: "cancelled",
};

function when(iso) {
  const date = new Date(iso);
  return html`<time datetime=${iso} title=${date.toLocaleString()}>${date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" })}</time>`;
}

function waited(row) {
  const ms = new Date(row.decided_at) - new Date(row.requested_at);
  if (!(ms > 0)) return "at once";
  return ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60_000)} min`;
}

function answer(row) {
  const option = row.options.find((o) => o.option_id === row.chosen);
  if (!row.chosen) return "refused";
  return option ? option.name : row.chosen;
}

function SessionLink({ row }) {
  const known = sessions.value.find((s) => s.id === row.session_id);
  const name = (known && known.title) || `${row.agent} session ${row.session_id.slice(0, 8)}`;
  return html`<a href=${`#session=${row.session_id}&at=${row.seq}`}>${name}</a>`;
}

function Row({ row }) {
  const by = row.decided_by;
  return html`<tr data-approval=${row.id} data-surface=${by.surface}>
    <td>${when(row.decided_at)}</td>
    <td><${SessionLink} row=${row} /></td>
    <td class="path">${row.title || "an action"}${row.kind ? html` <span class="hint">(${row.kind})</span>` : null}</td>
    <td class="approval-answer">${answer(row)}</td>
    <td class="approval-by"><span class="approval-surface">${SURFACES[by.surface] || by.surface}</span>${by.who ? html`: ${by.who}` : null}</td>
    <td>${waited(row)}</td>
  </tr>`;
}

// The decisions of `session` (all when empty), loaded while the view is shown and again every
// ten seconds; an older answer that arrives late is dropped.
function useApprovals(session) {
  const [rows, setRows] = useState(null);
  const [error, setError] = useState("");
  const latest = useRef(0);
  const here = view.value === "approvals" && visible.value;
  useEffect(() => {
    if (!here) return undefined;
    const refresh = async () => {
      const ticket = ++latest.current;
      const query = `approvals?limit=${LIMIT}${session ? `&session_id=${encodeURIComponent(session)}` : ""}`;
      try {
        const loaded = await api("GET", query);
        if (ticket === latest.current) {
          setRows(loaded);
          setError("");
        }
      } catch (e) {
        if (ticket === latest.current) setError(e.message);
      }
    };
    refresh();
    const timer = setInterval(refresh, REFRESH_MS);
    return () => clearInterval(timer);
  }, [session, here]);
  return { rows, error };
}

function Filter({ session, setSession }) {
  const options = sessions.value.filter((s) => s.kind !== "terminal");
  return html`<label class="row">Session
    <select id="approvals-session" value=${session} onChange=${(e) => setSession(e.currentTarget.value)}>
      <option value="">All sessions</option>
      ${options.map((s) => html`<option value=${s.id}>${s.title || `${s.agent} ${s.id.slice(0, 8)}`}</option>`)}
      ${session && !options.some((s) => s.id === session) ? html`<option value=${session}>${session.slice(0, 8)}</option>` : null}
    </select></label>`;
}

// `#view=approvals&of=<session id>`: the view filtered to that session.
const asked = () => {
  const params = hashParams();
  return params.get("view") === "approvals" ? params.get("of") : null;
};

export function ApprovalsView() {
  const [session, setSession] = useState(() => asked() || "");
  useEffect(() => {
    const follow = () => {
      const of = asked();
      if (of !== null) setSession(of);
    };
    window.addEventListener("hashchange", follow);
    return () => window.removeEventListener("hashchange", follow);
  }, []);
  const { rows, error } = useApprovals(session);
  const filter = html`<${Filter} session=${session} setSession=${setSession} />`;
  if (error) return html`${filter}<p class="approvals-error notice notice-bad" role="alert">Approvals could not be loaded: ${error}</p>`;
  if (!rows) return html`${filter}<p class="hint" role="status">loading…</p>`;
  if (!rows.length) return html`${filter}<p class="hint approvals-empty">No permission was decided${session ? " in this session" : ""} yet.</p>`;
  return html`${filter}
    <p class="hint" role="status">${rows.length === LIMIT ? `The newest ${LIMIT} decisions` : `${rows.length} ${rows.length === 1 ? "decision" : "decisions"}`}, newest first.</p>
    <div class="table-wrap" tabindex="0" role="region" aria-label="permission decisions">
      <table id="approvals-table" class="stack">
        <thead><tr>${["Decided", "Session", "Asked for", "Answer", "Decided by", "Waited"].map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
        <tbody>${rows.map((row) => html`<${Row} key=${row.id} row=${row} />`)}</tbody>
      </table>
    </div>`;
}
