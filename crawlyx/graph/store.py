"""The job's link graph in Redis: recorded as the crawl goes, loaded back as a Graph.

Every process of a job records into the same keys, under the job's namespace (so the
job's expiry and ``scrapy jobs --drop`` cover them)::

    crawlyx:{job}:graph:ids    hash  normalized URL -> its id (decimal), given once
    crawlyx:{job}:graph:meta   hash  next (the last id given), edges (edges kept),
                                     truncated (1 once an edge did not fit), start
    crawlyx:{job}:graph:links  hash  source id -> its out-links, packed: a uint32 count n,
                                     n uint32 target ids, their n anchor texts joined by NUL
                                     (SOH for a target's usual text: its label)
    crawlyx:{job}:graph:labels hash  id -> the first anchor text recorded for a link to it
    crawlyx:{job}:graph:nodes  hash  id -> what is known of the URL, compact JSON (FIELDS)
    crawlyx:{job}:graph:sigs   hash  id -> the page's near-duplicate signature (raw bytes)
    crawlyx:{job}:graph:frames hash  URL of a table of contents a page loads in a noscript
                                     frame -> its outline, JSON (crawlyx.graph.outline)

Links are most of a graph, and most of their text is a site's navigation, the same
anchor text on every page: a link whose text is its target's label is stored as one
byte.

A URL has an id once anything is recorded of it, a link to it included; ids are given
by one Lua script, so processes agree on them. A batch of records is one round trip.
Recording is idempotent and independent of order: a page's out-links are kept the first
time they are recorded (the same page recorded again changes nothing; edges are never
counted twice), a node's depth is the smallest recorded, ``fetched`` and ``in_sitemap``
once set stay set, other fields take the value recorded (a URL's facts come from its one
fetch). At most ``max_edges`` edges are kept: the page that would pass the bound keeps
the links that fit, later pages none, and the graph says it is truncated.
"""

from __future__ import annotations

import json
import struct

from crawlyx.graph.model import Graph, Node
from crawlyx.graph.outline import apply_outlines
from crawlyx.graph.walk import distances
from crawlyx.urls.normalize import normalize_url

# Node JSON keys -> Node fields. A key absent is the field's default.
FIELDS = {
    "s": "status",
    "e": "error",
    "r": "redirect",
    "f": "fetched",  # 1
    "c": "canonical",
    "b": "robots",  # list of directives
    "h": "content_hash",
    "t": "title",
    "d": "description",
    "p": "depth",  # the smallest recorded
    "m": "in_sitemap",  # 1
    "u": "summary",  # the start page's only
    "i": "frames",  # list of URLs: the tables of contents the page loads in a noscript frame
    "w": "written_as",  # the URL its document is written under (a copy, an alias)
}

# KEYS: ids, meta, links, nodes, sigs, labels.
# ARGV: max edges, records (JSON: a list of [url, {key: value}, links or null,
#   signature or null]; links: [[url, ...], [anchor, ...]]; signature: the index in ARGV
#   of the raw signature), then the signatures.
# Returns the edges kept by this call and whether the graph is truncated.
_RECORD = """
local ids, meta, links, nodes, sigs, labels = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local max_edges = tonumber(ARGV[1])
local function ids_of(urls, n)  -- the ids of urls[1..n], given to those without one
  local got = {}
  for k = 1, n, 1000 do
    local part = redis.call('HMGET', ids, unpack(urls, k, math.min(k + 999, n)))
    for i = 1, #part do
      local id = part[i]
      if not id then
        id = redis.call('HINCRBY', meta, 'next', 1)
        redis.call('HSET', ids, urls[k + i - 1], id)
      end
      got[k + i - 1] = tonumber(id)
    end
  end
  return got
end
local kept = 0
for _, rec in ipairs(cjson.decode(ARGV[2])) do
  local id, fields, out, sig = ids_of({rec[1]}, 1)[1], rec[2], rec[3], rec[4]
  if next(fields) ~= nil then
    local raw = redis.call('HGET', nodes, id)
    local node = raw and cjson.decode(raw) or {}
    for k, v in pairs(fields) do
      if k ~= 'p' or node.p == nil or v < node.p then node[k] = v end
    end
    redis.call('HSET', nodes, id, cjson.encode(node))
  end
  if type(sig) == 'number' then redis.call('HSET', sigs, id, ARGV[sig]) end
  if type(out) == 'table' and #out[1] > 0 and redis.call('HEXISTS', links, id) == 0 then
    local n = #out[1]
    local room = max_edges - tonumber(redis.call('HGET', meta, 'edges') or '0')
    if n > room then
      n = math.max(room, 0)
      redis.call('HSET', meta, 'truncated', 1)
    end
    if n > 0 then
      local packed, texts, targets = {struct.pack('<I4', n)}, {}, ids_of(out[1], n)
      for k = 1, n, 1000 do
        local last = math.min(k + 999, n)
        local usual = redis.call('HMGET', labels, unpack(targets, k, last))
        for i = k, last do
          local text, label = out[2][i], usual[i - k + 1]
          packed[i + 1] = struct.pack('<I4', targets[i])
          if not label and text ~= '' then
            redis.call('HSET', labels, targets[i], text)
            label = text
          end
          if text ~= '' and text == label then text = '\1' end
          texts[i] = text
        end
      end
      redis.call('HSET', links, id, table.concat(packed) .. table.concat(texts, '\\0'))
      redis.call('HINCRBY', meta, 'edges', n)
      kept = kept + n
    end
  end
end
return {kept, redis.call('HGET', meta, 'truncated') == '1' and 1 or 0}
"""

# "\0" ends nothing: the script joins anchors with it, so they may not hold one.
_NUL = "\0"
_LABEL = "\1"  # in a link's text: its target's label
_COUNT = struct.Struct("<I")


class Record:
    """What a crawl process learned of one URL, to send with others in one round trip:
    node fields (:data:`FIELDS` keys), its out-links ({URL: anchor text}) if it is a page
    read, its near-duplicate signature."""

    __slots__ = ("url", "fields", "links", "signature")

    def __init__(self, url: str, fields=None, links=None, signature: bytes | None = None):
        self.url = url
        self.fields = fields or {}
        self.links = links
        self.signature = signature


class GraphStore:
    SCAN_BATCH = 1000  # fields per HSCAN call when loading

    def __init__(self, state, max_edges: int):
        self.state = state
        self.client = state.client
        self.max_edges = max_edges
        names = ("ids", "meta", "links", "nodes", "sigs", "labels")
        self.keys = [state.key(f"graph:{name}") for name in names]
        self.ids_key, self.meta_key, self.links_key, self.nodes_key, self.sigs_key = self.keys[:5]
        self.labels_key = self.keys[5]
        self.frames_key = state.key("graph:frames")
        self._record = self.client.register_script(_RECORD)

    def record(self, records: list[Record], client=None, core=None) -> tuple[int, bool] | None:
        """Record ``records`` in one round trip; (edges kept, graph truncated). With a
        pipeline as ``client``, queued on it instead, through the crawl ``core``
        (:func:`recorded` reads the result)."""
        rows, signatures = [], []
        for rec in records:
            links = None
            if rec.links is not None:
                texts = [text.replace(_NUL, "").replace(_LABEL, "") for text in rec.links.values()]
                links = [list(rec.links), texts]
            sig = None
            if rec.signature is not None:
                signatures.append(rec.signature)
                sig = 2 + len(signatures)  # ARGV index (1-based): after max edges, rows
            rows.append([rec.url, rec.fields, links, sig])
        payload = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
        args = [self.max_edges, payload, *signatures]
        if core is not None:
            core.script(client, self._record, self.keys, args)
            return None
        return recorded(self._record(keys=self.keys, args=args, client=client))

    def set_start(self, url: str) -> None:
        """The crawl's start URL after its redirects (the first process to know it sets it)."""
        self.client.hsetnx(self.meta_key, "start", url)

    def set_outline(self, frame: str, outline: dict) -> None:
        """The outline read from the table of contents at ``frame`` (normalized):
        ``entries`` (see :func:`crawlyx.content.outline.read_outline`) and ``follow``
        (whether its links are followed). Read once, shared by every process of the job."""
        self.client.hset(self.frames_key, frame, json.dumps(outline, separators=(",", ":")))

    def outline(self, frame: str) -> dict | None:
        """The outline recorded for the table of contents at ``frame``, or None."""
        raw = self.client.hget(self.frames_key, frame)
        return json.loads(raw) if raw else None

    # -- loading ----------------------------------------------------------------------

    def _scan(self, key: str):
        return self.client.hscan_iter(key, count=self.SCAN_BATCH)

    def load(self) -> Graph:
        """The recorded graph, read in batches (HSCAN). Node.depth is the shortest link
        distance from the start (:func:`crawlyx.graph.walk.distances`) when the graph is
        whole, else the smallest depth the crawl recorded."""
        meta = {k.decode(): v.decode() for k, v in self.client.hgetall(self.meta_key).items()}
        truncated = meta.get("truncated") == "1"
        graph = Graph(start=meta.get("start") or self._start(), truncated=truncated)
        urls: dict[int, str] = {}
        for url, id_ in self._scan(self.ids_key):
            urls[int(id_)] = url = url.decode()
            graph.nodes[url] = Node(url)
        for id_, raw in self._scan(self.nodes_key):
            url = urls.get(int(id_))
            if url is not None:  # an id given after the ids were read: a crawl still running
                _apply(graph.nodes[url], json.loads(raw))
        for id_, sig in self._scan(self.sigs_key):
            url = urls.get(int(id_))
            if url is not None:
                graph.nodes[url].signature = sig
        labels = {int(id_): text.decode() for id_, text in self._scan(self.labels_key)}
        for id_, packed in self._scan(self.links_key):
            url = urls.get(int(id_))
            if url is not None:
                graph.links[url] = {
                    urls[target]: labels.get(target, "") if text == _LABEL else text
                    for target, text in unpack(packed)
                    if target in urls
                }
        outlines = {
            frame.decode(): json.loads(raw)["entries"] for frame, raw in self._scan(self.frames_key)
        }
        if outlines:
            apply_outlines(graph, outlines)
        if not graph.truncated and graph.start in graph.nodes:
            depths = distances(graph)
            for url, node in graph.nodes.items():
                node.depth = depths.get(url)
        return graph

    def _start(self) -> str:
        """The start URL when none was recorded: the root of the crawl's origin."""
        origin = self.client.hget(self.state.key("meta"), "origin")
        return normalize_url(origin.decode() + "/") if origin else ""

    def memory(self) -> int:
        """Bytes Redis holds for the graph's keys (MEMORY USAGE, every element counted)."""
        keys = [*self.keys, self.frames_key]
        return sum(self.client.memory_usage(key, samples=0) or 0 for key in keys)


def recorded(result) -> tuple[int, bool]:
    """(edges kept, graph truncated), from the recording script's answer."""
    kept, truncated = result
    return kept, bool(truncated)


def unpack(packed: bytes) -> list[tuple[int, str]]:
    """A source's packed out-links: (target id, anchor text), in recorded order."""
    (n,) = _COUNT.unpack_from(packed)
    targets = struct.unpack_from(f"<{n}I", packed, 4)
    texts = packed[4 + 4 * n :].decode().split(_NUL)
    return list(zip(targets, texts, strict=True))


def _apply(node: Node, data: dict) -> None:
    for key, value in data.items():
        name = FIELDS.get(key)
        if name is None:
            continue
        if name in ("fetched", "in_sitemap"):
            value = bool(value)
        elif name in ("robots", "frames"):
            value = tuple(value) if isinstance(value, list) else ()  # cjson: [] is {}
        setattr(node, name, value)
