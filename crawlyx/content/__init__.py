"""Reading a page: parsing in workers, main-content extraction, boilerplate, markdown."""
