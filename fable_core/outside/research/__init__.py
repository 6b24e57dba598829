"""Research: a question researched on the web (SearXNG, the pages it finds, the model) into
linked notes, in the background: the pipeline, its runs, and the tools."""
