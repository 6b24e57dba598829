"""What notes written in Obsidian's markdown render as, and that hostile markdown renders safe."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import quote

from fable_core.db.hashtags import text_tags
from fable_core.knowledge.lookups import TitledBody
from fable_web.render import render_markdown


class _Collector(HTMLParser):
    """Every start tag with its attributes, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Collector()
    parser.feed(html)
    return parser.tags


def _ids(title: str) -> int | None:
    return {"alpha": 1, "beta": 2, "gamma": 3}.get(title.lower())


def test_task_checkboxes_carry_their_source_line() -> None:
    html = render_markdown("---\ntags: [x]\n---\nIntro\n\n- [ ] open\n- [x] done **well**\n- not a task\n")
    boxes = [attrs for tag, attrs in _tags(html) if tag == "input"]
    assert boxes == [{"type": "checkbox", "class": "task-box", "aria-label": "Done: open", "data-line": "5"},
                     {"type": "checkbox", "class": "task-box", "aria-label": "Done: done well", "checked": "",
                      "data-line": "6"}]
    # front matter is folded away as written, never read as the note's text (a heading, a rule)
    assert html.startswith('<details class="properties"><summary>Properties</summary><pre><code>tags: [x]</code>')
    assert "<hr" not in html and "<h2" not in html


def test_fenced_code_is_highlighted_with_classes_never_styles() -> None:
    html = render_markdown('```python\ndef f(x):\n    return "<b>"\n```\n\n```nosuchlang\n<i>plain</i>\n```\n')
    assert '<pre class="highlight"><code><span class="k">def</span>' in html
    assert "&lt;b&gt;" in html and "&lt;i&gt;plain&lt;/i&gt;" in html
    assert "style" not in html


def test_footnotes_highlight_autolinks_and_direction() -> None:
    html = render_markdown("Note[^1] with ==bright **bold**== text, see https://example.org/a.\n\n\u05e9\u05dc\u05d5\u05dd\n\n"
                           "[^1]: The footnote.\n")
    assert '<sup class="footnote-ref"><a href="#fn1" id="fnref1"' in html
    assert '<li id="fn1" class="footnote-item">' in html
    assert "<mark>bright <strong>bold</strong></mark>" in html
    assert '<a href="https://example.org/a"' in html
    assert '<p dir="auto">\u05e9\u05dc\u05d5\u05dd</p>' in html


def test_callouts_with_their_type_and_title() -> None:
    html = render_markdown("> [!tip] Try this\n> It *works*.\n\n> [!bogus]\n> body\n\n> plain\n")
    assert '<div class="callout callout-tip" dir="auto">\n<div class="callout-title">Try this</div>' in html
    assert "<em>works</em>" in html
    assert '<div class="callout callout-note" dir="auto">\n<div class="callout-title">Bogus</div>' in html
    assert '<blockquote dir="auto">' in html


def test_heading_links_open_the_note_at_the_heading() -> None:
    html = render_markdown("# My Plan\n\n[[Alpha#Next Steps|steps]] [[Beta#Intro]] [[#My Plan]]", _ids)
    assert '<h1 id="h-my-plan" dir="auto">My Plan</h1>' in html
    links = [attrs["href"] for tag, attrs in _tags(html) if tag == "a"]
    assert links == ["/notes/1#h-next-steps", "/notes/2#h-intro", "#h-my-plan"]
    assert ">steps</a>" in html and ">Beta &gt; Intro</a>" in html


def test_inline_tags_link_but_not_in_code_urls_or_numbers() -> None:
    html = render_markdown("Plan #Project/alpha and #2024, `#code`, https://x.example/#frag, a#b\n\n"
                           "```\n# not a tag #either\n```\n")
    tags = [attrs["href"] for tag, attrs in _tags(html) if tag == "a" and attrs.get("class") == "tag"]
    assert tags == ["/notes?tag=project/alpha"]


def test_every_tag_link_is_one_of_the_notes_tags() -> None:
    """The renderer links exactly the #tags the model makes the note's tags (fable_core.db.hashtags):
    no link leads to a tag page without the note."""
    body = ("Para #One and #2024/05, #12_34, #ends- and #" + "x" * 65 + "\n"
            "## Heading #Two\n\n- item #three\n    - nested #four\n\n"
            "plain\n\n    #indented-code\n\ntext\n    #continued\n\n```\n#fenced\n```\n`#span` [[Alpha]] #five/six/\n")
    html = render_markdown(body, _ids)
    tags = [attrs["href"] for tag, attrs in _tags(html) if tag == "a" and attrs.get("class") == "tag"]
    assert tags == [f"/notes?tag={quote(t)}" for t in text_tags(body) or []]
    assert text_tags(body) == ["one", "2024/05", "ends-", "two", "three", "four", "continued", "five/six"]


def test_math_renders_as_mathml_and_prices_stay_text() -> None:
    html = render_markdown("Area $\\pi r^2$ for $5 or $10.\n\n$$\n\\frac{a}{b}\n$$\n\n$\\frac{$\n")
    assert '<span class="math inline"><math' in html and "<mi>π</mi>" in html
    assert '<div class="math block">' in html and "<mfrac>" in html
    assert "for $5 or $10." in html


def test_embeds_transclude_a_note_or_one_section() -> None:
    embeds = {"alpha": TitledBody(1, "Alpha", "Top\n\n## Part\n\nInside *part*\n\n## Other\n\nnot here")}
    html = render_markdown("![[Alpha]]\n\n![[Alpha#Part]]", _ids, embeds)
    assert html.count('<div class="embed">') == 2
    section = html.split('<div class="embed">')[2]
    assert "Inside <em>part</em>" in section and "not here" not in section
    assert '<a class="wikilink" href="/notes/1#h-part"' in section


def test_embed_cycles_and_depth_stop_with_a_link() -> None:
    embeds = {"alpha": TitledBody(1, "Alpha", "A ![[Beta]]"), "beta": TitledBody(2, "Beta", "B ![[Alpha]]\n- [ ] x")}
    html = render_markdown("![[Alpha]]", _ids, embeds, note_id=9)
    assert html.count('<div class="embed">') == 2
    assert '<span class="embed embed-cut"><a class="wikilink" href="/notes/1"' in html
    assert "data-line" not in html and "disabled" in html  # another note's checkbox does not toggle
    itself = render_markdown("![[Alpha]]", _ids, embeds, note_id=1)  # a note embedding itself
    assert itself.startswith('<span class="embed embed-cut">')


def test_an_embed_of_a_note_not_given_shows_only_a_create_link() -> None:
    html = render_markdown("![[Gamma]]", _ids, {})
    assert html.startswith('<span class="embed embed-missing"><a class="wikilink wikilink-missing" '
                           'href="/notes/new?title=Gamma"')


def test_hostile_markdown_stays_inert() -> None:
    html = render_markdown(
        '> [!warning] <script>alert(1)</script><img src=x onerror=alert(2)>\n> body\n\n'
        "<javascript:alert(3)> [x](javascript:alert(4)) www.example.org\n\n"
        '<math><mi href="javascript:alert(5)" onclick="alert(6)">x</mi><maction actiontype="statusline">'
        '<mtext>y</mtext></maction></math>\n\n'
        '<input type="text" value="steal" data-line="x"> <h2 id="note-body">clobber</h2>\n\n'
        "![[x\" onmouseover=\"alert(7)]]\n\n- [ ] <b onclick=alert(8)>task</b>\n")
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the callout title is text
    tags = _tags(html)
    for tag, attrs in tags:
        assert not any(name.startswith("on") or name in ("style", "actiontype") for name in attrs), (tag, attrs)
        assert not str(attrs.get("href") or "").startswith(("javascript", "x")), (tag, attrs)
    assert [attrs for tag, attrs in tags if tag == "input"] == [  # the raw input: a checkbox, its value gone
        {"type": "checkbox"}, {"type": "checkbox", "class": "task-box", "aria-label": "Done: task", "data-line": "11"}]
    assert not any(attrs.get("id") == "note-body" for _, attrs in tags)
    assert ("math", {}) in tags and ("mi", {}) in tags


def test_a_table_keeps_its_columns_alignment_as_classes_never_styles() -> None:
    """Issue 38, item 12: `|--:|` right-aligns its column; markdown-it says so in a style, which
    the sanitiser drops, so it comes as a class the stylesheet knows."""
    html = render_markdown("| item | price | note |\n|:--|--:|:-:|\n| tea | 4.50 | ok |\n")
    cells = [(tag, attrs.get("class")) for tag, attrs in _tags(html) if tag in ("th", "td")]
    assert cells == [("th", "align-left"), ("th", "align-right"), ("th", "align-center"),
                     ("td", "align-left"), ("td", "align-right"), ("td", "align-center")]
    assert "style" not in html
