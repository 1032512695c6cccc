// Chat channels (contract §14): the built-in web dashboard and each channel declared in
// settings.json, live from /ws/channels — status, the bot's name, chats, the last event, and
// while a channel is not online the detail that says what to fix.
"use strict";

(() => {
  const list = document.getElementById("channels");

  function channelCard(c) {
    const item = svc.el("li", { className: "card" },
      svc.el("strong", { className: "channel-name", textContent: c.name }),
      ` ${c.builtin ? "built-in" : c.kind} · `,
      svc.el("span", { className: `channel-status channel-${c.status}`, textContent: c.status }));
    item.dataset.channel = c.name;
    item.dataset.status = c.status;
    const facts = [];
    if (c.builtin) facts.push(c.detail || "the dashboard");
    if (c.bot) facts.push(`bot @${c.bot}`);
    if (!c.builtin) facts.push(`${c.chats || 0} chat${c.chats === 1 ? "" : "s"}`);
    if (c.last_event_at) facts.push(`last event ${svc.age(c.last_event_at)} ago`);
    else if (!c.builtin) facts.push("no event yet");
    const info = svc.el("div", { className: "hint", textContent: facts.join(" · ") });
    if (c.last_event_at) info.title = new Date(c.last_event_at).toLocaleString();
    item.append(info);
    const detail = c.detail || (c.status === "disabled" ? `"enabled": false under channels.${c.name} in settings.json` : "");
    if (!c.builtin && c.status !== "online" && detail) {
      item.append(svc.el("div", { className: "channel-detail", textContent: detail }));
    }
    return item;
  }

  subscribe("/ws/channels", (rows) => list.replaceChildren(...rows.map(channelCard)));
})();
