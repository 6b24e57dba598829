// Settings: a tab list (settings/tabs.js) whose active tab is in the URL (/settings/<tab>), so a
// reload or Back shows the same tab. Keyboard: arrow keys, Home and End move between tabs (and
// open them), as the WAI-ARIA tabs pattern says; each tab's content is its own module.
import { clear, h } from "../dom.js";
import { session } from "../session.js";
import { TABS } from "../settings/tabs.js";

export async function settingsView(main, params) {
  const user = session.user;
  const tabs = TABS.filter((t) => !t.admin || user.role === "admin");
  const panel = h("div.tab-panel#settings-panel", { role: "tabpanel", tabIndex: 0 });
  const buttons = tabs.map((t) => h("button.tab", {
    type: "button", role: "tab", id: `tab-${t.id}`, "aria-controls": "settings-panel", dataset: { tab: t.id },
    on: { click: () => open(t, { push: true }) },
  }, t.label));
  const list = h("div.tabs", { role: "tablist", "aria-label": "Settings", on: { keydown: move } }, buttons);
  let shown = 0;

  async function open(tab, { push = false, focus = false } = {}) {
    const path = tab === tabs[0] ? "/settings" : `/settings/${tab.id}`;
    if (push && location.pathname !== path) history.pushState(null, "", path);
    for (const button of buttons) {
      const selected = button.dataset.tab === tab.id;
      button.setAttribute("aria-selected", String(selected));
      button.tabIndex = selected ? 0 : -1;
      if (selected && focus) button.focus();
      if (selected) button.scrollIntoView({ block: "nearest", inline: "nearest" });  // a phone's narrow tab list
    }
    panel.setAttribute("aria-labelledby", `tab-${tab.id}`);
    document.title = `${tab.label} · Settings · Fable`;
    const mine = ++shown;
    const module = await tab.load();
    if (mine !== shown) return;  // another tab was opened meanwhile
    clear(panel);
    await module.render(panel, user);
  }

  function move(event) {
    const at = buttons.indexOf(document.activeElement);
    if (at < 0) return;
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: buttons.length - 1 }[event.key];
    if (to === undefined) return;
    event.preventDefault();
    open(tabs[(to + tabs.length) % tabs.length], { push: true, focus: true });
  }

  const asked = tabs.find((t) => t.id === params.tab);
  if (params.tab && !asked) history.replaceState(null, "", "/settings");  // unknown, or not yours
  main.append(h("div.page-head", {}, h("div", {}, h("h1", {}, "Settings"),
    h("p.muted", {}, "Your account, preferences and the keys your agents use."))), list, panel);
  await open(asked || tabs[0]);
}
