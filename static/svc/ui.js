// The dashboard's component library: Preact with htm templates (no build step; the import map in
// dashboard.html resolves "preact", "preact/hooks" and "htm" to /static/vendor). Views written as
// components import from here; `svc` (dashboard.js) stays the one API and socket helper.
import { h, render } from "preact";
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import htm from "htm";

export const html = htm.bind(h);
export { render, useCallback, useEffect, useMemo, useRef, useState };
export const svc = window.svc;

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
