// Tiny element builder. Every string child becomes a text node, so token text and
// server messages can never be parsed as HTML.

type AttrValue = string | number | boolean | null | undefined | EventListener;
export type Attrs = Record<string, AttrValue>;
export type Child = Node | string | number | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
      else if (k === "class") el.className = String(v);
      else if (v === true) el.setAttribute(k, "");
      else el.setAttribute(k, String(v));
    }
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
}

/** An SVG element with its attributes and, optionally, its text (a text node, as h does). */
export function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/** An element with class "error" holding one line of text (the tests look for .error). */
export function errorBox(message: string): HTMLElement {
  return h("div", { class: "error", role: "alert" }, message);
}

/** The line every page leads with when a file fails its integrity check ("MISMATCH"): the
 * same words as `show`, `export` and `report` print on stderr. null when it passes. */
export function integrityWarning(file: string | undefined, integrity: string | undefined): HTMLElement | null {
  if (integrity !== "MISMATCH") return null;
  return h("p", { class: "warn-line integrity-warning", role: "alert" }, `warning: '${file ?? "this file"}' fails its integrity check (changed after it was sealed): its numbers may not be the run's`);
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Saves a blob under a file name; the object URL is revoked once the click has been handled. */
export function downloadBlob(name: string, blob: Blob): void {
  const url = URL.createObjectURL(blob);
  downloadURL(name, url);
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function downloadURL(name: string, url: string): void {
  const a = h("a", { href: url, download: name, style: "display:none" });
  document.body.appendChild(a);
  a.click();
  a.remove();
}

/** Calls fn when the system switches between light and dark: canvases read the theme's colours
 *  when drawn, so they draw again. Returns the function that stops listening. */
export function onSchemeChange(fn: () => void): () => void {
  const q = window.matchMedia?.("(prefers-color-scheme: dark)");
  if (!q) return () => {};
  q.addEventListener("change", fn);
  return () => q.removeEventListener("change", fn);
}
