// Chat channels (contract §14): the built-in web dashboard and each channel declared in
// settings.json, live from /ws/channels — status, the bot's name, chats, the last event, and
// while a channel is not online the detail that says what to fix. Under each channel, its
// outbox (contract §17): the messages waiting for the platform and those never delivered; under
// the list, the notifications (live from /ws/notifications) still waiting for a target or
// never delivered to one. Above the list, setting a bot up (issue 34): a token pasted, checked
// with the platform (the bot's name shown), saved — kept in $SVC_HOME/secrets.json, never shown
// again — and, under the channel, who wrote to the bot while not allowed, each with Allow. That
// part is the machine's own: a paired device sees the list only.
import { age, api, pageKey } from "./api.js";
import { channels, choices, clock, loadChoices, notifications } from "./store.js";
import { Option, RetryIn, Status, Submit, html, useEffect, useState, useStatus } from "./ui.js";

function facts(c, now) {
  const said = [];
  if (c.builtin) said.push(c.detail || "the dashboard");
  if (c.bot) said.push(`bot @${c.bot}`);
  if (!c.builtin) said.push(`${c.chats || 0} chat${c.chats === 1 ? "" : "s"}`);
  if (c.last_event_at) said.push(`last event ${age(c.last_event_at, now)} ago`);
  else if (!c.builtin) said.push("no event yet");
  return said.join(" · ");
}

// What the channel could not deliver: how many messages wait (and why), and the ones that
// never arrived — a person reads those here, since the chat never showed them.
function Outbox({ outbox, now }) {
  if (!outbox || (!outbox.pending && !outbox.failed.length)) return null;
  const s = outbox.pending === 1 ? "" : "s";
  return html`<div class="channel-outbox">
    ${outbox.pending > 0 && html`<div class="outbox-waiting">${outbox.pending} message${s} waiting to be delivered${outbox.error ? `: ${outbox.error}` : ""}</div>`}
    ${
      outbox.failed.length > 0 &&
      html`<details class="outbox-failed" open>
      <summary>Not delivered (${outbox.failed.length})</summary>
      <ul>${outbox.failed.map(
        (m) => html`<li key=${m.id} data-outbox=${m.id}>
        <span class="hint">to ${m.chat}, ${age(m.created_at, now)} ago:</span> <q>${m.text}</q>
        <div class="hint">${m.error}</div>
      </li>`,
      )}</ul>
    </details>`
    }
  </div>`;
}

// Senders who wrote while not on the allow-list (GET …/asking, fetched again whenever the live
// row's count changes), each with an Allow button that adds them to settings.json.
function Asking({ c }) {
  const [rows, setRows] = useState([]);
  const [text, run, , busy] = useStatus();
  useEffect(() => {
    if (!c.asking) {
      setRows([]);
      return;
    }
    api("GET", `channels/${encodeURIComponent(c.name)}/asking`).then(setRows, () => setRows([]));
  }, [c.name, c.asking]);
  const allow = (row) =>
    run(async () => {
      await api("POST", `channels/${encodeURIComponent(c.name)}/allow`, { user: row.user });
      setRows((now) => now.filter((r) => r.user !== row.user));
      return `Allowed ${row.name || row.user}: their next message starts a session.`;
    }, "allowing…");
  const title = `asking-${c.name}`;
  return html`<div class="channel-asking">
    ${c.bot && html`<p class="hint">Send <code>/start</code> to <a href=${c.kind === "telegram" ? `https://t.me/${c.bot}` : undefined} target="_blank" rel="noopener">@${c.bot}</a>: you appear here with an Allow button.</p>`}
    ${
      rows.length > 0 &&
      html`<h4 id=${title}>Asking to use the bot</h4>
      <ul class="asking" aria-labelledby=${title}>${rows.map(
        (r) => html`<li key=${r.user} data-asking=${r.user}>
        <strong>${r.name || r.user}</strong> <span class="hint">id ${r.user}${r.text ? html`, wrote <q>${r.text}</q>` : ""}</span>${" "}
        <button type="button" class="primary" aria-label=${`Allow ${r.name || r.user}`} onClick=${() => allow(r)}>Allow</button>
      </li>`,
      )}</ul>`
    }
    <${Status} id=${`asking-status-${c.name}`} text=${text} busy=${busy} />
  </div>`;
}

function ChannelCard({ c }) {
  const detail = c.detail || (c.status === "disabled" ? `"enabled": false under channels.${c.name} in settings.json` : "");
  return html`<li class="card" data-channel=${c.name} data-status=${c.status}>
    <strong class="channel-name">${c.name}</strong> ${c.builtin ? "built-in" : c.kind} · <span class=${`channel-status channel-${c.status}`}>${c.status}</span>
    <div class="hint" title=${c.last_event_at ? new Date(c.last_event_at).toLocaleString() : undefined}>${facts(c, clock.value)}</div>
    ${!c.builtin && c.status !== "online" && detail && html`<div class="channel-detail">${detail}<${RetryIn} row=${c} />${c.status === "error" && html` · <a href="/docs/channels.md#the-service" target="_blank" rel="noopener">docs/channels.md</a>`}</div>`}
    ${!c.builtin && !pageKey() && html`<${Asking} c=${c} />`}
    <${Outbox} outbox=${c.outbox} now=${clock.value} />
  </li>`;
}

// Deliveries of recent notifications that wait for their target or never reached it.
function Undelivered({ now }) {
  const rows = [];
  for (const n of notifications.value) {
    for (const d of n.deliveries || []) {
      if (d.status === "failed" || (d.status === "pending" && d.attempts > 0)) rows.push({ n, d });
    }
  }
  if (!rows.length) return null;
  return html`<h3 id="undelivered-title">Notifications not delivered</h3>
    <ul id="undelivered" class="cards" aria-labelledby="undelivered-title">${rows.map(
      ({ n, d }) => html`<li class="card" key=${`${n.id}:${d.target}`} data-delivery=${d.target} data-status=${d.status}>
      <strong>${n.title}</strong> → ${d.target} · <span class=${d.status === "failed" ? "channel-error" : "channel-stopped"}>${d.status === "failed" ? "failed" : "waiting"}</span>
      <div class="hint">${d.attempts} attempt${d.attempts === 1 ? "" : "s"}${d.error ? `: ${d.error}` : ""}${d.status === "pending" && d.next_at ? ` · next try in ${age(new Date(now).toISOString(), Date.parse(d.next_at))}` : ""}</div>
    </li>`,
    )}</ul>`;
}

const TOKEN_FIELDS = {
  telegram: [["bot_token", "Bot token", "123456789:AA… from @BotFather"]],
  slack: [
    ["bot_token", "Bot token", "xoxb-…"],
    ["app_token", "App token", "xapp-… (connections:write)"],
  ],
};

// One platform's form: tokens (or the env vars holding them), where the chat's sessions run,
// Check (the platform says who the bot is) and Save. Tokens are never shown again once saved.
function Setup({ kind, title }) {
  const [text, run, , busy] = useStatus();
  const [bot, setBot] = useState(null);
  const { agents, workspaces } = choices.value;
  const saved = channels.value.find((c) => c.name === kind);
  useEffect(() => {
    if (!choices.value.loaded) loadChoices().catch(() => {});
  }, []);
  const body = (form) => {
    const data = { kind, api_base: form.api_base.value.trim() };
    for (const [key] of TOKEN_FIELDS[kind]) {
      if (form[key].value.trim()) data[key] = form[key].value.trim();
      if (form[`${key}_env`].value.trim()) data[`${key}_env`] = form[`${key}_env`].value.trim();
    }
    return data;
  };
  const said = (checked) =>
    `Token works: @${checked.bot_username}${checked.bot_name && checked.bot_name !== checked.bot_username ? ` (${checked.bot_name})` : ""}`;
  const check = (event) => {
    if (busy) return;
    const form = event.currentTarget.form;
    run(async () => {
      const checked = await api("POST", `channels/${kind}/check`, body(form));
      setBot(checked);
      return said(checked);
    }, "checking…");
  };
  const submit = (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    run(async () => {
      const data = { ...body(form), agent: form.agent.value, workspace: form.workspace.value };
      const answer = await api("PUT", `channels/${kind}`, data);
      setBot(answer.check);
      for (const [key] of TOKEN_FIELDS[kind]) form[key].value = ""; // never shown again
      return `${said(answer.check)}. Saved. Send /start to @${answer.check.bot_username}, then allow yourself below.`;
    }, "checking and saving…");
  };
  const id = `${kind}-setup`;
  return html`<form id=${id} class="card channel-setup" aria-labelledby=${`${id}-title`} onSubmit=${submit}>
    <h4 id=${`${id}-title`}>${title}</h4>
    ${saved && html`<p class="hint">${saved.secret_stored ? "A token is saved (never shown again); paste one only to replace it." : "Configured in settings.json."}</p>`}
    <div class="row">
      ${TOKEN_FIELDS[kind].map(([key, label, hint]) => html`<label key=${key}>${label} <input name=${key} type="password" autocomplete="off" placeholder=${hint} /></label>`)}
      <label>Agent <select name="agent">${agents.filter((a) => a.enabled).map((a) => html`<${Option} key=${a.name} value=${a.name}>${a.name}<//>`)}</select></label>
      <label>Workspace <select name="workspace">${workspaces.map((w) => html`<${Option} key=${w.path} value=${w.path}>${w.path}<//>`)}</select></label>
    </div>
    <details><summary>Advanced</summary><div class="row">
      ${TOKEN_FIELDS[kind].map(([key, label]) => html`<label key=${key}>${label} from env var <input name=${`${key}_env`} autocomplete="off" placeholder="instead of pasting it" /></label>`)}
      <label>API server <input name="api_base" autocomplete="off" placeholder=${kind === "telegram" ? "https://api.telegram.org" : "https://slack.com/api/"} /></label>
    </div></details>
    <div class="row">
      <button type="button" aria-disabled=${busy ? "true" : undefined} onClick=${check}>Check</button>
      <${Submit} busy=${busy}>Save<//>
      <${Status} id=${`${id}-status`} text=${text} busy=${busy} />
    </div>
    ${bot && html`<p class="hint" data-bot=${bot.bot_username}>Bot: <strong>@${bot.bot_username}</strong>${bot.bot_name ? ` — ${bot.bot_name}` : ""}</p>`}
  </form>`;
}

export function ChannelsView() {
  return html`<p class="hint">Drive agents from Telegram or Slack: paste a bot's token below, check it and save; whoever writes to the bot then asks here to be allowed. Step by step in <a href="/docs/channels.md" target="_blank" rel="noopener">docs/channels.md</a>.</p>
    ${!pageKey() && html`<div class="cards channel-setups"><${Setup} kind="telegram" title="Telegram" /><${Setup} kind="slack" title="Slack" /></div>`}
    <ul id="channels" class="cards">${channels.value.map((c) => html`<${ChannelCard} key=${c.name} c=${c} />`)}</ul>
    <${Undelivered} now=${clock.value} />`;
}
