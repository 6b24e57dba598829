// Graph: notes, their tags and projects as a force-directed graph on a canvas (the vendored
// force-graph, loaded on this page only), from note_graph (GET /api/graph: at most 5,000 notes,
// the newest first). Filter by tag or project, hide tags or projects; a click on a node (or a
// node found by name in "Find in graph", the keyboard's and screen readers' way in) opens its
// peek panel: title, tags, first lines, links, "Open". The layout's forces can be tuned or frozen.
//
// Drawing 5,000 notes without long frames: nodes are drawn in one path per colour (not one fill
// each; a node under 3 px a square, whose path is far cheaper than a circle's), links in paths of
// 400, both skipped outside the view; labels filled, not stroked; links take no part in hit-testing
// and nodes are squares there (force-graph repaints its hit canvas every 800 ms while anything
// moves, one fill or stroke per object: 15,000 links and 5,000 circles);
// labels are drawn for the hovered and peeked nodes and their neighbours, the largest nodes, and
// everything in view once zoomed in, a label meeting one already drawn left out (widgets/labels.js),
// their widths measured once; the layout stops when it has settled and nothing redraws until the
// pointer or the view moves.
import { api } from "../api.js";
import { clear, h, trustedHtml } from "../dom.js";
import { navigate } from "../router.js";
import { placeLabels } from "../widgets/labels.js";

const LIMITS = [500, 2000, 5000];
const FONT_PX = 11;
const MAX_LABELS = 150;  // drawn in one frame at most
const TOP_LABELS = 30;  // the largest nodes, labelled at any zoom
const LABEL_ZOOM = 2.5;  // from this zoom, every node in view is a label candidate
const SCAN = 3000;  // nodes looked at for labels in one frame (the largest first)
const FORCES = { distance: 30, repulsion: 30, centre: 100 };  // force-graph's defaults (centre: %)

function colours() {
  const css = getComputedStyle(document.documentElement);
  const v = (name) => css.getPropertyValue(name).trim();
  return { note: v("--accent"), task: v("--ok"), tag: v("--warn"), project: v("--danger"), other: v("--muted"),
    link: v("--border"), text: v("--text"), surface: v("--surface") };
}

function target(node) {
  if (node.kind === "tag") return `/notes?tag=${encodeURIComponent(node.id.slice(2))}&kind=all`;
  if (node.kind === "project") return `/projects/${node.id.slice(1)}`;
  return `/notes/${node.id.slice(1)}`;
}

const KIND_NAMES = { note: "Note", task: "Task", tag: "Tag", project: "Project" };

function visible(nodes, links, showTags, showProjects) {
  const shown = (n) => !((!showTags && n.kind === "tag") || (!showProjects && n.kind === "project"));
  const ids = new Set(nodes.filter(shown).map((n) => n.id));
  return {
    nodes: nodes.filter((n) => ids.has(n.id)),
    links: links.filter(([s, t]) => ids.has(s) && ids.has(t)).map(([source, target]) => ({ source, target })),
  };
}

/** A range input with its label and its value shown beside it. */
function slider(id, label, value, max, onInput) {
  const out = h("output.small.muted", { for: id }, String(value));
  const input = h(`input#${id}`, { type: "range", min: "0", max: String(max), value: String(value),
    on: { input: () => { out.textContent = input.value; onInput(Number(input.value)); } } });
  return h("label.graph-slider", {}, h("span", {}, label), input, out);
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
  const canvasHost = h("div.graph-canvas#graph-canvas", { role: "img", tabindex: "0",
    "aria-label": "Graph of notes, tags and projects; find a node by name above to open it" });
  const peek = h("aside.graph-peek.hidden#graph-peek", { "aria-label": "Node details", tabindex: "-1" });
  const finder = h("input#graph-find", { type: "search", placeholder: "Find in graph", autocomplete: "off",
    "aria-label": "Find a node in the graph", "aria-controls": "graph-matches" });
  const matches = h("ul.graph-matches#graph-matches", { "aria-label": "Nodes found" });
  const physics = h("details.graph-physics#graph-physics", {}, h("summary", {}, "Layout"));
  main.append(
    h("div.page-head", {},
      h("div", {}, h("h1", {}, "Graph"), h("p.muted", {}, "Notes, the notes they link to, their tags and projects.")),
      h("div.row", {}, h("a.btn", { href: "/tags" }, "Tags"), h("a.btn", { href: "/notes" }, "List"))),
    form, h("div.row.graph-tools", {}, h("div.graph-finder", { role: "search" }, finder, matches), physics),
    h("div.row.graph-legend", { "aria-hidden": "true" },
      [["note", "Note"], ["task", "Task"], ["tag", "Tag"], ["project", "Project"]].map(([kind, name]) =>
        h(`span.graph-key.graph-key-${kind}`, {}, name))),
    summary, h("div.graph-stage", {}, canvasHost, peek));
  if (!data.nodes.length) { clear(canvasHost, h("p.empty", {}, "Nothing to draw yet.")); return; }

  performance.mark("graph-data");
  await import("/vendor/force-graph/force-graph.min.js");
  performance.mark("graph-library");
  const colour = colours();
  const nodes = data.nodes.map((n) => ({ ...n }));
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const neighbours = new Map(nodes.map((n) => [n.id, []]));
  for (const [s, t] of data.links) {
    if (!byId.has(s) || !byId.has(t)) continue;
    neighbours.get(s).push(byId.get(t));
    neighbours.get(t).push(byId.get(s));
  }
  for (const n of nodes) {  // computed once: force-graph asks for them for every node in every frame
    n.val = 1 + Math.min(20, neighbours.get(n.id).length) / 2;
    n.radius = Math.sqrt(n.val) * 3;
    n.color = colour[n.kind] || colour.other;
    n.text = n.label.length > 40 ? `${n.label.slice(0, 39)}…` : n.label;
  }
  const largest = [...nodes].sort((a, b) => neighbours.get(b.id).length - neighbours.get(a.id).length);
  const everyLabel = nodes.length <= 150;
  const small = nodes.length <= 1000;
  let hovered = null;
  let peeked = null;
  const shown = new Set();  // the nodes in the graph now (tags or projects may be hidden)

  // ---- drawing: nodes batched by colour, then labels ----
  const kinds = [...new Set(nodes.map((n) => n.color))];
  const boxes = [];  // reused every frame
  const pool = [];
  const placed = [];
  const seen = new Set();
  canvasHost.labels = placed;  // for the tests: the label boxes of the last frame
  function view(ctx) {
    const t = ctx.getTransform();
    return [-t.e / t.a, -t.f / t.d, (ctx.canvas.width - t.e) / t.a, (ctx.canvas.height - t.f) / t.d];
  }
  function drawLinks(ctx, scale, [x0, y0, x1, y1]) {
    ctx.strokeStyle = colour.link;
    ctx.lineWidth = 1 / scale;
    let segments = 0;
    ctx.beginPath();
    for (const { source: a, target: b } of graph.graphData().links) {
      if ((a.x < x0 && b.x < x0) || (a.x > x1 && b.x > x1) || (a.y < y0 && b.y < y0) || (a.y > y1 && b.y > y1)) continue;
      ctx.moveTo(a.x, a.y);
      ctx.lineTo(b.x, b.y);
      if (++segments % 400 === 0) { ctx.stroke(); ctx.beginPath(); }  // short paths: a rasteriser's cost grows faster
    }
    ctx.stroke();
  }
  function drawNodes(ctx, scale, [x0, y0, x1, y1]) {
    for (const fill of kinds) {
      ctx.beginPath();
      for (const n of largest) {
        if (n.color !== fill || !shown.has(n) || n.x < x0 - n.radius || n.x > x1 + n.radius
          || n.y < y0 - n.radius || n.y > y1 + n.radius) continue;
        if (n.radius * scale < 3) { ctx.rect(n.x - n.radius, n.y - n.radius, 2 * n.radius, 2 * n.radius); continue; }
        ctx.moveTo(n.x + n.radius, n.y);
        ctx.arc(n.x, n.y, n.radius, 0, 2 * Math.PI);
      }
      ctx.fillStyle = fill;
      ctx.fill();
    }
    for (const n of [peeked, hovered]) {
      if (!n || !shown.has(n)) continue;
      ctx.beginPath();
      ctx.arc(n.x, n.y, n.radius + 2 / scale, 0, 2 * Math.PI);
      ctx.lineWidth = 2 / scale;
      ctx.strokeStyle = colour.text;
      ctx.stroke();
    }
  }
  function candidate(ctx, n, scale, [x0, y0, x1, y1]) {
    if (!n || seen.has(n) || !shown.has(n) || n.x < x0 || n.x > x1 || n.y < y0 || n.y > y1) return;
    seen.add(n);
    if (n.width === undefined) n.width = ctx.measureText(n.text).width;  // at FONT_PX, once a node
    const box = pool[boxes.length] || (pool[boxes.length] = {});
    box.node = n;
    box.x = n.x + n.radius + 2 / scale;
    box.y = n.y - (FONT_PX * 0.7) / scale;
    box.w = n.width / scale;
    box.h = (FONT_PX * 1.4) / scale;
    boxes.push(box);
  }
  function drawLabels(ctx, scale, bounds) {
    boxes.length = 0;
    seen.clear();
    ctx.font = `${FONT_PX}px system-ui, sans-serif`;  // measured at this size, drawn scaled
    for (const n of [hovered, peeked]) {
      candidate(ctx, n, scale, bounds);
      if (n) for (const m of neighbours.get(n.id)) candidate(ctx, m, scale, bounds);
    }
    const all = everyLabel || scale >= LABEL_ZOOM;
    const scan = Math.min(largest.length, all ? SCAN : TOP_LABELS);
    for (let i = 0; i < scan; i++) candidate(ctx, largest[i], scale, bounds);
    placeLabels(boxes, MAX_LABELS, placed);
    ctx.font = `${FONT_PX / scale}px system-ui, sans-serif`;
    ctx.textBaseline = "middle";
    ctx.fillStyle = colour.text;  // no halo: stroking text costs more than all the nodes
    for (const box of placed) ctx.fillText(box.node.text, box.x, box.y + box.h / 2);
  }
  function drawFrame(ctx, scale) {
    const bounds = view(ctx);
    drawLinks(ctx, scale, bounds);
    drawNodes(ctx, scale, bounds);
    drawLabels(ctx, scale, bounds);
  }
  const noop = () => {};
  let cooldownTicks = small ? 60 : 100;
  const graph = globalThis.ForceGraph()(canvasHost)
    .width(canvasHost.clientWidth).height(canvasHost.clientHeight)
    .backgroundColor("rgba(0,0,0,0)")
    .nodeId("id")
    .nodeVal("val")
    .nodeRelSize(3)
    .nodeColor("color")
    .nodeLabel((n) => h("span", {}, n.label))
    .nodeCanvasObjectMode(() => "replace")  // drawn in one pass per colour, after the links
    .nodeCanvasObject(noop)
    .linkCanvasObjectMode(() => "replace")  // drawn in batches, those out of view skipped
    .linkCanvasObject(noop)
    .linkPointerAreaPaint(noop)  // links are never hovered: the hit canvas holds the nodes only
    .nodePointerAreaPaint((n, hit, ctx) => {  // a square, not a circle: 5,000 fills of a colour each
      ctx.fillStyle = hit;
      ctx.fillRect(n.x - n.radius, n.y - n.radius, 2 * n.radius, 2 * n.radius);
    })
    .onRenderFramePost(drawFrame)
    // small graphs are laid out before the first frame; large ones settle in fewer, quicker ticks
    .warmupTicks(small ? 150 : 0)
    .cooldownTicks(cooldownTicks)
    .cooldownTime(small ? 15000 : 4000)  // a slow machine stops a large layout sooner, a little less settled
    .d3AlphaDecay(small ? 0.04 : 0.07)
    .onNodeHover((n) => { hovered = n || null; redraw(); })
    .onNodeClick((n) => openPeek(n, canvasHost))
    .onBackgroundClick(() => closePeek(false))
    .onNodeDragEnd((n) => { if (frozen.checked) { n.fx = n.x; n.fy = n.y; } })
    .onEngineStop(() => { canvasHost.dataset.settled = "true"; rest(); });
  // force-graph redraws only while something moves: a hover or a peek asks for one more frame
  function redraw() {
    wake();
    graph.zoom(graph.zoom());
    requestAnimationFrame(() => requestAnimationFrame(rest));  // after the frame that draws it
  }
  // Settled and the pointer elsewhere, its frame loop stops too (it hit-tests the pointer and
  // looks at every link in every frame, drawing or not); the pointer, a key or a change wakes it.
  let pointerIn = false;
  let resting = false;
  function rest() {
    if (resting || pointerIn || !canvasHost.dataset.settled) return;
    resting = true;
    graph.pauseAnimation();
  }
  function wake() {
    if (!resting) return;
    resting = false;
    graph.resumeAnimation();
  }
  canvasHost.addEventListener("pointerenter", () => { pointerIn = true; wake(); });
  canvasHost.addEventListener("pointerleave", () => { pointerIn = false; rest(); });
  function show() {
    const part = visible(nodes, data.links, showTags.checked, showProjects.checked);
    shown.clear();
    for (const n of part.nodes) shown.add(n);
    delete canvasHost.dataset.settled;
    wake();
    graph.graphData(part);
  }
  show();
  canvasHost.dataset.nodes = String(data.nodes.length);
  performance.mark("graph-drawn");  // for bench/ui_browse.py and bench/ui.py
  canvasHost.graph = graph;  // for the browser tests: screen positions of nodes
  showTags.addEventListener("change", show);
  showProjects.addEventListener("change", show);

  // ---- physics: the forces' strengths, and "freeze layout" ----
  const frozen = h("input#graph-freeze", { type: "checkbox" });
  function reheat() {
    if (frozen.checked) return;
    delete canvasHost.dataset.settled;
    wake();
    graph.d3ReheatSimulation();
  }
  physics.append(h("div.graph-physics-body", {},
    slider("graph-link-distance", "Link distance", FORCES.distance, 200, (v) => { graph.d3Force("link").distance(v); reheat(); }),
    slider("graph-repulsion", "Repulsion", FORCES.repulsion, 300, (v) => { graph.d3Force("charge").strength(-v); reheat(); }),
    slider("graph-centre", "Centre force", FORCES.centre, 100, (v) => { graph.d3Force("center").strength(v / 100); reheat(); }),
    h("label.graph-check", {}, frozen, " Freeze layout")));
  frozen.addEventListener("change", () => {
    for (const n of nodes) {
      if (frozen.checked) { n.fx = n.x; n.fy = n.y; } else { delete n.fx; delete n.fy; }
    }
    canvasHost.dataset.frozen = String(frozen.checked);
    graph.cooldownTicks(frozen.checked ? 0 : cooldownTicks);
    if (frozen.checked) { canvasHost.dataset.settled = "true"; redraw(); } else reheat();
  });

  // ---- find a node by name: the keyboard's and screen readers' way in ----
  function found() {
    const words = finder.value.trim().toLowerCase();
    if (!words) { clear(matches); return []; }
    const hits = [];
    for (const n of largest) {
      if (shown.has(n) && n.label.toLowerCase().includes(words)) hits.push(n);
      if (hits.length === 10) break;
    }
    clear(matches, hits.length ? hits.map((n) => h("li", {}, h("button.btn.btn-ghost.btn-sm", {
      type: "button", on: { click: (e) => openPeek(n, finder) } },
    n.label, h("span.muted.small", {}, ` ${KIND_NAMES[n.kind] || n.kind}`)))) : h("li.muted.small", {}, "No node by that name."));
    return hits;
  }
  finder.addEventListener("input", found);
  finder.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); const [first] = found(); if (first) openPeek(first, finder); }
    if (e.key === "ArrowDown") { e.preventDefault(); matches.querySelector("button")?.focus(); }
  });

  // ---- the peek panel ----
  let returnTo = canvasHost;
  let asked = 0;
  async function openPeek(node, from = canvasHost) {
    returnTo = from;
    peeked = node;
    const mine = ++asked;
    const links = neighbours.get(node.id).filter((m) => shown.has(m));
    const excerpt = h("div.graph-peek-excerpt.markdown");
    const tags = h("div.row.graph-peek-tags");
    const close = h("button.btn.btn-ghost.btn-sm.graph-peek-close", { type: "button", "aria-label": "Close",
      on: { click: () => closePeek(true) } }, "×");
    const title = h("h2#graph-peek-title", { tabindex: "-1" }, node.label);
    clear(peek,
      h("div.graph-peek-head", {}, h("span.muted.small", {}, KIND_NAMES[node.kind] || node.kind), close),
      title, tags, excerpt,
      links.length ? h("h3.small", {}, `Links (${links.length})`) : null,
      links.length ? h("ul.graph-peek-links", {}, links.slice(0, 50).map((m) => h("li", {},
        h("button.btn.btn-ghost.btn-sm", { type: "button", on: { click: (e) => openPeek(m, returnTo) } },
          m.label, h("span.muted.small", {}, ` ${KIND_NAMES[m.kind] || m.kind}`))))) : null,
      h("div.row", {}, h("a.btn.btn-primary.btn-sm#graph-peek-open", { href: target(node) }, "Open")));
    peek.classList.remove("hidden");
    peek.setAttribute("aria-labelledby", "graph-peek-title");
    title.focus({ preventScroll: true });
    redraw();
    if (node.kind !== "note" && node.kind !== "task") return;
    excerpt.textContent = "Loading…";
    try {
      const id = node.id.slice(1);
      const [note, rendered] = await Promise.all([api.get(`/notes/${id}`), api.get(`/notes/${id}/html`)]);
      if (mine !== asked) return;
      clear(tags, (note.tags || []).map((t) => h("a.chip", { href: `/notes?tag=${encodeURIComponent(t)}` }, `#${t}`)));
      trustedHtml(excerpt, rendered.html);  // sanitised by the server (nh3); shown clipped to its first lines
    } catch (error) {
      if (mine === asked) excerpt.textContent = error?.message || String(error);
    }
  }
  function closePeek(focusBack) {
    if (peek.classList.contains("hidden")) return;
    peek.classList.add("hidden");
    clear(peek);
    peeked = null;
    asked += 1;
    redraw();
    if (focusBack) (returnTo?.isConnected ? returnTo : canvasHost).focus({ preventScroll: true });
  }
  peek.addEventListener("keydown", (e) => { if (e.key === "Escape") { e.stopPropagation(); closePeek(true); } });
  canvasHost.addEventListener("keydown", (e) => { if (e.key === "Escape") closePeek(true); });

  const resize = () => { wake(); graph.width(canvasHost.clientWidth).height(canvasHost.clientHeight); rest(); };
  window.addEventListener("resize", resize);
  const watch = setInterval(() => {  // leaving the page: stop the simulation and the render loop
    if (canvasHost.isConnected) return;
    clearInterval(watch);
    window.removeEventListener("resize", resize);
    graph._destructor();
  }, 1000);
}
