// A unified diff as diff.js shows it (contract §10): parsed into one section per file with its
// hunks and old/new line numbers, each line given highlight.js's markup for its language when
// highlight.js knows it. Plain functions, no drawing: diff.js draws what they return.
import { hljs } from "./markdown.js";

const LANGUAGES = {
  py: "python",
  pyi: "python",
  js: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  jsx: "javascript",
  ts: "typescript",
  tsx: "typescript",
  json: "json",
  css: "css",
  scss: "scss",
  less: "less",
  html: "xml",
  htm: "xml",
  xml: "xml",
  svg: "xml",
  vue: "xml",
  md: "markdown",
  markdown: "markdown",
  sh: "bash",
  bash: "bash",
  zsh: "bash",
  yml: "yaml",
  yaml: "yaml",
  toml: "ini",
  ini: "ini",
  cfg: "ini",
  go: "go",
  rs: "rust",
  rb: "ruby",
  java: "java",
  kt: "kotlin",
  kts: "kotlin",
  c: "c",
  h: "c",
  cc: "cpp",
  cpp: "cpp",
  cxx: "cpp",
  hpp: "cpp",
  cs: "csharp",
  php: "php",
  sql: "sql",
  swift: "swift",
  lua: "lua",
  pl: "perl",
  r: "r",
  graphql: "graphql",
  gql: "graphql",
  m: "objectivec",
  mk: "makefile",
};

export function languageOf(path) {
  const name = path.split("/").pop();
  const lang = name === "Makefile" || name === "GNUmakefile" ? "makefile" : LANGUAGES[name.includes(".") ? name.split(".").pop().toLowerCase() : ""];
  return lang && hljs.getLanguage(lang) ? lang : null;
}

// hljs's markup for a block, cut into lines; a span open across a line break is closed at the end
// of the line and opened again on the next, so each line stands alone in its own table cell.
function splitMarkup(markup) {
  const lines = [];
  const open = [];
  let line = "";
  for (const m of markup.matchAll(/(<span[^>]*>)|(<\/span>)|([^<]+)/g)) {
    if (m[1]) {
      open.push(m[1]);
      line += m[1];
    } else if (m[2]) {
      open.pop();
      line += m[2];
    } else {
      const parts = m[3].split("\n");
      line += parts[0];
      for (const part of parts.slice(1)) {
        lines.push(line + "</span>".repeat(open.length));
        line = open.join("") + part;
      }
    }
  }
  lines.push(line);
  return lines;
}

function highlighted(texts, lang) {
  if (!texts.length) return [];
  try {
    const lines = splitMarkup(hljs.highlight(texts.join("\n"), { language: lang, ignoreIllegals: true }).value);
    return lines.length === texts.length ? lines : null;
  } catch {
    return null;
  }
}

// The unified diff, one section per `diff --git`: they come in the order of the API's file list
// (one git diff made both), so section i belongs to files[i] whatever git did to quote its name.
export function parsePatch(patch) {
  const sections = [];
  let section = null;
  let hunk = null;
  let oldNo = 0;
  let newNo = 0;
  for (const text of patch.split("\n")) {
    if (text.startsWith("diff --git ")) {
      section = { header: [], hunks: [], binary: false };
      sections.push(section);
      hunk = null;
      continue;
    }
    if (!section) continue;
    const at = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/.exec(text);
    if (at) {
      oldNo = Number(at[1]);
      newNo = Number(at[2]);
      hunk = { head: text, context: at[3].trim(), lines: [] };
      section.hunks.push(hunk);
      continue;
    }
    if (!hunk) {
      if (text.startsWith("Binary files ")) section.binary = true;
      if (text) section.header.push(text);
      continue;
    }
    const mark = text[0];
    if (mark === "+") hunk.lines.push({ mark, text: text.slice(1), newNo: newNo++ });
    else if (mark === "-") hunk.lines.push({ mark, text: text.slice(1), oldNo: oldNo++ });
    else if (mark === " ") hunk.lines.push({ mark, text: text.slice(1), oldNo: oldNo++, newNo: newNo++ });
    else if (mark === "\\") hunk.lines.push({ mark, text: text.slice(2), note: true });
  }
  return sections;
}

// Each hunk highlighted as two blocks (the old side and the new side) so a multi-line string or
// comment keeps its colour; each line takes its markup from the side it is on.
export function withMarkup(hunks, lang) {
  if (!lang) return hunks;
  return hunks.map((hunk) => {
    const code = hunk.lines.filter((l) => !l.note);
    const oldSide = highlighted(
      code.filter((l) => l.mark !== "+").map((l) => l.text),
      lang,
    );
    const newSide = highlighted(
      code.filter((l) => l.mark !== "-").map((l) => l.text),
      lang,
    );
    if (!oldSide || !newSide) return hunk;
    let o = 0;
    let n = 0;
    return {
      ...hunk,
      lines: hunk.lines.map((l) => {
        if (l.note) return l;
        if (l.mark === "-") return { ...l, markup: oldSide[o++] };
        if (l.mark === "+") return { ...l, markup: newSide[n++] };
        o++;
        return { ...l, markup: newSide[n++] };
      }),
    };
  });
}
