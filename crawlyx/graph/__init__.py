"""The site's link graph, and what is derived from it: the audit, the tree, llms.txt, written
when a crawl ends by its extension (:mod:`.extension`)."""
