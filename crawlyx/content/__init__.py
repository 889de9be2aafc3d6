"""Reading a page: parsing in workers, main-content extraction, boilerplate, markdown."""

# How the markdown writes links (CRAWLYX_MARKDOWN_LINKS): here, so that checking the
# setting does not import the converter into the crawl process.
LINK_STYLES = ("inline", "reference", "none")
