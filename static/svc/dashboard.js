// Live lists: each socket sends the complete list on connect and on every change.
"use strict";

function text(value) { return document.createTextNode(value == null ? "" : String(value)); }

const renderers = {
  sessions(items) {
    const body = document.querySelector("#sessions tbody");
    body.replaceChildren(...items.map((s) => {
      const row = document.createElement("tr");
      row.className = "status-" + s.status;
      for (const value of [s.agent, s.kind, s.status, s.workspace, s.created_at]) {
        const cell = document.createElement("td");
        cell.appendChild(text(value));
        row.appendChild(cell);
      }
      row.dataset.sessionId = s.id;
      return row;
    }));
  },
  list(id, label) {
    return (items) => {
      document.getElementById(id).replaceChildren(...items.map((item) => {
        const li = document.createElement("li");
        li.appendChild(text(label(item)));
        return li;
      }));
    };
  },
};

function subscribe(path, render) {
  let delay = 500;
  const open = () => {
    const ws = new WebSocket(`ws://${location.host}${path}`);
    ws.onmessage = (event) => { delay = 500; render(JSON.parse(event.data)); };
    ws.onclose = () => { setTimeout(open, delay); delay = Math.min(delay * 2, 10000); };
  };
  open();
}

subscribe("/ws/sessions", renderers.sessions);
subscribe("/ws/channels", renderers.list("channels", (c) => `${c.name} (${c.kind}, ${c.status})`));
subscribe("/ws/tunnels", renderers.list("tunnels", (t) => `${t.name} ${t.public_url} (${t.status})`));
subscribe("/ws/agents/runtime", renderers.list("agents_runtime", (a) => `${a.agent || ""} ${a.session_id} ${a.busy ? "busy" : "idle"}`));
