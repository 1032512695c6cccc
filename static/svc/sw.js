// svc's service worker, served at /sw.js so that its scope is the whole dashboard
// (notifications_app/views_sw.py; docs/notifications.md "Browser side"). It shows the Web Push
// messages svc sends (contract §15) — also with every dashboard tab closed — and a click on one
// opens the session it names.
"use strict";

// A new svc's worker takes over at once: it holds no state an old one could still need.
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

// Where a notification leads, on this worker's own origin: the payload's `url` names the base svc
// knows (127.0.0.1, or a tunnel's public URL), which need not be where this browser reaches svc
// (the dashboard's own host name, or another tunnel).
function linkFor(message) {
  if (message.session_id) return `/#session=${encodeURIComponent(message.session_id)}`;
  if (message.event === "pairing_requested") return "/#view=remote";
  return "/";
}

function isDashboard(client) {
  return new URL(client.url).pathname === "/";
}

async function dashboards() {
  // Uncontrolled too: the page that registered this worker is not controlled until it reloads.
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  return windows.filter(isDashboard);
}

function parse(data) {
  try {
    const message = data ? data.json() : null;
    if (message && typeof message === "object") return message;
  } catch {
    /* not JSON: still say that something happened */
  }
  return { title: "svc", body: data ? data.text() : "" };
}

async function show(message) {
  // Someone looking at the dashboard sees it there (its list and the session's badge); a system
  // notification on top would only interrupt. A focused page is a visible one, so the browser
  // does not put up its own "updated in the background" notice instead.
  if ((await dashboards()).some((client) => client.focused)) return;
  await self.registration.showNotification(String(message.title || "svc"), {
    body: String(message.body || ""),
    // The notification's id: a retried push (or the dashboard's own notification of the same
    // event, app.js) replaces the one on screen instead of adding a second.
    tag: message.id ? String(message.id) : undefined,
    // An agent waiting for an answer waits until someone looks.
    requireInteraction: message.event === "permission_requested",
    data: { url: linkFor(message), session_id: message.session_id || null, event: message.event || null },
  });
}

self.addEventListener("push", (event) => {
  event.waitUntil(show(parse(event.data)));
});

// An open dashboard is told where to go (it follows the hash as for any link: app.js) and
// focused; without one, a new window opens there.
async function open(path) {
  const url = new URL(path || "/", self.registration.scope);
  if (url.origin !== self.location.origin) url.href = self.registration.scope;
  const windows = await dashboards();
  const target = windows.find((c) => c.focused) || windows.find((c) => c.visibilityState === "visible") || windows[0];
  if (!target) return self.clients.openWindow(url.href);
  target.postMessage({ type: "svc:open", url: url.href });
  // Focus is the browser's to grant (a click on the notification); the page has its link anyway.
  return target.focus().catch(() => target);
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const opening = open(event.notification.data && event.notification.data.url);
  event.waitUntil(opening);
});
