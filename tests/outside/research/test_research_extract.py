"""The readable text of a page: the article (or main, or body) without menus, scripts, asides
and forms; headings and paragraphs kept apart; malformed markup read as far as it goes."""

from __future__ import annotations

from fable_core.infra.pages import readable_text

PAGE = """<!doctype html><html><head><title> Sourdough  &amp; you </title><style>p{color:red}</style></head>
<body><header><h1>Site</h1></header><nav><ul><li>Home</li></ul></nav>
<main><p>Main intro.</p><article><h2>Rising</h2><p>Wild  yeast makes <b>gas</b>.</p><script>track()</script>
<aside>Ad</aside><form><input name=q><button>Go</button></form><ul><li>Flour</li><li>Water</li></ul></article></main>
<footer>(c)</footer></body></html>"""


def test_the_article_is_preferred_and_the_page_furniture_dropped() -> None:
    page = readable_text(PAGE)
    assert page.title == "Sourdough & you"
    assert page.text == "## Rising\n\nWild yeast makes gas.\n\nFlour\nWater"


def test_without_an_article_main_then_body_is_read() -> None:
    assert readable_text(PAGE.replace("<article>", "<div>").replace("</article>", "</div>")).text.startswith(
        "Main intro.\n\n## Rising")
    body = readable_text("<body><nav>menu</nav><p>One</p><p>Two</p><footer>f</footer></body>")
    assert body.text == "One\n\nTwo"
    assert readable_text("plain <i>fragment</i> text").text == "plain fragment text"


def test_malformed_markup_is_read_as_far_as_it_goes() -> None:
    assert readable_text("<p>Open <div>unclosed <script>x = '<p>'").text == "Open\nunclosed"
    assert readable_text("<nav><p>never closed nav").text == ""
    assert readable_text("<article></article><p>Body only</p>").text == "Body only"
    assert len(readable_text("<p>" + "word " * 10_000, limit=100).text) == 100


def test_markup_the_parser_gives_up_on_and_control_characters_cost_nothing() -> None:
    assert readable_text("<p>a\x00b</p><![ x <p>never read").text == "ab"
    assert readable_text("<title>T\x07itle</title><p>x</p>").title == "Title"
