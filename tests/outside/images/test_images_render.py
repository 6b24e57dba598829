"""Notes keep ``<img>`` only for cached images (``/api/images/<id>``), which the UI's
``img-src 'self' data:`` allows: any other image becomes a link, or loses its source."""

from __future__ import annotations

from fable_web.render import render_markdown


def test_a_cached_image_stays_an_image_and_any_other_becomes_a_link() -> None:
    html = render_markdown("![cat](/api/images/12) ![far](https://img.example.org/x.png) ![](http://a.example/b.png)")
    assert '<img src="/api/images/12" alt="cat">' in html
    assert '<a href="https://img.example.org/x.png" rel="noopener noreferrer nofollow">far</a>' in html
    assert '<a href="http://a.example/b.png" rel="noopener noreferrer nofollow">http://a.example/b.png</a>' in html
    assert html.count("<img") == 1


def test_raw_html_images_of_other_urls_lose_their_source() -> None:
    html = render_markdown('<img src="https://tracker.example/p.gif" alt="t"> <img src="/api/images/3">'
                           ' <img src="/api/images/3/../../notes"> <img src="data:image/svg+xml,<svg/>">'
                           " ![x](javascript:alert(1))")
    assert '<img alt="t">' in html and '<img src="/api/images/3">' in html
    assert "tracker" not in html and "notes" not in html and "data:" not in html and "href=\"javascript" not in html
