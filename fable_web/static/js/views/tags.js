// Tags: the hierarchy their slashes make ("work/acme" under "work"), a tree of disclosure
// buttons with each tag's count (tag_tree: notes tagged with it or a tag under it).
import { api } from "../api.js";
import { h } from "../dom.js";

function leaf(tag) { return tag.slice(tag.lastIndexOf("/") + 1); }

function branch(nodes, depth) {
  return h("ul.tag-tree", {}, nodes.map((node) => {
    const children = node.children || [];
    const link = h("a.tag-tree-link", { href: `/notes?tag=${encodeURIComponent(node.tag)}&kind=all`,
      title: `#${node.tag}` }, `#${depth === 0 ? node.tag : leaf(node.tag)}`);
    const count = h("span.count", { "aria-label": `${node.count} notes` }, String(node.count));
    if (!children.length) return h("li.tag-tree-item", {}, h("span.tag-tree-toggle-space"), link, count);
    const open = depth === 0 && children.length <= 12;
    const sub = branch(children, depth + 1);
    sub.classList.toggle("hidden", !open);
    const toggle = h("button.tag-tree-toggle", {
      type: "button", "aria-expanded": String(open), "aria-label": `Show tags under #${node.tag}`,
      on: { click: () => {
        const expanded = toggle.getAttribute("aria-expanded") !== "true";
        toggle.setAttribute("aria-expanded", String(expanded));
        sub.classList.toggle("hidden", !expanded);
      } },
    }, h("span.tag-tree-chevron", { "aria-hidden": "true" }, "›"));
    return h("li.tag-tree-item", {}, toggle, link, count, sub);
  }));
}

export async function tagsView(main) {
  const tree = await api.get("/tags/tree");
  const expandAll = h("button.btn.btn-sm", { type: "button", on: { click: () => setAll(true) } }, "Expand all");
  const collapseAll = h("button.btn.btn-sm", { type: "button", on: { click: () => setAll(false) } }, "Collapse all");
  const body = tree.items.length ? branch(tree.items, 0) : h("p.empty", {}, "No tags yet. Add some to a note.");
  function setAll(expanded) {
    for (const toggle of body.querySelectorAll(".tag-tree-toggle")) {
      toggle.setAttribute("aria-expanded", String(expanded));
      toggle.parentElement.querySelector(":scope > .tag-tree").classList.toggle("hidden", !expanded);
    }
  }
  main.append(
    h("div.page-head", {},
      h("div", {}, h("h1", {}, "Tags"), h("p.muted", {}, "Every tag, with the tags under it and how many notes carry them.")),
      h("div.row", {}, expandAll, collapseAll, h("a.btn", { href: "/graph" }, "Graph"))),
    h("div.card.tags-card", {}, body));
  if (tree.truncated) main.append(h("p.muted.small", {}, "Only the first 2,000 tags are shown, A-Z."));
}
