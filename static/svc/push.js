// Web Push on the browser's side (contract §15, docs/notifications.md "Browser side"): the one-time
// offer to turn notifications on, the Settings switch, and keeping svc's copy of this browser's
// subscription. The service worker that shows the pushes is /sw.js (static/svc/sw.js).
import { api } from "./api.js";
import { follow, opened } from "./nav.js";
import { effect, html, signal } from "./ui.js";

// The in-page offer is made once per browser: "Not now" and "Turn on" both end it for good (the
// browser's own prompt, once answered "Block", cannot be asked again anyway). Settings stay.
const OFFER_KEY = "svc.push.offer";
const SW_URL = "/sw.js";

const supported = "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;

// --- state shared by the offer and the Settings switch --------------------------------------------

const push = signal({
  permission: supported ? Notification.permission : "unsupported",
  subscribed: null, // null until known
  busy: false,
  error: "",
  offer: "", // "" | "asking" | "done" | "failed" | "closed"
});
const set = (changes) => {
  push.value = { ...push.peek(), ...changes };
};

// --- subscribing ------------------------------------------------------------------------------------

function keyBytes(base64url) {
  const text = atob(base64url.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

// A subscription made for another key is useless: svc's VAPID key was replaced (its file deleted).
function sameKey(subscription, key) {
  const given = subscription.options && subscription.options.applicationServerKey;
  if (!given) return true; // a browser that does not say: trust it
  const a = new Uint8Array(given);
  return a.length === key.length && a.every((byte, i) => byte === key[i]);
}

async function registration() {
  await navigator.serviceWorker.register(SW_URL, { scope: "/" });
  return navigator.serviceWorker.ready;
}

async function existing() {
  const reg = await navigator.serviceWorker.getRegistration("/");
  return reg ? reg.pushManager.getSubscription() : null;
}

// Subscribes (or keeps the subscription) and gives svc its copy. Needs the permission granted.
async function subscribe() {
  const reg = await registration();
  const { public_key: publicKey } = await api("GET", "push/key");
  const key = keyBytes(publicKey);
  let subscription = await reg.pushManager.getSubscription();
  if (subscription && !sameKey(subscription, key)) {
    await subscription.unsubscribe();
    subscription = null;
  }
  if (!subscription) subscription = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  await api("POST", "push/subscriptions", subscription.toJSON());
  return subscription;
}

// Called from a click: the permission prompt is asked there, first, while the gesture counts.
async function turnOn() {
  const asking = Notification.permission === "granted" ? Promise.resolve("granted") : Notification.requestPermission();
  set({ busy: true, error: "" });
  try {
    const permission = await asking;
    set({ permission });
    if (permission !== "granted")
      throw new Error(permission === "denied" ? "Notifications are blocked for this site in the browser." : "Notifications were not allowed.");
    await subscribe();
    set({ subscribed: true });
    return true;
  } catch (error) {
    set({ error: error.message || String(error) });
    return false;
  } finally {
    set({ busy: false });
  }
}

async function turnOff() {
  set({ busy: true, error: "" });
  try {
    const subscription = await existing();
    if (subscription) {
      await api("DELETE", "push/subscriptions", { endpoint: subscription.endpoint }).catch((error) => {
        if (!/no push subscription/.test(error.message)) throw error; // already gone from svc
      });
      await subscription.unsubscribe();
    }
    localStorage.setItem(OFFER_KEY, "off");
    set({ subscribed: false });
  } catch (error) {
    set({ error: error.message || String(error) });
  } finally {
    set({ busy: false });
  }
}

// svc may have started with a new database since this browser subscribed: its copy is sent again,
// once per page load. Also a subscription made for a replaced key is renewed here.
async function refresh() {
  if (!supported) return;
  if (Notification.permission !== "granted") {
    set({ subscribed: false });
    return;
  }
  try {
    set({ subscribed: Boolean(await existing()) });
    if (push.peek().subscribed) await subscribe();
  } catch (error) {
    set({ error: `Could not renew this browser's subscription: ${error.message || error}` });
  }
}

// --- the one-time offer -----------------------------------------------------------------------------

function offerWanted() {
  return supported && push.peek().permission !== "denied" && push.peek().subscribed === false && !localStorage.getItem(OFFER_KEY);
}

// Asked when the person has just started or opened a session — the moment an agent may soon wait
// for them — rather than on page load, before they know what it would be for.
function maybeOffer() {
  if (push.peek().offer || !offerWanted()) return;
  set({ offer: "asking" });
}

function Offer() {
  const s = push.value;
  if (!s.offer || s.offer === "closed") return null;
  const close = () => set({ offer: "closed" });
  const notNow = () => {
    localStorage.setItem(OFFER_KEY, "dismissed");
    close();
  };
  const yes = async () => {
    localStorage.setItem(OFFER_KEY, "asked");
    set({ offer: (await turnOn()) ? "done" : "failed" });
  };
  let body;
  if (s.offer === "done") {
    body = html`<p>Notifications are on. Settings can turn them off.</p>
      <div class="push-actions"><button type="button" onClick=${close}>OK</button></div>`;
  } else if (s.offer === "failed") {
    body = html`<p role="alert">${s.error}</p>
      <div class="push-actions"><button type="button" onClick=${close}>Close</button></div>`;
  } else {
    body = html`<p id="push-offer-title">Get a notification when an agent waits for you?</p>
      <div class="push-actions">
        <button type="button" class="primary" onClick=${yes} disabled=${s.busy}>Turn on</button>
        <button type="button" onClick=${notNow} disabled=${s.busy}>Not now</button>
      </div>`;
  }
  return html`<aside role="region" aria-label="Notifications" class="push-offer card">${body}</aside>`;
}

// At the top of the main pane, in the flow: it pushes the view down rather than covering the
// chat's input or a button someone is about to press.
export function PushOffer() {
  return html`<div id="push-offer"><${Offer} /></div>`;
}

// --- Settings -----------------------------------------------------------------------------------------

function unsupportedHint() {
  if (!window.isSecureContext) return "Push notifications need https (or localhost): open svc through an https address to turn them on.";
  return "This browser cannot receive push notifications (it has no service worker or Push API support).";
}

export function PushSettings() {
  const s = push.value;
  let line;
  let action = null;
  if (!supported) line = unsupportedHint();
  else if (s.permission === "denied") line = "Blocked: allow notifications for this site in the browser's settings, then reload.";
  else if (s.subscribed === null) line = "Checking…";
  else if (s.subscribed) {
    line = "On: this browser gets a notification when an agent waits for you, even with svc's tab closed.";
    action = html`<button type="button" onClick=${turnOff} disabled=${s.busy}>Turn off</button>`;
  } else {
    line = "Off.";
    action = html`<button type="button" class="primary" onClick=${turnOn} disabled=${s.busy}>Turn on</button>`;
  }
  return html`<div id="push-settings" role="group" aria-labelledby="push-settings-title">
    <h3 id="push-settings-title">Browser notifications</h3>
    <p class="row"><span id="push-status" role="status">${line}</span> ${action}</p>
    ${s.error && html`<p class="hint" role="alert">${s.error}</p>`}</div>`;
}

// --- start ---------------------------------------------------------------------------------------------

export function startPush() {
  // The offer waits for a session tab to open (started from the form, a list, a link).
  effect(() => {
    if (opened.value > 0) maybeOffer();
  });
  if (supported) {
    // A click on a notification: the worker says where to go; the dashboard follows its hash.
    navigator.serviceWorker.addEventListener("message", (event) => {
      const data = event.data || {};
      if (data.type !== "svc:open" || typeof data.url !== "string") return;
      const target = new URL(data.url, location.href);
      if (target.origin !== location.origin) return;
      if (location.hash === target.hash) follow();
      else location.hash = target.hash;
    });
    navigator.serviceWorker.startMessages();
  }
  refresh();
}
