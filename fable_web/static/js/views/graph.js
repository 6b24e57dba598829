// Graph: notes, their tags and projects as a force-directed graph on a canvas (the vendored
// force-graph, loaded on this page only), from note_graph (GET /api/graph: at most 5,000 notes,
// the newest first). Filter by tag or project, hide tags or projects; click a node to open it.
import { api } from "../api.js";
import { clear, h } from "../dom.js";
import { navigate } from "../router.js";

const LIMITS = [500, 2000, 5000];

function colours() {
  const css = getComputedStyle(document.documentElement);
  const v = (name) => css.getPropertyValue(name).trim();
  return { note: v("--accent"), task: v("--ok"), tag: v("--warn"), project: v("--danger"), other: v("--muted"),
    link: v("--border"), text: v("--text") };
}

function target(node) {
  if (node.kind === "tag") return `/notes?tag=${encodeURIComponent(node.id.slice(2))}&kind=all`;
  if (node.kind === "project") return `/projects/${node.id.slice(1)}`;
  return `/notes/${node.id.slice(1)}`;
}

function visible(data, showTags, showProjects) {
  const hidden = new Set(data.nodes.filter((n) => (!showTags && n.kind === "tag") || (!showProjects && n.kind === "project"))
    .map((n) => n.id));
  return {
    nodes: data.nodes.filter((n) => !hidden.has(n.id)).map((n) => ({ ...n })),
    links: data.links.filter(([s, t]) => !hidden.has(s) && !hidden.has(t)).map(([source, target]) => ({ source, target })),
  };
}

export async function graphView(main, _params, query) {
  const tag = query.get("tag") || "";
  const projectId = query.get("project_id") || "";
  const limit = LIMITS.includes(Number(query.get("limit"))) ? Number(query.get("limit")) : 2000;
  const [data, projects] = await Promise.all([
    api.get("/graph", { tag: tag || undefined, project_id: projectId || undefined, limit }),
    api.get("/projects", { limit: 100 }).catch(() => ({ items: [] })),
  ]);
  const tagInput = h("input#graph-tag", { type: "text", value: tag, placeholder: "a tag, e.g. work", "aria-label": "Only notes with this tag" });
  const projectSelect = h("select#graph-project", { "aria-label": "Only notes of this project" },
    h("option", { value: "" }, "All projects"),
    projects.items.map((p) => h("option", { value: String(p.id), selected: String(p.id) === projectId }, p.title)));
  const limitSelect = h("select#graph-limit", { "aria-label": "At most" },
    LIMITS.map((n) => h("option", { value: String(n), selected: n === limit }, `${n.toLocaleString("en")} notes`)));
  const showTags = h("input#graph-show-tags", { type: "checkbox", checked: true });
  const showProjects = h("input#graph-show-projects", { type: "checkbox", checked: true });
  const form = h("form.row.graph-filters", { on: { submit: (e) => { e.preventDefault(); apply(); } } },
    tagInput, projectSelect, limitSelect, h("button.btn.btn-sm", { type: "submit" }, "Filter"),
    h("label.graph-check", {}, showTags, " Tags"), h("label.graph-check", {}, showProjects, " Projects"));
  function apply() {
    const p = new URLSearchParams();
    if (tagInput.value.trim()) p.set("tag", tagInput.value.trim().replace(/^#/, ""));
    if (projectSelect.value) p.set("project_id", projectSelect.value);
    if (limitSelect.value !== "2000") p.set("limit", limitSelect.value);
    navigate(p.toString() ? `/graph?${p}` : "/graph");
  }
  projectSelect.addEventListener("change", apply);
  limitSelect.addEventListener("change", apply);

  const notes = data.nodes.filter((n) => n.kind !== "tag" && n.kind !== "project").length;
  const summary = h("p.muted.small#graph-summary", {},
    `${notes.toLocaleString("en")} notes, ${data.nodes.length - notes} tags and projects, ${data.links.length.toLocaleString("en")} links`,
    data.truncated ? ` (the ${limit.toLocaleString("en")} most recently changed)` : "", ".");
  const canvasHost = h("div.graph-canvas#graph-canvas", { role: "img",
    "aria-label": "Graph of notes, tags and projects; the notes are also on the Notes page" });
  main.append(
    h("div.page-head", {},
      h("div", {}, h("h1", {}, "Graph"), h("p.muted", {}, "Notes, the notes they link to, their tags and projects.")),
      h("div.row", {}, h("a.btn", { href: "/tags" }, "Tags"), h("a.btn", { href: "/notes" }, "List"))),
    form, h("div.row.graph-legend", { "aria-hidden": "true" },
      [["note", "Note"], ["task", "Task"], ["tag", "Tag"], ["project", "Project"]].map(([kind, name]) =>
        h(`span.graph-key.graph-key-${kind}`, {}, name))),
    summary, canvasHost);
  if (!data.nodes.length) { clear(canvasHost, h("p.empty", {}, "Nothing to draw yet.")); return; }

  performance.mark("graph-data");
  await import("/vendor/force-graph/force-graph.min.js");
  performance.mark("graph-library");
  const colour = colours();
  const degree = new Map();
  for (const [s, t] of data.links) { degree.set(s, (degree.get(s) || 0) + 1); degree.set(t, (degree.get(t) || 0) + 1); }
  // titles beside the nodes when there are few, or once zoomed in enough to read them
  const labelScale = data.nodes.length <= 150 ? 0 : 2.5;
  const small = data.nodes.length <= 1000;
  function label(node, ctx, scale) {
    if (scale < labelScale) return;
    const text = node.label.length > 40 ? `${node.label.slice(0, 39)}…` : node.label;
    ctx.font = `${11 / scale}px system-ui, sans-serif`;
    ctx.fillStyle = colour.text;
    ctx.textBaseline = "middle";
    ctx.fillText(text, node.x + 6 / Math.sqrt(scale) + 2 / scale, node.y);
  }
  const graph = globalThis.ForceGraph()(canvasHost)
    .width(canvasHost.clientWidth).height(canvasHost.clientHeight)
    .backgroundColor("rgba(0,0,0,0)")
    .nodeId("id")
    .nodeVal((n) => 1 + Math.min(20, degree.get(n.id) || 0) / 2)
    .nodeRelSize(3)
    .nodeColor((n) => colour[n.kind] || colour.other)
    .nodeLabel((n) => h("span", {}, n.label))
    .nodeCanvasObjectMode(() => "after")
    .nodeCanvasObject((node, ctx, scale) => label(node, ctx, scale))
    .linkColor(() => colour.link)
    // small graphs are laid out before the first frame; large ones settle in fewer, quicker ticks
    .warmupTicks(small ? 150 : 0)
    .cooldownTicks(small ? 60 : 100)
    .cooldownTime(small ? 15000 : 4000)  // a slow machine stops a large layout sooner, a little less settled
    .d3AlphaDecay(small ? 0.04 : 0.07)
    .onNodeClick((n) => navigate(target(n)))
    .onEngineStop(() => { canvasHost.dataset.settled = "true"; });
  graph.graphData(visible(data, true, true));
  canvasHost.dataset.nodes = String(data.nodes.length);
  performance.mark("graph-drawn");  // for bench/ui_browse.py
  canvasHost.graph = graph;  // for the browser tests: screen positions of nodes
  const redraw = () => {
    delete canvasHost.dataset.settled;
    graph.graphData(visible(data, showTags.checked, showProjects.checked));
  };
  showTags.addEventListener("change", redraw);
  showProjects.addEventListener("change", redraw);
  const resize = () => graph.width(canvasHost.clientWidth).height(canvasHost.clientHeight);
  window.addEventListener("resize", resize);
  const watch = setInterval(() => {  // leaving the page: stop the simulation and the render loop
    if (canvasHost.isConnected) return;
    clearInterval(watch);
    window.removeEventListener("resize", resize);
    graph._destructor();
  }, 1000);
}
