// Agent messages are Markdown: rendered by marked, raw HTML in them shown as text, the result
// sanitised by DOMPurify, code blocks highlighted by highlight.js. The one place the dashboard
// sets HTML from data, and only DOMPurify's output (highlight.js's markup of text is the other).
import { marked } from "marked";
import DOMPurify from "dompurify";
import hljs from "highlight.js";
import { html, useLayoutEffect, useMemo, useRef, useState } from "./ui.js";

const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
marked.use({ gfm: true, breaks: true, renderer: { html: (token) => escapeHtml(token.text || token.raw || "") } });
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});
hljs.configure({ ignoreUnescapedHTML: true });

export { hljs };

export function markdown(text) {
  return DOMPurify.sanitize(marked.parse(text), { FORBID_TAGS: ["style", "form", "input", "button"] });
}

// A message that may still be streaming: drawn at most once an animation frame, then `painted()`.
export function Markdown({ text, class: cls, seq, hit, painted }) {
  const [shown, setShown] = useState(text);
  const pending = useRef(false);
  const box = useRef(null);
  const latest = useRef(text);
  latest.current = text;
  useLayoutEffect(() => {
    if (text === shown || pending.current) return;
    pending.current = true;
    requestAnimationFrame(() => {
      pending.current = false;
      setShown(latest.current);
    });
  });
  const markup = useMemo(() => ({ __html: markdown(shown) }), [shown]);
  useLayoutEffect(() => {
    for (const code of box.current.querySelectorAll("pre code")) hljs.highlightElement(code);
    if (painted) painted();
  }, [markup]);
  return html`<div class=${cls} ref=${box} data-seq=${seq} data-hit=${hit} dangerouslySetInnerHTML=${markup}></div>`;
}
