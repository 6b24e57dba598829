// Settings → Data: download everything you own, as a Markdown ZIP or one JSON document.
// Plain links: the browser streams the download to disk (GET /api/export, the session cookie).
import { h } from "../dom.js";

export function render(panel) {
  const link = (format, label) =>
    h(`a.btn#export-${format}`, { href: `/api/export?format=${format}`, download: "" }, label);
  panel.append(h("section.card#export-card", {}, h("h2", {}, "Export your data"),
    h("p.muted", {}, "Everything you own, never what others share with you. Markdown: a file per note ",
      "with its fields as front matter, a folder per project. JSON: every kind of record, as documented ",
      "in docs/export.md."),
    h("div.row", {}, link("markdown", "Download Markdown (ZIP)"), link("json", "Download JSON"))));
}
