"""Feed formats that write markdown (``FEED_EXPORTERS``, set by the crawlyx add-on):

* ``md`` (:mod:`crawlyx.exporters.onefile`): every page in one markdown file, in the
  site's reading order (``-O pages.md``).
* ``mdfiles`` (:mod:`crawlyx.exporters.folder`): one markdown file per page in a folder
  mirroring the site's paths, and a manifest of them (``-O site/:mdfiles``).

Both write what a page is for a reader: its URL, title, fetch time and markdown
(``FEED_EXPORT_FIELDS`` does not apply to them).
"""

from __future__ import annotations

import json
import re

# Format name -> exporter, for FEED_EXPORTERS.
FEED_EXPORTERS = {
    "md": "crawlyx.exporters.onefile.MarkdownExporter",
    "mdfiles": "crawlyx.exporters.folder.MarkdownFilesExporter",
}
FOLDER_FORMATS = frozenset({"mdfiles"})  # the URI names a folder (crawlyx.feeds)
TEXT_FORMATS = frozenset({"md"})  # lines of page text, no item per line (crawlyx.feeds)

# Characters a YAML double-quoted string may not hold as they are (YAML 1.1's line breaks
# too, and C1 controls), which JSON leaves.
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]")


def yaml_string(value) -> str:
    """``value`` as a YAML scalar: ``null``, or a double-quoted string (JSON's escapes
    are YAML's), whatever characters it holds."""
    if value is None:
        return "null"
    text = json.dumps(str(value), ensure_ascii=False)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)
