"""Images: search through SearXNG, a content-addressed cache of fetched and uploaded images, and
serving them from ``/api/images/{id}`` so notes embed images without the browser ever asking
another host."""
