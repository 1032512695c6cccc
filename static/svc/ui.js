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
PHONE.addEventListener("change", (event) => {
  narrow.value = event.matches;
});

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

// When a failed background service (a tunnel, a channel) tries again (docs/runtime.md): its row's
// `retry_in_s` is 0 while it tries and the seconds left while it waits, counted down here from
// when the row arrived (a new row, a new count).
export function RetryIn({ row }) {
  if (row.status !== "error" || row.retry_in_s == null) return null;
  return html`<${Countdown} row=${row} />`;
}

function Countdown({ row }) {
  const due = useMemo(() => Date.now() + row.retry_in_s * 1000, [row]);
  const left = Math.ceil((due - useTick(1000)) / 1000);
  return html`<span class="retry-in">${left > 0 ? ` · trying again in ${left} s` : " · trying again now…"}</span>`;
}

// A button that copies `text` and says so for a moment.
export function CopyButton({ text, label = "Copy", name }) {
  const [said, setSaid] = useState("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setSaid("Copied");
    } catch {
      setSaid("Copy failed");
    }
    setTimeout(() => setSaid(""), 1500);
  };
  return html`<button type="button" class="small" aria-label=${name} onClick=${copy}>${said || label}</button>`;
}

// An <option> whose value is an attribute too, so a selector finds it: Preact leaves the attribute
// out when the value equals the text (the property already reads so).
export function Option({ value, children, ...rest }) {
  const keep = useCallback(
    (node) => {
      if (node) node.setAttribute("value", value);
    },
    [value],
  );
  return html`<option value=${value} ref=${keep} ...${rest}>${children}</option>`;
}

// How long an action may take before it says that it is working: a quicker answer shows only its
// result, without a flash of "working…" (docs/dashboard.md "Busy and done").
export const SLOW_MS = 300;

// A form's status line (what a submit did, or why it failed). While `busy`, it is marked so and,
// once SLOW_MS have passed, shows a spinner (a CSS delay: nothing flashes for a quick answer).
export function Status({ id, text, busy, class: cls }) {
  return html`<span id=${id} class=${cls || "form-status"} role="status" aria-busy=${busy ? "true" : undefined}>${text}</span>`;
}

// The submit button of a form whose action is under way: it says so (aria-disabled, styled as
// busy) and ignores clicks and Enter (a second submit of the same form), keeping the focus where
// it was, which `disabled` would not. Any other button of a form can take `busy` the same way.
export function Submit({ busy, class: cls = "primary", children, ...rest }) {
  const hold = (event) => {
    if (busy) event.preventDefault();
  };
  return html`<button type="submit" class=${cls} aria-disabled=${busy ? "true" : undefined} data-busy=${busy ? "" : undefined} onClick=${hold} ...${rest}>${children}</button>`;
}

// An action's status held by the component: [text, run(action, busyText), setText, busy].
// `run` marks the component busy at once (for Submit and Status), says `busyText` once the
// action has taken SLOW_MS, then what it answered (a string) or why it failed. The action gets
// `say(text)` for a step worth telling on the way ("saved; checking that it starts…"). Several
// actions may run at once (a table's rows share one status): busy until the last has answered.
export function useStatus() {
  const [state, setState] = useState({ text: "", busy: 0 });
  const run = useCallback(async (action, busyText = "working…") => {
    let timer = setTimeout(() => setState((s) => ({ ...s, text: busyText })), SLOW_MS);
    const say = (text) => {
      clearTimeout(timer);
      timer = null;
      setState((s) => ({ ...s, text }));
    };
    setState((s) => ({ ...s, busy: s.busy + 1 }));
    let text = "";
    try {
      const said = await action(say);
      text = typeof said === "string" ? said : "";
    } catch (error) {
      text = error.message;
    }
    clearTimeout(timer);
    setState((s) => ({ text, busy: s.busy - 1 }));
  }, []);
  const setText = useCallback((text) => setState((s) => ({ ...s, text })), []);
  return [state.text, run, setText, state.busy > 0];
}
