// Chat channels (contract §14): the built-in web dashboard and each channel declared in
// settings.json, live from /ws/channels — status, the bot's name, chats, the last event, and
// while a channel is not online the detail that says what to fix. Under each channel, its
// outbox (contract §17): the messages waiting for the platform and those never delivered; under
// the list, the notifications (live from /ws/notifications) still waiting for a target or
// never delivered to one.
import { age } from "./api.js";
import { channels, clock, notifications } from "./store.js";
import { html } from "./ui.js";

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
    ${outbox.failed.length > 0 && html`<details class="outbox-failed" open>
      <summary>Not delivered (${outbox.failed.length})</summary>
      <ul>${outbox.failed.map((m) => html`<li key=${m.id} data-outbox=${m.id}>
        <span class="hint">to ${m.chat}, ${age(m.created_at, now)} ago:</span> <q>${m.text}</q>
        <div class="hint">${m.error}</div>
      </li>`)}</ul>
    </details>`}
  </div>`;
}

function ChannelCard({ c }) {
  const detail = c.detail || (c.status === "disabled" ? `"enabled": false under channels.${c.name} in settings.json` : "");
  return html`<li class="card" data-channel=${c.name} data-status=${c.status}>
    <strong class="channel-name">${c.name}</strong> ${c.builtin ? "built-in" : c.kind} · <span class=${`channel-status channel-${c.status}`}>${c.status}</span>
    <div class="hint" title=${c.last_event_at ? new Date(c.last_event_at).toLocaleString() : undefined}>${facts(c, clock.value)}</div>
    ${!c.builtin && c.status !== "online" && detail && html`<div class="channel-detail">${detail}</div>`}
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
    <ul id="undelivered" class="cards" aria-labelledby="undelivered-title">${rows.map(({ n, d }) => html`<li class="card" key=${`${n.id}:${d.target}`} data-delivery=${d.target} data-status=${d.status}>
      <strong>${n.title}</strong> → ${d.target} · <span class=${d.status === "failed" ? "channel-error" : "channel-stopped"}>${d.status === "failed" ? "failed" : "waiting"}</span>
      <div class="hint">${d.attempts} attempt${d.attempts === 1 ? "" : "s"}${d.error ? `: ${d.error}` : ""}${d.status === "pending" && d.next_at ? ` · next try in ${age(new Date(now).toISOString(), Date.parse(d.next_at))}` : ""}</div>
    </li>`)}</ul>`;
}

export function ChannelsView() {
  return html`<p class="hint">Drive agents from Telegram or Slack: declare a bot under "channels" in settings.json — setup step by step in <code>docs/channels.md</code>.</p>
    <ul id="channels" class="cards">${channels.value.map((c) => html`<${ChannelCard} key=${c.name} c=${c} />`)}</ul>
    <${Undelivered} now=${clock.value} />`;
}
