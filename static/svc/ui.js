// The dashboard's component kit: Preact with htm templates and signals (no build step; the import
// map in dashboard.html resolves "preact", "preact/hooks", "htm" and "@preact/signals" to
// /static/vendor). Components import from here, and a few small parts every view uses live here.
import { Component, h, render } from "preact";
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { batch, computed, effect, signal, useComputed, useSignal, useSignalEffect } from "@preact/signals";
import htm from "htm";

export const html = htm.bind(h);
export { Component, render, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState };
export { batch, computed, effect, signal, useComputed, useSignal, useSignalEffect };

// Whether the page has the phone's layout (dashboard.css's 40 rem breakpoint): for what the CSS
// cannot do alone, such as the order of a view's parts.
const PHONE = matchMedia("(max-width: 40rem)");
export const narrow = signal(PHONE.matches);
PHONE.addEventListener("change", (event) => { narrow.value = event.matches; });

// The URL hash carries what is shown: `#view=usage`, `#session=<id>&at=<seq>`, `#view=diff&of=…`.
export function hashParams() {
  return new URLSearchParams(location.hash.slice(1));
}

// Re-renders the component whenever the hash changes; returns the current parameters.
export function useHash() {
  const [params, setParams] = useState(hashParams);
  useEffect(() => {
    const changed = () => setParams(hashParams());
    window.addEventListener("hashchange", changed);
    return () => window.removeEventListener("hashchange", changed);
  }, []);
  return params;
}

// Re-renders the component every `ms` (a countdown, an age that ticks).
export function useTick(ms) {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

// A button that copies `text` and says so for a moment.
export function CopyButton({ text, label = "Copy", name }) {
  const [said, setSaid] = useState("");
  const copy = async () => {
    try { await navigator.clipboard.writeText(text); setSaid("Copied"); } catch { setSaid("Copy failed"); }
    setTimeout(() => setSaid(""), 1500);
  };
  return html`<button type="button" class="small" aria-label=${name} onClick=${copy}>${said || label}</button>`;
}

// An <option> whose value is an attribute too, so a selector finds it: Preact leaves the attribute
// out when the value equals the text (the property already reads so).
export function Option({ value, children, ...rest }) {
  const keep = useCallback((node) => { if (node) node.setAttribute("value", value); }, [value]);
  return html`<option value=${value} ref=${keep} ...${rest}>${children}</option>`;
}

// A form's status line (what a submit did, or why it failed).
export function Status({ id, text, class: cls }) {
  return html`<span id=${id} class=${cls || "form-status"} role="status">${text}</span>`;
}

// An action's status held by the component: [text, run(action)] where run shows the error, if any.
export function useStatus() {
  const [text, setText] = useState("");
  const run = useCallback(async (action, busy) => {
    if (busy !== undefined) setText(busy);
    try { const said = await action(); setText(typeof said === "string" ? said : ""); }
    catch (error) { setText(error.message); }
  }, []);
  return [text, run, setText];
}
