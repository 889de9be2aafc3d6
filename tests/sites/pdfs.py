"""Documents made for the tests: PDFs printed by Chromium from HTML served on 127.0.0.1 (a
tagged PDF, as browsers and office suites write them), or written here object by object
(an untagged one, as many older tools write them; one without text; one with a
password); Word documents written here part by part."""

from __future__ import annotations

import os
import subprocess
import tempfile
import zipfile
from http.server import BaseHTTPRequestHandler
from io import BytesIO
from pathlib import Path

from tests.sites.site import Serving


def print_to_pdf(
    chromium: str, html: str, header_footer: bool = True, tagged: bool = True
) -> bytes:
    """``html`` served on 127.0.0.1 and printed by headless Chromium (with its running
    header and footer unless ``header_footer`` is false; without a structure tree unless
    ``tagged``, as many tools write PDFs)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with tempfile.TemporaryDirectory() as tmp, Serving(Handler) as server:
        out = Path(tmp) / "out.pdf"
        command = [
            chromium, "--headless", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update",
            f"--user-data-dir={tmp}/profile", f"--print-to-pdf={out}",
        ]  # fmt: skip
        if os.geteuid() == 0:
            command.append("--no-sandbox")
        if not header_footer:
            command.append("--no-pdf-header-footer")
        if not tagged:
            command.append("--disable-pdf-tagging")
        command.append(f"{server.base}/")
        subprocess.run(command, capture_output=True, timeout=60, check=True)
        return out.read_bytes()


# -- printed once, kept in tests/data/printed/<Chromium build>/ ---------------------------
# How a browser lays a page out in PDF changes from build to build (where a line breaks,
# how wide a space is, which glyphs stand apart), so the tests read PDFs printed once by
# each build that matters, never the machine's own Chromium: `python -m tests.sites.pdfs
# /usr/lib/chromium/chromium` adds the installed build's.

PRINTED = Path(__file__).parent.parent / "data" / "printed"
PRINTED_BUILDS = sorted(  # oldest build first, by version number
    (path.name for path in PRINTED.iterdir() if path.is_dir()),
    key=lambda version: tuple(int(part) for part in version.split(".")),
)
# The base the manual's link was printed with: as long as the base of any test server (a
# port from the kernel's ephemeral range), so that serving the PDF from one moves the link.
PRINTED_BASE = "http://127.0.0.1:65432"

MANUAL = """<!doctype html><html lang="en"><head><title>Widget Manual</title><style>
body {{ font: 12pt serif; margin: 0 }}
.running {{ position: fixed; top: 0; left: 0; font: 9pt sans-serif }}
main {{ padding-top: 2em }}
section + section {{ break-before: page }}
td, th {{ border: 1px solid #999; padding: 3px }}
</style></head><body>
<div class="running">ACME CONFIDENTIAL handbook</div>
<main>
<section><h1>Widget Manual</h1>
<p>This manual explains how the widget works and how to keep it running for years. It has
several sections, each with a heading of its own, and a table of the parts with prices.</p>
<h2>Installing the widget</h2>
<p>Unpack the widget carefully. The widget needs a flat surface and a power outlet close
by; an extension cord will do if the outlet is far. Never install it near water.</p>
<ul><li>Keep the box</li><li>Read the <a href="{base}/parts">parts list</a> first</li></ul>
</section>
<section><h2>Parts and prices</h2>
<table><tr><th>Part</th><th>Price</th><th>Weight</th></tr>
<tr><td>Gear wheel</td><td>12.50</td><td>40 g</td></tr>
<tr><td>Spring, large and very strong</td><td>3.20</td><td>5 g</td></tr></table>
<h3>Starting it</h3>
<pre>widget --start
  --verbose</pre>
</section>
<section><h2>Care</h2><p>Dust the widget once a week with a dry cloth.</p></section>
</main></body></html>"""

LETTERS = """<html><body style="font: 12pt serif">
<p>Press <span style="letter-spacing: 0.2em; font-size: 10pt">COPY</span> to copy it,
a b c and d.</p><p>Jump to: &nbsp; A &nbsp; C &nbsp; F &nbsp; V</p>
<p style="word-spacing: -0.12em">Set close, x y z and w stay apart.</p></body></html>"""


def printed(build: str, name: str, base: str = PRINTED_BASE) -> bytes:
    """The PDF ``name`` as ``build`` printed it, its link moved to ``base``."""
    body = (PRINTED / build / name).read_bytes()
    if base == PRINTED_BASE:
        return body
    assert len(base) == len(PRINTED_BASE), f"{base}: not the length of {PRINTED_BASE}"
    return body.replace(PRINTED_BASE.encode(), base.encode())


def print_all(chromium: str) -> Path:
    """Print the documents with ``chromium`` into the folder named after its version."""
    version = subprocess.run([chromium, "--version"], capture_output=True, text=True).stdout
    folder = PRINTED / version.split()[1]
    folder.mkdir(parents=True, exist_ok=True)
    manual = MANUAL.format(base=PRINTED_BASE)
    (folder / "manual.pdf").write_bytes(print_to_pdf(chromium, manual))
    (folder / "manual-untagged.pdf").write_bytes(print_to_pdf(chromium, manual, tagged=False))
    (folder / "letters.pdf").write_bytes(print_to_pdf(chromium, LETTERS, header_footer=False))
    return folder


# -- written by hand ---------------------------------------------------------------------

FONTS = {"F1": "Helvetica", "F2": "Helvetica-Bold", "F3": "Courier", "F4": "CMTT10"}
WIDTH, HEIGHT = 612, 792


def _escape(text: str) -> bytes:
    data = text.encode("cp1252")
    return data.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def _assemble(objects: list[bytes], trailer: bytes = b"") -> bytes:
    """A PDF of ``objects`` (object 1 the catalog), with its cross-reference table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R %s>>\n" % (len(objects) + 1, trailer)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def text_pdf(pages: list[list[tuple]], title: str | None = None, trailer: bytes = b"") -> bytes:
    """An untagged PDF: each page a list of (x, y, size, text[, font[, letter gap[, word
    spacing]]]) lines, y from the bottom of a Letter page; font F1 Helvetica, F2
    Helvetica-Bold, F3 Courier, F4 CMTT10 (TeX's typewriter face, fixed pitch by its name
    only). A letter gap (thousandths of the font size) places each character apart, as
    browsers print CSS letter-spacing, and leaves the text's spaces undrawn, gaps of a third
    of the size, as TeX sets words; word spacing, in points, is added to every space drawn
    (PDF's Tw; negative sets words closer)."""
    fonts = b" ".join(
        b"/%s << /Type /Font /Subtype /Type1 /BaseFont /%s /Encoding /WinAnsiEncoding >>"
        % (name.encode(), base.encode())
        for name, base in FONTS.items()
    )
    objects: list[bytes] = [b"", b""]  # the catalog and the page tree, filled in below
    kids = []
    for lines in pages:
        stream = bytearray()
        for x, y, size, text, *style in lines:
            font, letters, words = (*style, *("F1", 0, 0)[len(style) :])
            shown = b"(%s) Tj" % _escape(text)
            if letters:
                parts = [b"-333" if char == " " else b"(%s)" % _escape(char) for char in text]
                shown = b"[%s] TJ" % (b" %d " % -letters).join(parts)
            stream += b"BT /%s %d Tf %g Tw %d %d Td %s ET\n" % (
                font.encode(),
                size,
                words,
                x,
                y,
                shown,
            )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"endstream")
        content = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents %d 0 R"
            b" /Resources << /Font << %s >> >> >>" % (WIDTH, HEIGHT, content, fonts)
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    if title is not None:
        objects.append(b"<< /Title (%s) >>" % _escape(title))
        trailer += b"/Info %d 0 R " % len(objects)
    return _assemble(objects, trailer)


def image_pdf(pages: int = 2) -> bytes:
    """A scan: pages that draw an image and hold no text."""
    pixels = bytes(range(256)) * 4  # 32 x 32 grey
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    objects.append(
        b"<< /Type /XObject /Subtype /Image /Width 32 /Height 32 /ColorSpace /DeviceGray"
        b" /BitsPerComponent 8 /Length %d >>\nstream\n" % len(pixels) + pixels + b"\nendstream"
    )
    kids = []
    for _ in range(pages):
        stream = b"q 500 0 0 700 56 46 cm /Im1 Do Q\n"
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"endstream")
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
            b" /Resources << /XObject << /Im1 3 0 R >> >> >>" % len(objects)
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    return _assemble(objects)


def encrypted_pdf() -> bytes:
    """A PDF locked with a password no one here knows (the standard security handler,
    RC4 40-bit: its O and U entries fit no empty password)."""
    pdf = text_pdf([[(72, 700, 12, "A secret nobody may read without the password.")]])
    o, u = os.urandom(32).hex().encode(), os.urandom(32).hex().encode()
    ident = os.urandom(16).hex().encode()
    head, _, tail = pdf.rpartition(b"trailer\n<< ")
    # The encryption dictionary as a direct object of the trailer.
    encrypt = b"/Encrypt << /Filter /Standard /V 1 /R 2 /O <%s> /U <%s> /P -44 >> " % (o, u)
    return head + b"trailer\n<< " + encrypt + b"/ID [<%s> <%s>] " % (ident, ident) + tail


# -- Word documents ----------------------------------------------------------------------

_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_R = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
_STYLES = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles {_W}>
<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style>
<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/>
<w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/>
<w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>
</w:styles>"""
_NUMBERING = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:numbering {_W}>
<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/></w:lvl>
<w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum>
<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:numFmt w:val="decimal"/></w:lvl>
</w:abstractNum>
<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>
<w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>
</w:numbering>"""


def word_paragraph(text: str, style: str = "", num: tuple[int, int] | None = None) -> str:
    props = f'<w:pStyle w:val="{style}"/>' if style else ""
    if num:
        props += f'<w:numPr><w:ilvl w:val="{num[1]}"/><w:numId w:val="{num[0]}"/></w:numPr>'
    runs = "".join(f'<w:r><w:t xml:space="preserve">{part}</w:t></w:r>' for part in text.split("|"))
    return f"<w:p><w:pPr>{props}</w:pPr>{runs}</w:p>"


def word_table(rows: list[tuple[str, ...]]) -> str:
    cells = lambda row: "".join(f"<w:tc>{word_paragraph(cell)}</w:tc>" for cell in row)  # noqa: E731
    return "<w:tbl>" + "".join(f"<w:tr>{cells(row)}</w:tr>" for row in rows) + "</w:tbl>"


def word_document(body: str, title: str = "", link: str = "", styles: bool = True) -> bytes:
    """A .docx of ``body`` (the XML of its paragraphs and tables: :func:`word_paragraph`,
    :func:`word_table`), with a title in its properties and an external link; without
    styles.xml unless ``styles``."""
    rels = ""
    if link:
        body += '<w:p><w:hyperlink r:id="rId9"><w:r><w:t>a link</w:t></w:r></w:hyperlink></w:p>'
        rels = (
            '<Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/'
            f'2006/relationships/hyperlink" Target="{link}" TargetMode="External"/>'
        )
    parts = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats'
            '.org/package/2006/content-types"><Default Extension="xml" ContentType="application'
            '/xml"/></Types>'
        ),
        "word/document.xml": (
            f'<?xml version="1.0" encoding="UTF-8"?><w:document {_W} {_R}><w:body>{body}'
            "</w:body></w:document>"
        ),
        "word/styles.xml": _STYLES,
        "word/numbering.xml": _NUMBERING,
        "word/_rels/document.xml.rels": (
            '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.'
            f'openxmlformats.org/package/2006/relationships">{rels}</Relationships>'
        ),
        "docProps/core.xml": (
            '<?xml version="1.0" encoding="UTF-8"?><cp:coreProperties xmlns:cp="http://schemas'
            '.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.'
            f'org/dc/elements/1.1/"><dc:title>{title}</dc:title><dc:language>en-GB</dc:language>'
            "</cp:coreProperties>"
        ),
    }
    out = BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in parts.items():
            if name == "word/styles.xml" and not styles:
                continue
            archive.writestr(name, text)
    return out.getvalue()


if __name__ == "__main__":
    import sys

    print(print_all(sys.argv[1]))
