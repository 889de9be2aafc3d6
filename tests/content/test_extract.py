"""Main-content extraction: what goes, what stays, the options."""

import json

import pytest

from crawlyx.content.extract import page_markdown, parse_document
from crawlyx.content.extract.titles import page_title
from crawlyx.content.markdown import html_to_markdown

PAGE = """<html><head><title>Launch notes | Acme Blog</title></head><body>
<header class="site-header"><a href="/">Acme</a><nav><a href="/pricing">Pricing</a></nav></header>
<div id="cookie-banner" class="cookie-consent">We use cookies to improve things.</div>
<div class="layout"><div class="content-area"><div class="post-body">
<h2 class="anchor">Launch notes<a class="hash-link" href="#launch">#</a></h2>
<p>The new release ships a faster parser, a smaller binary and fewer surprises, says the team.</p>
<p style="display:none">Invisible promo text.</p>
<p>Read the <a href="/docs/parser">parser docs</a> to learn how the new parser handles
edge cases.</p>
<ul class="share-bar"><li><a href="/s/x">Share on X</a></li>
<li><a href="/s/m">Mastodon</a></li></ul>
<section class="related-posts"><h3>Related</h3><ul>
<li><a href="/a">Older post one</a></li><li><a href="/b">Older post two</a></li>
<li><a href="/c">Older post three</a></li></ul></section>
</div></div>
<aside class="sidebar"><h3>Archive</h3>
<p>Browse every post since 2009 in the archive.</p></aside></div>
<footer>© 2026 Acme Inc.</footer>
</body></html>"""

URL = "https://acme.example/blog/launch"


def test_main_content_only():
    md = page_markdown(PAGE, URL)
    assert md.startswith("# Launch notes\n")
    assert md.count("Launch notes") == 1
    assert "faster parser, a smaller binary" in md
    assert "[parser docs](https://acme.example/docs/parser)" in md
    for gone in (
        "cookies", "Pricing", "Invisible promo", "Share on X", "Older post", "Archive",
        "© 2026", "notes#", "#launch",
    ):  # fmt: skip
        assert gone not in md, gone


def test_whole_page_when_asked():
    md = page_markdown(PAGE, URL, main_content=False)
    assert "Pricing" in md and "© 2026 Acme Inc." in md and "Older post one" in md


@pytest.mark.parametrize(
    ("links", "expected"),
    [
        ("inline", "Read the [parser docs](https://acme.example/docs/parser) to learn how"),
        ("reference", "Read the [parser docs][1] to learn"),
        ("none", "Read the parser docs to learn"),
    ],
)
def test_link_styles(links, expected):
    md = page_markdown(PAGE, URL, links=links)
    assert expected in md
    if links == "reference":
        assert md.rstrip().endswith("[1]: https://acme.example/docs/parser")


def test_unknown_link_style_is_refused():
    with pytest.raises(ValueError, match="inline, reference, none"):
        html_to_markdown("<p>x</p>", URL, links="footnote")


def test_title_from_the_page_not_the_site():
    from lxml import html

    assert page_title(html.document_fromstring(PAGE)) == "Launch notes"
    doc = html.document_fromstring("<title>Site name - A long article headline</title><p>x")
    assert page_title(doc) == "A long article headline"


def test_title_added_once_when_the_content_has_no_h1():
    page = (
        "<title>Recipe: bread</title><body><header><h1>Recipe: bread</h1></header>"
        "<main><p>Mix flour, water, salt and yeast; knead well and let it rise overnight.</p>"
        "</main></body>"
    )
    md = page_markdown(page, URL)
    assert md.startswith("# Recipe: bread\n\nMix flour")
    assert md.count("Recipe: bread") == 1


@pytest.mark.parametrize("page", ["", "   ", "<html></html>", "\x00\x01garbage", b"\xff\xfe<p>x"])
def test_malformed_input_never_raises(page):
    assert isinstance(page_markdown(page, URL), str)


def test_a_page_that_is_a_heading_and_links_keeps_its_links():
    # A short docs page made of a list of links: its sidebar (a longer blurb) goes, and
    # the content is the list, not the heading, which holds the only text outside links.
    links = "".join(f"<li><a href='/m/{i}.html'>module {i}</a></li>" for i in range(8))
    page = (
        "<html><body><div class='body' role='main'><h1>All modules</h1>"
        f"<ul>{links}</ul></div><div class='sphinxsidebar' role='navigation'>"
        "<p>Requests is an elegant and simple HTTP library for Python, built for humans "
        "and maintained by volunteers around the world.</p></div></body></html>"
    )
    out = page_markdown(page, "https://docs.example/modules.html")
    assert out.startswith("# All modules\n")
    assert "- [module 7](https://docs.example/m/7.html)" in out
    assert "elegant" not in out


def test_a_lead_above_the_body_stays_with_it():
    # News sites put the lead (standfirst) above the body's container: the container
    # search stops above both. The teasers after the article still go.
    body = "".join(
        f"<p>Paragraph {i} of the story tells, at some length and in plain words, what the "
        f"council decided on the new tram line and why it matters to the town.</p>"
        for i in range(12)
    )
    page = (
        "<html><body><article><h1>Tram line approved</h1>"
        "<p class='intro'>The council has approved a tram line through the old town, ending "
        "a decade of debate about how people should cross the river each day, and the first "
        "trams are due to run in three years.</p>"
        f"<div class='longText'>{body}</div></article>"
        "<div class='teasers'><a href='/a'>Bus fares rise</a> <a href='/b'>Bridge closes</a> "
        "<a href='/c'>Mayor resigns</a></div></body></html>"
    )
    out = page_markdown(page, "https://news.example/tram")
    assert "ending a decade of debate" in out
    assert "Paragraph 11 of the story" in out
    assert "Mayor resigns" not in out
    # However long the body, and with the title elsewhere: a lead right beside it is part
    # of it.
    long = page.replace(body, 5 * body).replace("<h1>Tram line approved</h1>", "")
    out = page_markdown(long, "https://news.example/tram")
    assert "ending a decade of debate" in out


STORY = "".join(
    f"<p>Part {i} of the guide explains, in plain words and at some length, how to dig the "
    f"beds, when to sow the seeds and how much water the young plants need.</p>"
    for i in range(8)
)


def test_a_control_left_open_does_not_swallow_the_page():
    # The menu button's markup is broken (its inner divs are never closed): the parser
    # puts the whole page inside the button. The page is read, the button's label is not.
    page = (
        "<html><body><header><button class='menu-button' aria-label='Menu'>"
        "<div class='inner'><div></button></header>"
        f"<article><h1>Start a vegetable garden</h1>{STORY}</article>"
        "<footer>Garden Weekly</footer></body></html>"
    )
    out = page_markdown(page, "https://garden.example/start")
    assert out.startswith("# Start a vegetable garden\n")
    assert "Part 7 of the guide" in out
    assert "Garden Weekly" not in out


def test_a_page_hidden_until_its_scripts_run_is_read():
    page = (
        "<html><body><div style='visibility:hidden;background-color:#fff'>"
        f"<h1>Machine learning tutorial</h1>{STORY}</div>"
        "<p style='display:none'>Loading the editor.</p></body></html>"
    )
    out = page_markdown(page, "https://learn.example/ml")
    assert "Part 0 of the guide" in out
    assert "Loading the editor" not in out


def test_docs_tabs_cards_and_announced_lists_stay():
    cards = "".join(
        f"<li><p><strong><a href='p{i}/'>Built-in plugin number {i}</a></strong></p>"
        f"<p>Plugin {i} does one job well and is described here in a sentence.</p></li>"
        for i in range(4)
    )
    extensions = "".join(f"<li><a href='ext/#{i}'>Extension {i}</a></li>" for i in range(8))
    page = (
        "<html><body><nav class='md-nav'><a href='/'>Home</a><a href='/setup'>Setup</a></nav>"
        "<article><h1>Plugins</h1>"
        f"<p>{'Plugins extend the build with new features and pages. ' * 6}</p>"
        "<div class='tabbed-set'><div class='tabbed-labels'><label for='t1'>Unix</label>"
        "<label for='t2'>Windows</label></div><div class='tabbed-content'>"
        "<div class='tabbed-block'><pre><code>pip install plugin</code></pre></div>"
        "<div class='tabbed-block'><pre><code>py -m pip install plugin</code></pre></div>"
        "</div></div>"
        f"<div class='grid cards'><ul>{cards}</ul></div>"
        "<p>The following extensions are supported, click on one to learn more:</p>"
        f"<div class='columns'><ul>{extensions}</ul></div></article></body></html>"
    )
    out = page_markdown(page, "https://docs.example/plugins/")
    assert "Unix Windows" in out
    assert "[Built-in plugin number 3](https://docs.example/plugins/p3/)" in out
    assert "[Extension 7](https://docs.example/plugins/ext/#7)" in out
    assert "Setup" not in out


def test_a_list_under_its_heading_keeps_the_heading_and_intro():
    items = "".join(
        f"<li>Opinion {i}: positional arguments should be used sparingly and, when they "
        f"are used, they should be required so the command reads well.</li>"
        for i in range(6)
    )
    page = (
        "<html><body><section><h1>Design opinions</h1><p>A penny for your thoughts.</p>"
        "<section><h2>Options over arguments</h2>"
        f"<ul>{items}</ul></section></section></body></html>"
    )
    out = page_markdown(page, "https://docs.example/opinions")
    assert out.startswith("# Design opinions\n")
    assert "## Options over arguments" in out
    assert "- Opinion 5" in out


def test_a_sphinx_page_keeps_its_title_and_its_own_contents():
    # The h1 carries its permalink ("Design opinions#"), the <title> the site's longer
    # name: the h1 is still the title. A local table of contents is part of the document.
    page = (
        "<html><head><title>Design opinions — Click Documentation (8.5.x)</title></head>"
        "<body><nav class='sidebar'><a href='/'>Home</a></nav><main><article>"
        "<section><h1>Design opinions<a class='headerlink' href='#design'>#</a></h1>"
        "<nav class='contents local'><ul><li><a href='#options'>Options first</a></li>"
        "<li><a href='#prompts'>Prompts last</a></li></ul></nav>"
        f"<section id='options'><h2>Options first</h2>{STORY}</section>"
        f"<section id='prompts'><h2>Prompts last</h2>{STORY}</section>"
        "</section></article></main></body></html>"
    )
    out = page_markdown(page, "https://docs.example/opinions")
    assert out.startswith("# Design opinions\n")
    assert "- Options first\n- Prompts last" in out
    assert "Home" not in out
    assert page_title(parse_document(page)) == "Design opinions"


def test_a_page_with_nothing_but_its_title_has_empty_markdown():
    shell = (
        "<html><head><title>Help picking a keyboard - Forum</title></head><body>"
        "<a href='#main'>Skip to content</a><header><nav><a href='/'>Forum</a></nav></header>"
        "<main id='main'><h1>Help picking a keyboard</h1><div id='app'></div></main>"
        "<footer>© Forum</footer></body></html>"
    )
    assert page_markdown(shell, "https://forum.example/t/1") == ""
    photo = shell.replace("<div id='app'></div>", "<img src='/k.jpg' alt='A keyboard'>")
    assert page_markdown(photo, "https://forum.example/t/1").startswith("# Help picking")
    post = shell.replace("<div id='app'></div>", "<p>Which one should I buy?</p>")
    out = page_markdown(post, "https://forum.example/t/1")
    assert out == "# Help picking a keyboard\n\nWhich one should I buy?\n"
    # A heading left open by broken markup holds the page: that is content.
    broken = "<html><body><h1>Broken<div><p>Unclosed text after it"
    assert "Unclosed text after it" in page_markdown(broken, "https://forum.example/t/2")


def test_a_grid_of_products_below_an_article_is_not_the_content():
    cards = "".join(
        f"<div class='card'><a href='/p/{i}'><div>Garden trowel model {i}</div>"
        f"<div>Stainless steel blade, ash handle</div><div>$1{i}.99</div></a></div>"
        for i in range(12)
    )
    page = (
        f"<html><body><article><h1>Start a vegetable garden</h1>{STORY}</article>"
        f"<section class='shop-the-look'><div class='cards'>{cards}</div></section></body></html>"
    )
    out = page_markdown(page, "https://garden.example/start")
    assert "Part 7 of the guide" in out
    # The same grid above a shop's blurb is a collection page's content.
    listing = (
        f"<html><body><main><h1>Trowels</h1><div class='cards'>{cards}</div>"
        f"<div class='seo'>{STORY}</div></main></body></html>"
    )
    out = page_markdown(listing, "https://garden.example/trowels")
    assert "Garden trowel model 11 Stainless steel blade, ash handle $111.99" in out
    assert "Part 0 of the guide" not in out
    # Below a line of introduction, shorter than a lead, the grid is the content too.
    intro = (
        "<html><body><main><h1>Trowels</h1><div class='intro'><p>Every trowel we sell, "
        f"tested in our own beds.</p></div><div class='cards'>{cards}</div></main></body></html>"
    )
    out = page_markdown(intro, "https://garden.example/trowels")
    assert "tested in our own beds" in out and "Garden trowel model 11" in out


def test_a_carousel_shown_twice_is_said_once():
    slides = "".join(
        f"<div class='slide'><h3>Feature {i} of the tablet</h3><p>Slide {i} says what the "
        f"feature does for you, in a sentence or two of plain words.</p></div>"
        for i in range(3)
    )
    track = f"<div class='track'>{slides}{slides}</div>"
    page = f"<html><body><main><h1>Tablet</h1>{track}</main></body></html>"
    out = page_markdown(page, "https://shop.example/tablet")
    assert out.count("Feature 2 of the tablet") == 1
    assert out.count("Slide 1 says what") == 1


def test_customer_reviews_on_a_product_page_are_its_comments():
    reviews = "".join(
        f"<div class='review'><p>Reviewer {i} says the tablet arrived quickly, works well "
        f"and the battery lasts for days of reading and watching films.</p></div>"
        for i in range(3)
    )
    description = 3 * (
        "<p>The Tab Lite has a bright eleven inch screen, a battery that lasts two days "
        "and a pen that clips to its side. It weighs under half a kilo.</p>"
    )
    product = (
        "<html><head><script type='application/ld+json'>"
        '{"@context": "https://schema.org", "@type": "Product", "name": "Tab Lite"}'
        "</script></head><body><main><h1>Tab Lite</h1>"
        f"<div class='description'>{description}</div>"
        f"<section id='customer-reviews'>{reviews}</section></main></body></html>"
    )
    out = page_markdown(product, "https://shop.example/tab-lite")
    assert "bright eleven inch screen" in out
    assert "Reviewer" not in out
    # Without the product markup a page of "reviews" may be the article itself, and so
    # may a page marked as both an article and the product it reviews.
    article = product.replace('"Product"', '"Article"')
    assert "Reviewer 2 says" in page_markdown(article, "https://shop.example/tab-lite")
    review = product.replace("</script>", "</script><meta property='og:type' content='article'>")
    assert "Reviewer 2 says" in page_markdown(review, "https://shop.example/tab-lite")
    # However many there are: a widget of reviews outweighing the description.
    many = product.replace(reviews, 4 * reviews)
    out = page_markdown(many, "https://shop.example/tab-lite")
    assert "bright eleven inch screen" in out
    assert "Reviewer" not in out


def test_content_named_like_boilerplate_stays_when_nothing_else_would():
    # A layout named after its sidebar holds the article; the site's header menu is named
    # boilerplate too. Dropping both would leave the page empty: the one with prose stays.
    menu = "".join(f"<li><a href='/s{i}'>Section number {i}</a></li>" for i in range(30))
    prose = 3 * (
        "<p>The court ruled on Tuesday that the new rules apply to every contract signed "
        "after the first of June, whatever the size of the company.</p>"
    )
    page = (
        "<html><head><title>Ruling on contracts</title></head><body>"
        f"<div id='header'><ul class='menu'>{menu}</ul></div>"
        f"<div class='panel-display one-sidebar-second'><h1>Ruling on contracts</h1>{prose}"
        f"</div><div id='footer'><p>Law Daily</p><ul>{menu}</ul></div></body></html>"
    )
    out = page_markdown(page, "https://law.example/ruling")
    assert "whatever the size of the company" in out
    assert "Section number" not in out and "Law Daily" not in out
    # With an article outside them, named containers go as before.
    story = f"<div class='story'>{prose}</div><div id='footer'>"
    out = page_markdown(page.replace("<div id='footer'>", story), "https://law.example/r")
    assert out.count("whatever the size of the company") == 3


def test_a_story_named_like_a_teaser_stays_among_menus():
    # The site's menus are plain divs of links outweighing the story, which the CMS wraps
    # in a "teaser": the story holds the page's prose, so it is the content.
    menu = "".join(f"<li><a href='/s{i}'>Swimming section number {i}</a></li>" for i in range(80))
    page = (
        "<html><body><div class='menu-wrap'><ul>" + menu + "</ul></div>"
        f"<div class='col'><h1>Garden guide</h1><div class='teaser newsSingle'>{STORY}</div>"
        "<div class='partners'><ul>" + menu + "</ul></div></div></body></html>"
    )
    out = page_markdown(page, "https://garden.example/guide")
    assert "Part 7 of the guide" in out
    assert "Swimming section" not in out


def test_what_a_kept_named_container_holds_is_judged_too():
    # Broken markup leaves the whole page inside the site's header: the header stays,
    # being most of the page, but the related links and the newsletter box inside it go.
    related = "".join(
        f"<li><a href='/r{i}'>Another story about gardens, number {i}</a></li>" for i in range(6)
    )
    page = (
        "<html><body><div class='site-header'><h1>Garden guide</h1>"
        f"{STORY}<div class='related-posts'><ul>{related}</ul></div>"
        "<div class='newsletter-box'><p>Sign up for our weekly newsletter with the best "
        f"stories.</p></div>{STORY.replace('Part', 'Step')}</div></body></html>"
    )
    out = page_markdown(page, "https://garden.example/guide")
    assert "Part 7 of the guide" in out and "Step 7 of the guide" in out
    assert "Another story" not in out and "weekly newsletter" not in out


def test_comments_go_when_the_article_is_inside_a_kept_layout():
    # The layout is named after its sidebar and kept, being the page; the article and its
    # comments are both inside it. The article's prose counts, so the comments, longer
    # than it, are not taken for the page's content.
    comment = (
        "<li class='comment'><p>Thanks for this, I tried it in my own garden last summer and "
        "the beans did much better than the year before.</p></li>"
    )
    page = (
        "<html><body><div class='content-sidebar-wrap'><main><h1>Garden guide</h1>"
        f"{STORY}<div class='entry-comments' id='comments'><ol>{40 * comment}</ol></div>"
        "</main></div></body></html>"
    )
    out = page_markdown(page, "https://garden.example/guide")
    assert "Part 7 of the guide" in out
    assert "beans did much better" not in out


def _cards(hrefs):
    cards = (
        f"<div class='card card-{i}'><h3><a href='{href}'>Another garden story, number {i}</a>"
        "</h3><p>How a neighbour grew beans up a fence and what the snails made of it.</p></div>"
        for i, href in enumerate(hrefs)
    )
    return f"<div class='cards'>{''.join(cards)}</div>"


def test_teaser_cards_after_the_article_go():
    # Cards that tease the site's other stories, in the story's own column and long enough
    # together to keep the container search from passing them by.
    own = ["/stories/beans", "https://garden.example/stories/snails", "../stories/fences"] * 2
    page = (
        "<html><body><div class='col'><h1>Garden guide</h1>"
        f"{STORY}<h2>More from the blog</h2>{_cards(own)}</div></body></html>"
    )
    out = page_markdown(page, "https://www.garden.example/guide")
    assert "Part 7 of the guide" in out
    assert "Another garden story" not in out and "More from the blog" not in out
    # Cards that lead to another site (a roundup of products) or into the page (an
    # accordion's questions) are the text's own.
    for hrefs in (["https://shop.example/beans"] * 6, ["#q1", "#q2", "#q3"] * 2):
        out = page_markdown(page.replace(_cards(own), _cards(hrefs)), "https://garden.example/")
        assert "Another garden story, number 5" in out and "More from the blog" in out
    # Before an article's worth of prose, cards are the page's (a listing's items).
    listing = page.replace(STORY, STORY[: STORY.index("Part 2")])
    out = page_markdown(listing, "https://garden.example/guide")
    assert "Another garden story, number 5" in out


def test_teaser_cards_with_a_kicker_or_a_date_above_the_title_go():
    # A card may show its section ("News") or its date above the linked title.
    for kicker in ("<div class='kicker'>News</div>", "<time>22. Juni 2022</time>"):
        cards = _cards(["/stories/beans"] * 6).replace("<h3>", f"{kicker}<h3>")
        page = (
            "<html><body><div class='col'><h1>Garden guide</h1>"
            f"{STORY}<h2>More from the blog</h2>{cards}</div></body></html>"
        )
        out = page_markdown(page, "https://garden.example/guide")
        assert "Part 7 of the guide" in out and "Another garden story" not in out
    # Words that run on into the link are the start of its sentence, not a label: rows of
    # an API's methods ("static <E> <a>EnumSet</a>") are the page's own.
    cards = _cards(["/stories/beans"] * 6).replace("<h3>", "<h3>Read about <code>the")
    cards = cards.replace("</h3>", "</code></h3>")
    page = (
        "<html><body><div class='col'><h1>Garden guide</h1>"
        f"{STORY}<h2>More from the blog</h2>{cards}</div></body></html>"
    )
    assert "Another garden story" in page_markdown(page, "https://garden.example/guide")


@pytest.mark.parametrize(
    "name", ["timeline similar", "postmetadata alt", "entry-utility", "author-description"]
)
def test_what_wordpress_and_news_themes_name_their_furniture_goes(name):
    furniture = (
        f"<div class='{name}'><p>Filed under Allgemein by the editors of this blog.</p></div>"
    )
    page = (
        f"<html><body><div class='col'><h1>Garden guide</h1>{STORY}{furniture}</div></body></html>"
    )
    out = page_markdown(page, "https://garden.example/guide")
    assert "Part 7 of the guide" in out and "Filed under" not in out


def test_microdata_keeps_a_story_s_summary_whatever_its_class():
    page = (
        "<html><body><div class='col' itemscope itemtype='https://schema.org/NewsArticle'>"
        "<h1>Garden guide</h1><div class='teaser-text' itemprop='description'><p>The one "
        "thing to know before spring: dig the beds while the soil is still dry.</p></div>"
        f"<div itemprop='articleBody'>{STORY}</div>"
        "<div class='author-box' itemprop='author' itemscope itemtype='https://schema.org/Person'>"
        "<div class='teaser-text' itemprop='description'><p>Anna writes about gardens and "
        "has done so for twenty years now.</p></div></div></div></body></html>"
    )
    out = page_markdown(page, "https://garden.example/guide")
    assert "The one thing to know before spring" in out and "Part 7 of the guide" in out
    assert "Anna writes" not in out  # the description of the author, not of the story


def test_a_box_that_is_one_link_to_another_story_goes():
    box = (
        "<div class='explore'><div><p>Explore further</p></div>"
        "<a href='{href}'>Neanderthal tools were simpler than thought</a></div>"
    )
    page = f"<html><body><div class='col'><h1>Garden guide</h1>{STORY}{box}</div></body></html>"
    out = page_markdown(page.format(href="/news/tools"), "https://garden.example/guide")
    assert "Part 7 of the guide" in out
    assert "Neanderthal" not in out and "Explore further" not in out
    # A shop's product in a recipe's ingredients, a table's cell: the text's own.
    out = page_markdown(page.format(href="https://shop.example/tar"), "https://garden.example/")
    assert "Neanderthal tools were simpler than thought" in out
    cell = page.replace(box, f"<table><tr><td>{box}</td><td>1</td></tr></table>")
    out = page_markdown(cell.format(href="/news/tools"), "https://garden.example/guide")
    assert "Neanderthal tools were simpler than thought" in out
    # On documentation, "See also" and one link is the text's own.
    docs = page.replace("<html>", f"<html><head>{SPHINX}</head>")
    out = page_markdown(docs.format(href="/news/tools"), "https://garden.example/guide")
    assert "Explore further" in out and "Neanderthal tools were simpler than thought" in out


def test_a_product_page_s_other_products_go_by_their_heading():
    # Only on a product page: elsewhere "Related work" is a section of the text.
    others = "".join(
        f"<li><h3><a href='/itm/{i}'>Brass desk lamp {i}</a></h3><p>A lamp with a long "
        "arm, posted in its box from a smoke-free home.</p></li>"
        for i in range(4)
    )
    page = (
        '<html><head><script type=\'application/ld+json\'>{"@type": "Product"}</script>'
        "</head><body><main><h1>Walnut desk lamp</h1><p>A lamp turned from one piece of "
        "walnut, with a linen shade and a cloth cable two metres long.</p>"
        f"<h2>Similar items</h2><ul>{others}</ul></main></body></html>"
    )
    out = page_markdown(page, "https://shop.example/itm/1")
    assert "one piece of walnut" in out
    assert "Similar items" not in out and "Brass desk lamp" not in out
    plain = page.replace('"Product"', '"WebPage"')
    assert "Brass desk lamp 3" in page_markdown(plain, "https://shop.example/itm/1")


def test_a_link_hidden_from_screen_readers_only_is_read():
    # A card's excerpt links where its title does, marked aria-hidden as a repeat; an icon
    # marked so is decoration.
    cards = "".join(
        f"<article class='river'><h2><a href='/a/{i}'>Headphones news number {i}</a></h2>"
        f"<p><a href='/a/{i}' aria-hidden='true' tabindex='-1'>The excerpt of story {i}, "
        "on new colours for the wireless headphones.</a></p>"
        "<span class='icon' aria-hidden='true'>Share icon</span></article>"
        for i in range(6)
    )
    page = f"<html><body><main><h1>Headphones</h1>{cards}</main></body></html>"
    out = page_markdown(page, "https://news.example/topic/headphones")
    assert "The excerpt of story 5, on new colours" in out
    assert "Share icon" not in out


def test_a_custom_element_is_judged_by_its_name():
    footer = (
        "<site-footer><p>Garden Weekly is published by the allotment society of the old "
        "town, every Friday since 1987.</p></site-footer>"
    )
    page = f"<html><body><div class='wrap'><h1>Garden guide</h1>{STORY}{footer}</div></body></html>"
    out = page_markdown(page, "https://garden.example/guide")
    assert "Part 7 of the guide" in out
    assert "allotment society" not in out
    # An element of a name that says nothing is content like a div.
    out = page_markdown(page.replace("site-footer", "story-part"), "https://garden.example/g")
    assert "allotment society" in out


def test_an_accordion_s_folds_are_content_whatever_they_are_drawn_with():
    # A shop draws each fold of the product's accordion as a side sheet: a dialog
    # holding an aside. Outside an accordion an aside is still the site's.
    fold = (
        "<div class='accordion'><button>Description</button><div class='sheet' "
        "role='dialog'><aside class='sheet-aside'><p>The Arrival T-shirt is cut slim from "
        "a light fabric that wicks sweat, with flat seams and a crew neck.</p></aside>"
        "</div></div>"
    )
    sidebar = "<aside><p>Join the club for free delivery on your next three orders.</p></aside>"
    page = (
        "<html><body><main><h1>Arrival T-shirt</h1><p>$22, in black, sizes S to XL.</p>"
        f"{fold}</main>{sidebar}</body></html>"
    )
    out = page_markdown(page, "https://shop.example/arrival")
    assert "wicks sweat" in out
    assert "Join the club" not in out


def test_an_article_of_numbered_steps_outweighs_its_comments():
    # A how-to marked as an article: a short intro and its steps in a list. The comments
    # below are longer, yet they are not the article.
    steps = "".join(
        f"<li>Step {i}: dig the bed a spade deep, break up the clods and rake the soil "
        f"level before you sow.</li>"
        for i in range(10)
    )
    comments = "".join(
        f"<li class='comment'><p>Reader {i} writes that the guide worked well for her own "
        f"garden and asks when the best time is to sow carrots in a cold spring.</p></li>"
        for i in range(20)
    )
    page = (
        "<html><head><meta property='og:type' content='article'></head><body><main>"
        "<h1>Dig a bed</h1><p>Dig a new bed in an afternoon.</p>"
        f"<ol>{steps}</ol><div id='comments'><ol>{comments}</ol></div></main></body></html>"
    )
    out = page_markdown(page, "https://garden.example/dig")
    assert "Step 9: dig the bed" in out
    assert "Reader" not in out


def test_links_drawn_as_buttons_are_controls():
    buttons = (
        "<p><a class='wprm-recipe-print wprm-recipe-link-wide-button' href='/print/1'>"
        "Print recipe</a> <span class='recipe-pin-button'>Pin it</span> "
        "<a role='button' href='#save'>Save</a></p>"
    )
    page = f"<html><body><main><h1>Garden guide</h1>{buttons}{STORY}</main></body></html>"
    out = page_markdown(page, "https://garden.example/guide")
    assert "Part 7 of the guide" in out
    assert "Print recipe" not in out and "Pin it" not in out and "Save" not in out
    # A call to action with something to say is text.
    offer = "<a class='btn' href='/join'>Join the allotment society today</a>"
    out = page_markdown(page.replace(buttons, offer), "https://garden.example/guide")
    assert "Join the allotment society today" in out


def test_a_highlighter_s_comment_spans_stay_in_the_code():
    code = (
        "<pre><code class='language-bash'><span class='hljs-comment'># start a repository"
        "</span>\ngit init\n<span class='hljs-comment'># see what changed</span>\ngit status"
        "</code></pre>"
    )
    page = f"<html><body><main><h1>Git in brief</h1>{STORY}{code}</main></body></html>"
    out = page_markdown(page, "https://blog.example/git")
    assert "# start a repository\ngit init\n# see what changed\ngit status" in out


def test_a_teaser_paragraph_is_the_story_s_lead():
    # A CMS names the story's lead paragraph its "teaser"; a teaser box of other stories
    # is still boilerplate.
    page = (
        "<html><body><main><h1>Garden guide</h1><p class='article-teaser'>Spring is the "
        f"time to start a vegetable garden, and it takes less than you think.</p>{STORY}"
        "<div class='teaser-box'><p>Read next: pruning roses in winter without harming "
        "the plant.</p></div></main></body></html>"
    )
    out = page_markdown(page, "https://garden.example/guide")
    assert "it takes less than you think" in out
    assert "pruning roses" not in out


def test_a_table_is_data_whatever_its_class_says():
    rows = "".join(f"<tr><td>Team {i}</td><td>{30 - i} points</td></tr>" for i in range(12))
    page = (
        "<html><body><main><h1>League table</h1><p>The standings after the last round of "
        f"the season, with the points each team won.</p>{STORY}"
        f"<table class='wikitable sortable sticky-header'>{rows}</table></main></body></html>"
    )
    out = page_markdown(page, "https://sport.example/league")
    assert "| Team 11 | 19 points |" in out


def test_a_block_s_own_header_is_not_the_site_s():
    # "category-header", "listicle-header": the header of a part of the page, with its
    # intro. "header-top" and "site-header" are the site's.
    page = (
        "<html><body><div class='header-top'><p>Free delivery on orders over fifty euros, "
        "every day of the week.</p></div><main><h1>Garden guide</h1>"
        "<div class='listicle-header'><p>Ten steps to a vegetable garden that feeds a family "
        f"of four from June to October.</p></div>{STORY}</main></body></html>"
    )
    out = page_markdown(page, "https://garden.example/guide")
    assert "feeds a family of four" in out
    assert "Free delivery" not in out


def test_a_carousel_is_content_but_on_a_product_page():
    # A service page's testimonials are a carousel; a product page's carousel shows other
    # products.
    quotes = "".join(
        f"<div class='slide'><p>Client {i} says the garden design team planned the beds, "
        f"laid the paths and finished on time and on budget.</p></div>"
        for i in range(3)
    )
    carousel = f"<div class='owl-carousel testimonial-carousel'>{quotes}</div>"
    page = f"<html><body><main><h1>Garden design</h1>{STORY}{carousel}</main></body></html>"
    assert "Client 2 says" in page_markdown(page, "https://garden.example/design")
    product = page.replace(
        "<html>",
        "<html><head><script type='application/ld+json'>"
        '{"@type": "Product", "name": "Garden design"}</script></head>',
    )
    assert "Client 2 says" not in page_markdown(product, "https://garden.example/design")


def test_a_post_served_in_noscript_is_kept():
    # A blog platform draws the post with a script (its text in the script) and serves it
    # to clients without JavaScript in <noscript>: that copy is the content.
    post = "".join(
        f"<p>Safe browsing now checks address {i} against a list that updates hourly.</p>"
        for i in range(4)
    )
    script = "<script>var post = " + 20 * "'Safe browsing now checks each address'; " + "</script>"
    page = (
        "<html><body><div class='header'><a href='/'>Security Blog</a></div>"
        f"<div class='post-body'>{script}<noscript>{post}</noscript></div>"
        "<p>Labels: browsing, safety</p></body></html>"
    )
    assert page_markdown(page, "https://blog.example/p").count("updates hourly") == 4
    # A short fallback is not content: a page that needs scripts has none without them.
    app = "<html><body><noscript>You need to enable JavaScript to run this app.</noscript>"
    assert "enable JavaScript" not in page_markdown(app + "</body></html>", "https://a.example/")


def test_a_thread_marked_as_a_discussion_keeps_its_replies():
    # The question is an article's length, and the replies sit in a "comments" block:
    # on an article they are comments, on a page marked as a discussion they are posts.
    question = 8 * (
        "<p>I am weighing a move from an internship at a big firm to a small consultancy "
        "and would like to hear from people who did it.</p>"
    )
    replies = "".join(
        f"<div class='comment'><p>Reply {i}: I made that move two years ago and the work "
        f"is broader, the hours shorter and the pay about the same.</p></div>"
        for i in range(3)
    )
    page = (
        "<html><head>{markup}</head><body><main><h1>Is consulting worth it?</h1>"
        f"<div class='post-body'>{question}</div>"
        f"<section id='comments' class='comments'>{replies}</section></main></body></html>"
    )
    thread = '<script type="application/ld+json">{"@type": "DiscussionForumPosting"}</script>'
    assert "Reply 2: I made" in page_markdown(page.format(markup=thread), "https://f.example/t")
    assert "Reply 2" not in page_markdown(page.format(markup=""), "https://f.example/t")


def test_posts_wrapped_in_a_moderation_form_are_kept():
    posts = "".join(
        f"<article class='post'><h3>member{i}</h3><p>Post {i}: the new case fits a full "
        f"size tower cooler and three fans at the front, with room left for cables.</p>"
        f"<p>The glass panel comes off without tools, which helps when you build.</p>"
        f"</article>"
        for i in range(5)
    )
    menu = "".join(f"<li><a href='/f{i}'>Forum section {i}</a></li>" for i in range(80))
    page = (
        f"<html><body><div class='forums'><ul>{menu}</ul></div><h1>New case</h1>"
        f"<form action='/topic/1?do=multimodComment' method='post'>{posts}"
        "<input type='checkbox' name='moderate'></form>"
        "<form action='/search'><p>Search the forum</p><input name='q'></form></body></html>"
    )
    out = page_markdown(page, "https://forum.example/topic/1")
    assert out.count("fits a full size tower cooler") == 5
    assert "Search the forum" not in out


def test_comments_each_in_a_form_of_their_own_are_kept():
    # Each comment's text sits in its own edit form: one form is small, the forms of
    # that class together are the page.
    comments = "".join(
        f"<div class='entry'><p class='tagline'>user{i} 12 points</p>"
        f"<form class='usertext'><p>Comment {i}: could this also help with tinnitus if "
        f"the inner ear grows new hair cells?</p></form></div>"
        for i in range(6)
    )
    page = (
        "<html><body><form id='search'><p>search reddit</p><input name='q'></form>"
        f"<h1>New hair cells grown in the lab</h1><div class='comments'>{comments}</div>"
        "</body></html>"
    )
    out = page_markdown(page, "https://old.example/r/science/1")
    assert out.count("help with tinnitus") == 6
    assert "search reddit" not in out


def test_an_article_after_an_early_end_of_the_page_is_kept():
    page = (
        "<html><body><header><nav><a href='/'>Home</a></nav></header></body></html>"
        f"<div class='blog'><h1>Start a vegetable garden</h1>{STORY}</div></body></html>"
    )
    assert page_markdown(page, "https://garden.example/start").count("how much water") == 8


def test_an_accordion_panel_a_control_opens_is_kept():
    # Each step's panel is hidden until its header is clicked; nothing in its own
    # names says so, but the header's aria-controls names it.
    steps = "".join(
        f"<div class='item'><button aria-controls='step{i}'>Step {i}</button>"
        f"<div id='step{i}' style='display:none'><p>In step {i} the installer checks the "
        f"roof, the wiring and the permits before any panel goes up.</p></div></div>"
        for i in range(4)
    )
    intro = 3 * "<p>Installing solar panels takes five steps over about three months.</p>"
    page = (
        f"<html><body><main><h1>How to install solar panels</h1>{intro}"
        f"<div class='steps'>{steps}</div><div style='display:none'><p>A note that stays "
        "hidden, for whoever edits the page later.</p></div></main></body></html>"
    )
    out = page_markdown(page, "https://solar.example/install")
    assert out.count("the installer checks the roof") == 4
    assert "A note that stays hidden" not in out
    # A flyout that a button opens and that holds no prose (a league table) stays shut.
    table = "".join(f"<tr><td>{i}.</td><td>Team {i}</td><td>{40 - i}</td></tr>" for i in range(18))
    flyout = (
        "<button aria-controls='fly'>Table</button>"
        f"<div id='fly' aria-hidden='true'><table>{table}</table></div>"
    )
    out = page_markdown(page.replace("<main>", flyout + "<main>"), "https://solar.example/install")
    assert "Team 3" not in out


def test_collapsed_answers_marked_aria_hidden_are_kept():
    faq = "".join(
        f"<div class='faq'><h3>Question {i}?</h3><div class='accordion-inner' "
        f"aria-hidden='true'><p>Answer {i}: the plan covers accidents and illnesses, "
        f"with one deductible a year.</p></div></div>"
        for i in range(3)
    )
    page = (
        "<html><body><main><h1>Pet insurance</h1><p>Help protect your pet and your "
        f"budget from unexpected vet bills.</p>{faq}<div aria-hidden='true'><p>Pet "
        "insurance, pet insurance, pet insurance</p></div></main></body></html>"
    )
    out = page_markdown(page, "https://insure.example/pet")
    assert out.count("covers accidents and illnesses") == 3
    assert "pet insurance, pet insurance" not in out.lower()


def news_page(before: str, after: str, article: bool = True) -> str:
    """The story, marked as an article by Open Graph or not."""
    markup = "<meta property='og:type' content='article'>" if article else ""
    return (
        f"<html><head>{markup}</head><body><main><h1>Start a vegetable garden</h1>"
        f"{before}{STORY}{after}</main></body></html>"
    )


def _rail(name: str) -> str:
    items = "".join(
        f"<li><a href='/news/{name[:4]}-{i}'>Another story of the garden, with a headline of "
        f"a dozen words, number {i}</a></li>"
        for i in range(10)
    )
    return f"<h3>{name}</h3><ol>{items}</ol>"


def test_rails_of_links_below_a_story_go_however_long_they_are():
    # Lists of other stories below an article ("Most read", "On the same topic") may be
    # more words than the story: on an article, those after the story still go.
    rails = _rail("Most read") + _rail("On the same topic")
    out = page_markdown(news_page("", rails), "https://news.example/garden")
    assert out.count("how much water") == 8
    assert "Another story" not in out and "Most read" not in out
    # On a page not marked as an article, lists of links that outweigh the text are the
    # content (an index with an introduction): they stay.
    out = page_markdown(news_page("", rails, article=False), "https://news.example/garden")
    assert "Another story of the garden, with a headline of a dozen words, number 9" in out


def test_a_photo_caption_is_not_part_of_the_content():
    figure = (
        "<figure><img src='/storm.jpg' alt='Waves crash'><figcaption>Waves on the pier. "
        "Photo: Jane Doe</figcaption></figure>"
    )
    for article in (True, False):
        page = news_page(figure, "", article=article)
        out = page_markdown(page, "https://news.example/storm")
        assert out.count("how much water") == 8
        assert "Photo: Jane Doe" not in out and "Waves" not in out
    # Captions in the markup of a blogging platform or a CMS, without <figcaption>.
    for caption in (
        "<div class='wp-caption'><img src='/storm.jpg'><p class='wp-caption-text'>Waves on "
        "the pier. Photo: Jane Doe</p></div>",
        "<div class='caption'><img src='/storm.jpg'><div class='copyright'>Photo: Jane Doe"
        "</div></div>",
    ):
        out = page_markdown(news_page(caption, "", article=False), "https://news.example/s")
        assert out.count("how much water") == 8
        assert "Jane Doe" not in out
    # A credit under a photo, with no caption markup at all.
    credit = "<p><img src='/storm.jpg' alt=''><br>Waves on the pier. Foto: Jane Doe</p>"
    out = page_markdown(news_page(credit, "", article=False), "https://news.example/s")
    assert "Jane Doe" not in out
    # On a documentation site's page the caption says what the figure shows.
    generator = "<head><meta name='generator' content='mkdocs-1.6.1, mkdocs-material-9.8.2'>"
    page = news_page(figure, "", article=False).replace("<head>", generator)
    assert "Photo: Jane Doe" in page_markdown(page, "https://docs.example/storm")


def test_an_article_ends_with_its_last_paragraph():
    furniture = "<p>Share this article</p><h3>More on this</h3>"
    out = page_markdown(news_page("", furniture), "https://news.example/storm")
    assert out.count("how much water") == 8
    assert "Share this article" not in out and "More on this" not in out
    page = news_page("", furniture, article=False)
    assert "Share this article" in page_markdown(page, "https://news.example/storm")


def test_a_lead_beside_the_body_comes_with_it():
    # The page header holds the h1 and the summary; the body is a column of its own that
    # holds most of the text, so the content search settles on it.
    page = (
        "<html><body><div class='intro'><h1>Berlin opens its archives</h1>"
        "<p class='standfirst'>The German capital has launched a five-year project to research "
        "its colonial past.</p><p><a href='/topics/berlin'>Berlin</a></p></div>"
        f"<div class='columns'><div class='col'>{STORY}</div>"
        "<div class='col-side'><p>Ad</p></div></div></body></html>"
    )
    out = page_markdown(page, "https://news.example/berlin")
    assert out.startswith("# Berlin opens its archives\n\nThe German capital has launched")
    assert out.count("how much water") == 8
    assert "[Berlin]" not in out


def test_a_lead_named_so_comes_with_the_body_wherever_it_sits():
    # No h1 to start from: the subtitle sits in a header block of its own, the story in a
    # column far below. Its class says what it is.
    page = (
        "<html><body><div class='top'><div class='entry__header'><p class='entry__subtitle'>"
        "Temperatures will drop by ten degrees within a few hours, forecasters say.</p>"
        "</div></div><div class='main'><div class='entry'>"
        f"{STORY}{STORY.replace('Part', 'Step')}</div></div></body></html>"
    )
    out = page_markdown(page, "https://news.example/cold")
    assert out.startswith("Temperatures will drop by ten degrees")
    assert "Step 7 of the guide" in out


def test_an_article_s_own_header_keeps_its_lead():
    page = (
        "<html><body><header class='site-header'><a href='/'>Home</a></header><main>"
        "<article><header class='entry-header'><h1>Letters over a photo</h1><div "
        "class='entry-excerpt'><p>Since December 2015 a law firm has been asking bloggers "
        f"for money.</p></div></header><div class='entry-content'>{STORY}</div></article>"
        "</main></body></html>"
    )
    out = page_markdown(page, "https://blog.example/letters")
    assert "Since December 2015 a law firm" in out and out.count("how much water") == 8
    assert "Home" not in out


def test_a_source_listing_is_one_code_block():
    # Sphinx's viewcode pages wrap each definition in a div inside the <pre>: the
    # container search stops at the <pre>, which is converted whole, as code.
    blocks = "".join(
        f'<div class="viewcode-block" id="f{i}">def function_{i}(argument):\n'
        f'    """Function {i} returns its argument unchanged, as documented."""\n'
        f"    return argument\n</div>"
        for i in range(4)
    )
    # One class holds most of the module, as a real module's main class does.
    blocks += (
        '<div class="viewcode-block" id="c">class Adapter:\n'
        + "".join(
            f"    def method_{i}(self):\n        return {i}  # method {i} of many\n"
            for i in range(40)
        )
        + "</div>"
    )
    page = (
        "<html><body><div class='body'><h1>Source code for mod</h1>"
        f"<div class='highlight'><pre>import os\n\n{blocks}</pre></div></div></body></html>"
    )
    out = page_markdown(page, "https://docs.example/_modules/mod.html")
    assert "```\nimport os\n\ndef function_0(argument):" in out
    assert "def function_3(argument):" in out and "def method_39(self):" in out


def test_a_product_hidden_until_scripts_run_is_read_past_a_big_menu():
    # The product is hidden until the page's scripts run; the mega menu in the header
    # outweighs it, but once the chrome is gone it is most of what is left.
    menu = "".join(
        f"<li><a href='/c/{i}'>Category number {i} of the shop</a></li>" for i in range(60)
    )
    page = (
        f"<html><body><header><nav><ul>{menu}</ul></nav></header>"
        f"<div class='product-wrapper defer-block' style='display: none'><h1>Almond thins</h1>"
        f"{STORY}</div><p style='display:none'>Added to your basket.</p></body></html>"
    )
    out = page_markdown(page, "https://shop.example/almond-thins")
    assert out.startswith("# Almond thins\n") and "Part 7 of the guide" in out
    assert "Category number" not in out and "Added to your basket" not in out


BOOK_CHAPTER = """<html><head><title>References and Borrowing - The Book</title></head><body>
<nav class="sidebar"><ol><li><a href="ch04-01.html">4.1 Ownership</a></li>
<li><a href="ch04-02.html">4.2 References and Borrowing</a></li></ol></nav>
<div class="page"><main>
<h1>References and Borrowing</h1>
<p>The issue with the tuple code in Listing 4-4 is that we have to return the String to the
calling function so we can still use the String after the call.</p>
<figure class="listing"><span class="file-name">Filename: src/main.rs</span>
<pre><code class="language-rust">fn main() {
    let s1 = String::from("hello");
}</code></pre>
<figcaption>Listing 4-4: Returning ownership of parameters</figcaption></figure>
<p>Table 4-1 lists what each kind of reference allows; a photo of the team follows.</p>
<figure><table><tr><th>kind</th><th>mutates</th></tr><tr><td>shared</td><td>no</td></tr>
</table><figcaption>Table 4-1: Kinds of references</figcaption></figure>
<table><caption>Table 4-2: Lifetimes</caption><tr><th>name</th></tr><tr><td>'a</td></tr></table>
<figure><img src="team.jpg" alt="The team"><figcaption>The team in Berlin, 2019. Photo: Jane
Doe</figcaption></figure>
<p>We call the action of creating a reference borrowing: if a person owns something, you
can borrow it from them, and when you are done, you have to give it back.</p>
</main></div></body></html>"""


def test_captions_of_code_and_tables_stay_where_photo_captions_go():
    """The text says "Listing 4-4 shows": the caption that names it stays, on any site."""
    out = page_markdown(BOOK_CHAPTER, "https://book.example/ch04-02.html")
    assert "Filename: src/main.rs\n\n```rust\n" in out
    assert "}\n```\n\nListing 4-4: Returning ownership of parameters\n\n" in out
    assert "| shared | no |\n\nTable 4-1: Kinds of references\n\n" in out
    assert "Table 4-2: Lifetimes\n\n| name |" in out
    assert "Berlin" not in out and "The team" not in out  # a photo's caption still goes


API_PAGE = """<html><head><title>Vec in std::vec - Rust</title></head><body>
<nav class="sidebar"><ul><li><a href="#method.new">new</a></li>
<li><a href="#method.len">len</a></li></ul></nav>
<main><section id="main-content" class="content">
<div class="main-heading"><h1>Struct <span class="struct">Vec</span></h1>
<span class="sub-heading"><span class="since" title="Stable since Rust version 1.0.0">1.0.0</span>
 · <a class="src" href="../../src/alloc/vec/mod.rs.html#397">Source</a></span></div>
<pre class="rust item-decl"><code>pub struct Vec&lt;T&gt; { /* private fields */ }</code></pre>
<details class="toggle top-doc" open><summary class="hideme"><span>Expand description</span>
</summary><div class="docblock"><p>A contiguous growable array type, written as
<code>Vec&lt;T&gt;</code>, short for vector. It holds its elements in one allocation.</p>
</div></details>
<details class="toggle method-toggle" open><summary><section id="method.new" class="method">
<span class="rightside"><span class="since" title="const since 1.39.0">1.0.0 (const: 1.39.0)</span>
 · <a class="src" href="../../src/alloc/vec/mod.rs.html#420">Source</a></span>
<h4 class="code-header">pub const fn new() -&gt; Vec&lt;T&gt;</h4></section></summary>
<div class="docblock"><p>Constructs a new, empty vector; it will not allocate until elements
are pushed onto it.</p></div></details>
<details class="toggle"><summary class="hideme"><span>Show 12 methods</span></summary>
<div class="docblock"><p>Returns the number of elements in the vector, its length.</p></div>
</details>
<h2>Questions</h2>
<details><summary>What does a vector cost to create?</summary><p>Nothing until it holds
an element: an empty vector does not allocate.</p></details>
<details><summary>Details of the growth strategy</summary><p>The capacity doubles.</p></details>
<p>Changed in this release: <span class="version">version 2 reads the old files too, and
writes the new format.</span></p>
<p>See the <a class="src" href="/guide">source of truth</a> and <a href="/data">Source</a>.</p>
</section></main></body></html>"""


def test_toggle_labels_version_badges_and_source_links_are_not_text():
    """rustdoc's "Expand description" and "1.0.0 · Source" beside every item are its UI;
    the summaries that say something, and a version note that says more, stay."""
    out = page_markdown(API_PAGE, "https://doc.example/std/vec/struct.Vec.html")
    for ui in ("Expand description", "Show 12 methods", "1.0.0", "1.39.0", "src/alloc", "·"):
        assert ui not in out, ui
    assert "# Struct Vec\n\n```rust\npub struct Vec<T>" in out
    assert "#### pub const fn new() -> Vec\\<T>\n\nConstructs a new, empty vector" in out
    assert "Returns the number of elements" in out  # the fold's content stays
    assert "What does a vector cost to create?\n\nNothing until" in out
    assert "Details of the growth strategy" in out
    assert "version 2 reads the old files too" in out
    assert "[source of truth](https://doc.example/guide)" in out
    assert "[Source](https://doc.example/data)" in out  # a link that is not the item's source


@pytest.mark.parametrize("section", ['<section id="{}">', '<div class="section" id="{}">'])
@pytest.mark.parametrize("nested", [True, False])
def test_a_long_section_does_not_leave_its_siblings_behind(section, nested):
    """A Sphinx page's sections, under its title's section or beside it: one of them
    holds most of the words, the short ones beside it (with their code) are the page's
    too."""
    close = "</section>" if section.startswith("<section") else "</div>"
    title = f"{section.format('contributing')}<h1>Contributing</h1>"
    if not nested:
        title += f"<p>How to help.</p>{close}"
    reference = "".join(
        f"<p>The reference paragraph {n} explains one more option of the service.</p>"
        for n in range(30)
    )
    page = f"""<html><body><nav class="sidebar"><a href="/">Home</a></nav>
<div role="main">{title}
{section.format("tests")}<h2>Tests</h2><p>Include tests in your pull requests.</p>
<div class="highlight-shell"><pre>pytest tests</pre></div>{close}
{section.format("install")}<h2>Installation</h2><p>Clone the repository and run:</p>
<div class="highlight-shell"><pre>pip install -e .</pre></div>{close}
{section.format("reference")}<h2>Developer documentation</h2>{reference}{close}
{close if nested else ""}</div></body></html>"""
    markdown = page_markdown(page, "https://docs.example/contributing.html")
    for kept in ("# Contributing", "## Tests", "pytest tests", "pip install -e .", "option"):
        assert kept in markdown
    assert "Home" not in markdown


SPHINX = '<script src="_static/documentation_options.js?v=5929fcd5"></script>'


@pytest.mark.parametrize(
    "marker",
    [
        SPHINX,
        '<meta name="generator" content="javadoc/ClassWriterImpl">',
        '<meta name="generator" content="rustdoc">',
    ],
)
def test_an_api_reference_keeps_the_docstring_two_methods_share(marker):
    doc = (
        "<p>Translate a group of selectors to XPath.</p>"
        "<p>Pseudo-elements are not supported here since XPath only knows real elements.</p>"
        "<ul><li>css: a group of selectors as a string.</li>"
        "<li>prefix: prepended to the XPath expression for each selector.</li></ul>"
    )
    page = f"""<html><head>{marker}</head><body><div role="main"><h1>API</h1>
<h2>GenericTranslator.css_to_xpath</h2>{doc}<h2>HTMLTranslator.css_to_xpath</h2>{doc}
</div></body></html>"""
    markdown = page_markdown(page, "https://docs.example/api.html")
    assert markdown.count("Pseudo-elements are not supported") == 2
    assert markdown.count("prefix: prepended") == 2
    # Elsewhere a passage shown twice (a carousel's clones) is said once.
    assert page_markdown(page.replace(marker, ""), "https://x.example/").count("prefix:") == 1


def test_a_box_around_code_is_code_whatever_its_name():
    """mkdocstrings puts a function's signature in a "doc-signature" box: a forum's
    "signature" is boilerplate, a listing is not."""
    page = """<html><body><article><h1>Applications</h1>
<p>Starlette includes an application class that ties the other functionality together.</p>
<div class="doc-signature highlight"><pre><code>Starlette(debug: bool = False, routes=None)</code>
</pre></div>
<p>Creates an application. Every parameter is optional and has a sensible default.</p>
<div class="signature">Posted by a forum member, who signs every post of the thread.</div>
</article></body></html>"""
    markdown = page_markdown(page, "https://docs.example/applications/")
    assert "Starlette(debug: bool = False, routes=None)" in markdown
    assert "Posted by a forum member" not in markdown


@pytest.mark.parametrize("docs", [True, False])
def test_a_docs_page_keeps_the_asides_set_in_its_text(docs):
    """docutils sets ``.. contents::``, ``.. sidebar::`` and ``.. topic::`` inside a
    section as ``<nav>`` and ``<aside>``, and ``:menuselection:`` as a span named "menu".
    Elsewhere an aside in a section is the site's."""
    page = f"""<html><head>{SPHINX if docs else ""}</head><body>
<nav class="wy-nav-side"><a href="/">Docs home</a> <a href="/api">API</a></nav>
<div role="main"><section id="demo"><h1>Demo</h1>
<nav class="contents" id="toc"><p class="topic-title">Table of Contents</p>
<ul><li><a href="#one">Paragraph markup</a></li>
<li><a href="#two">Literal blocks</a></li></ul></nav>
<section id="one"><h2>Paragraph markup</h2>
<p>Open <span class="menuselection">File ‣ Settings</span> to change the theme of the docs.</p>
<aside class="sidebar"><p class="sidebar-title">Ch'ien</p><p>A sidebar beside the text.</p></aside>
<p>A paragraph of the page's own text, long enough to be read as the content here.</p></section>
<section id="two"><h2>Literal blocks</h2><p>Another paragraph of the page's text.</p></section>
</section></div></body></html>"""
    markdown = page_markdown(page, "https://docs.example/demo.html")
    kept = ("- Paragraph markup", "File ‣ Settings", "A sidebar beside the text.")
    assert all((part in markdown) is docs for part in kept), markdown
    assert "Docs home" not in markdown


def test_math_hidden_from_screen_readers_is_seen():
    # MediaWiki: the MathML is hidden (for screen readers, which read it from the image's
    # alt), the image of the formula is hidden from screen readers: the eye sees it.
    formula = (
        '<span class="mwe-math-element"><span class="mwe-math-mathml-inline mwe-math-mathml-a11y"'
        ' style="display: none;"><math alttext="{\\displaystyle \\pi r^{2}}"><mi>π</mi></math>'
        '</span><img src="/math/a.svg" class="mwe-math-fallback-image-inline mw-invert"'
        ' aria-hidden="true" alt="{\\displaystyle \\pi r^{2}}"></span>'
    )
    page = (
        "<html><body><main><h1>Circle</h1><p>A circle of radius r has the area "
        f"{formula}, which the Greeks approximated by polygons with many sides.</p>"
        '<p>Icon <img src="/i.svg" class="icon" aria-hidden="true" alt="star"> here.</p>'
        "</main></body></html>"
    )
    md = page_markdown(page, URL)
    assert "the area $\\pi r^{2}$, which" in md
    assert "star" not in md


def test_a_footnotes_way_back_goes():
    page = (
        "<html><body><main><h1>Notes</h1><p>A claim that needs a source, and more words "
        'about it<sup id="r1"><a href="#fn1">1</a></sup>.</p><ol class="footnotes">'
        '<li id="fn1">Seneca, letters. [<a href="#r1" class="footnote-back-link">↩</a>]</li>'
        '<li id="fn2">Second note. <a href="#r2">↩︎</a></li>'
        '<li id="fn3"><a href="#r3">^</a> Third note.</li></ol></main></body></html>'
    )
    md = page_markdown(page, URL)
    assert "1. Seneca, letters.\n2. Second note.\n3. Third note." in md
    assert "↩" not in md and "[]" not in md


def test_a_table_of_link_trees_is_a_navigation_box():
    # Wikipedia's sidebar: a table whose rows hold nested lists of links to other articles.
    rows = "".join(
        f'<tr><td><div class="hlist"><ul><li><a href="/wiki/T{n}">Topic {n}</a><ul>'
        f'<li><a href="/wiki/S{n}a">Subtopic {n} a</a></li><li><a href="/wiki/S{n}b">Subtopic '
        f"{n} b</a></li></ul></li></ul></div></td></tr>"
        for n in range(6)
    )
    page = (
        "<html><body><div id='content'><h1>Embedding</h1>"
        f'<table class="vertical-navbox nowraplinks">{rows}</table>'
        "<p>An embedding maps each object to a point in a space of few dimensions, so that "
        "objects alike land close together and objects unlike land far apart.</p>"
        "<p>It is computed by gradient descent on a divergence between two distributions of "
        "neighbours, one in each space, which the method keeps as close as it can.</p>"
        "</div></body></html>"
    )
    md = page_markdown(page, URL)
    assert "gradient descent" in md
    assert "Subtopic" not in md and "Topic 1" not in md


def test_chinese_text_is_weighed_by_its_characters():
    # Chinese puts no space between words: a paragraph of it is no lighter than a one-word
    # link, and the columns of linked headlines under the story are no part of it.
    story = "".join(
        f"<p>益阳市第{n}次会议讨论了数字经济的发展，专家认为互联网、大数据和人工智能"
        "等新技术正在改变乡村的生活方式，许多年轻人回到家乡创业。</p>"
        for n in range(1, 7)
    )
    top = "".join(
        f'<li><em>{n}、</em><a href="/yw/{n}">国务院部署第{n}项重点工作</a></li>'
        for n in range(1, 11)
    )
    shop = "".join(
        f'<li><h3><a href="/shop">{y}年半月谈</a></h3><a href="/shop">{y}年半月谈</a>'
        '<a href="/shop">点击订阅</a></li>'
        for y in range(2015, 2019)
    )
    html = (
        "<html><head><title>益阳：数字是优长</title></head><body><div class='main'>"
        f"<div class='top'><h1>益阳：数字是优长</h1><div class='content'>{story}</div></div>"
        "<div class='bottom'><div class='hot'>热门推荐</div><p>学习贯彻精神</p>"
        '<ul><li><a href="/v/1">理论达人：国家安全就是你的安全</a></li>'
        '<li><a href="/v/2">理论应该怎么讲？看看这些年轻人</a></li></ul>'
        f"<p>要闻top10</p><ul>{top}</ul>"
        f'<div><a href="/shop">杂志图书订阅</a><a href="/shop">更多</a></div><ul>{shop}</ul>'
        "</div></div></body></html>"
    )
    md = page_markdown(html, "https://news.example/a/1")
    assert md.count("益阳市第") == 6
    for gone in ("热门推荐", "理论应该", "国务院部署", "杂志图书订阅", "点击订阅"):
        assert gone not in md, gone


WHOLE_STORY = " ".join(f"Sentence {i} of the whole story says what came next." for i in range(40))
PAYWALLED = """<html><head><title>The story</title>
<script type="application/ld+json">{ld}</script></head><body><article><h1>The story</h1>
<p>The first lines of the story, all a reader sees before the paywall asks for more.</p>
<p>Subscribe to read the rest.</p></article></body></html>"""


def _story_page(*bodies: str) -> str:
    stories = [{"@type": "NewsArticle", "headline": "The story", "articleBody": b} for b in bodies]
    return PAYWALLED.format(ld=json.dumps(stories[0] if len(stories) == 1 else stories))


def test_a_story_the_page_shows_in_part_is_read_whole_from_its_structured_data():
    url = "https://news.example/story"
    whole = page_markdown(_story_page(f"{WHOLE_STORY}\n{WHOLE_STORY}"), url)
    assert whole == f"# The story\n\n{WHOLE_STORY}\n\n{WHOLE_STORY}\n"
    # Marked up, its markup is read as a page's is.
    marked = page_markdown(_story_page(f"<p>{WHOLE_STORY} <a href='/more'>More</a>.</p>"), url)
    assert marked == f"# The story\n\n{WHOLE_STORY} [More](https://news.example/more).\n"
    # A short one, or a page of several stories (a listing): the page as it is.
    for page in (_story_page("Two words."), _story_page(WHOLE_STORY, WHOLE_STORY + " Again.")):
        assert page_markdown(page, url).startswith("# The story\n\nThe first lines of the story")


# A chapter of an mdBook as current mdBook writes it: the book's name as an h1 in the menu
# bar (and as the og:title of every page), the keyboard help in a popup, the table of
# contents drawn by scripts, the chapter in <main>.
MDBOOK = """<!doctype html><html lang="en"><head><meta charset="UTF-8">
<title>{title} - Genomes in Rust</title>
<meta property="og:title" content="Genomes In Rust">
<script src="toc-d0ef71ba.js"></script></head><body>
<div id="mdbook-help-container"><div id="mdbook-help-popup">
<h2 class="mdbook-help-title">Keyboard shortcuts</h2>
<div><p>Press <kbd>←</kbd> or <kbd>→</kbd> to navigate between chapters</p>
<p>Press <kbd>S</kbd> or <kbd>/</kbd> to search in the book</p>
<p>Press <kbd>?</kbd> to show this help</p><p>Press <kbd>Esc</kbd> to hide this help</p>
</div></div></div>
<div id="mdbook-body-container">
<nav id="mdbook-sidebar" class="sidebar" aria-label="Table of contents">
<mdbook-sidebar-scrollbox class="sidebar-scrollbox"></mdbook-sidebar-scrollbox>
<noscript><iframe class="sidebar-iframe-outer" src="toc.html"></iframe></noscript></nav>
<div id="mdbook-page-wrapper" class="page-wrapper"><div class="page">
<div id="mdbook-menu-bar" class="menu-bar sticky"><div class="left-buttons">
<button id="mdbook-theme-toggle" class="icon-button" type="button">Theme</button></div>
<h1 class="menu-title">Genomes in Rust</h1>
<div class="right-buttons"><a href="print.html" title="Print this book">Print</a></div></div>
<div id="mdbook-content" class="content"><main>{main}</main>
<nav class="nav-wrapper" aria-label="Page navigation">
<a rel="prev" href="a.html" class="mobile-nav-chapters previous">Previous</a></nav>
</div></div></div></div>
<script src="book-a0b12cfe.js"></script></body></html>"""


@pytest.mark.parametrize(
    "main, expected",
    [
        (  # a short chapter: the popup and the menu bar outweigh it
            '<h1 id="intro"><a class="header" href="#intro">Additional Topics</a></h1>'
            "<p>Topics that fit no other chapter of this book.</p>",
            "# Additional Topics\n\nTopics that fit no other chapter of this book.\n",
        ),
        (  # a chapter opening with an h2: its title is the <title>'s, not the book's
            '<h2 id="terms"><a class="header" href="#terms">Terminology</a></h2>'
            "<p>Before the details of the format, a few terms are worth a definition.</p>",
            "# Additional Topics\n\n## Terminology\n\n"
            "Before the details of the format, a few terms are worth a definition.\n",
        ),
    ],
)
def test_an_mdbook_chapter_is_headed_by_its_own_title(main, expected):
    html = MDBOOK.format(title="Additional Topics", main=main)
    doc = parse_document(html)
    assert page_title(doc) == "Additional Topics"
    assert page_markdown(html, "https://b.example/topics.html") == expected


RUSTDOC = """<!doctype html><html lang="en"><head><meta name="generator" content="rustdoc">
<title>{title} - Rust</title></head><body class="rustdoc fn">
<rustdoc-topbar><h2><a href="#">{item}</a></h2></rustdoc-topbar>
<nav class="sidebar"><div class="sidebar-crate"><h2><a href="../index.html">genomes</a>
<span class="version">0.4.1</span></h2></div><section id="rustdoc-toc"><h2 class="location">
<a href="#">{item}</a></h2></section></nav>
<main><div class="width-limiter"><section id="main-content" class="content">
<div class="main-heading"><div class="rustdoc-breadcrumbs"><a href="../index.html">genomes</a>
</div><h1>{heading}&nbsp;<button id="copy-path" title="Copy item path to clipboard">Copy item
path</button></h1><rustdoc-toolbar></rustdoc-toolbar><span class="sub-heading">
<a class="src" href="../../src/genomes/lib.rs.html#1-7">Source</a></span></div>
{body}</section></div></main></body></html>"""


def test_a_rustdoc_function_page_keeps_its_heading_signature_and_docs():
    # Its example is most of its words: the content is still the whole item.
    example = "\n".join(f'    let v{i} = translate(b"ATGTAG", &table);' for i in range(30))
    body = (
        '<pre class="rust item-decl"><code>pub fn translate(seq: &amp;[<a class="primitive" '
        'href="#">u8</a>], table: &amp;<a class="struct" href="struct.Table.html">Table</a>)'
        "</code></pre>"
        '<details class="toggle top-doc" open><summary class="hideme"><span>Expand '
        'description</span></summary><div class="docblock"><p>Translates a sequence.</p>'
        '<h2 id="examples"><a class="doc-anchor" href="#examples">§</a>Examples</h2>'
        '<div class="example-wrap"><pre class="rust rust-example-rendered"><code>fn main() {\n'
        f"{example}\n}}</code></pre></div></div></details>"
    )
    html = RUSTDOC.format(
        title="translate in genomes", item="translate", heading="Function translate", body=body
    )
    md = page_markdown(html, "https://docs.example/genomes/fn.translate.html")
    assert md.startswith(
        "# Function translate\n\n```rust\npub fn translate(seq: &[u8], table: &Table)\n```\n\n"
        "Translates a sequence.\n\n## Examples\n\n```rust\nfn main() {\n"
    )
    assert "Copy item" not in md and "Expand description" not in md and "Source" not in md


def test_a_rustdoc_module_page_keeps_its_listing():
    body = (
        '<h2 id="modules" class="section-header">Modules<a href="#modules" class="anchor">§</a>'
        '</h2><dl class="item-table"><dt><a class="mod" href="dna/index.html">dna</a></dt>'
        '<dt><a class="mod" href="rna/index.html">rna</a></dt>'
        '<dt><a class="mod" href="protein/index.html">protein</a></dt></dl>'
    )
    html = RUSTDOC.format(title="genomes::seq", item="Module seq", heading="Module seq", body=body)
    md = page_markdown(html, "https://docs.example/genomes/seq/index.html")
    assert md.startswith("# Module seq\n\n## Modules\n\n")
    for name in ("dna", "rna", "protein"):
        assert f"[{name}](https://docs.example/genomes/seq/{name}/index.html)" in md


def test_a_docs_section_named_like_chrome_keeps_its_heading():
    # Sphinx gives a section its heading's slug as id: "Sponsors" is no sponsor box.
    html = (
        "<html><head><title>Sponsors - Acme 2.8 documentation</title>"
        '<script src="_static/documentation_options.js"></script></head><body>'
        '<div class="sidebar-brand"><h1 class="brand">Acme 2.8 documentation</h1></div>'
        '<article role="main"><section id="sponsors"><h1>Sponsors<a class="headerlink" '
        'href="#sponsors">¶</a></h1><p>Please consider sponsoring the development of Acme, '
        "which many companies depend on every day.</p></section></article></body></html>"
    )
    assert page_markdown(html, "https://docs.example/sponsors.html") == (
        "# Sponsors\n\nPlease consider sponsoring the development of Acme, which many "
        "companies depend on every day.\n"
    )


def test_a_vitepress_code_block_says_its_language_once():
    # VitePress labels a block with its language beside the <pre>, in a wrapper named so.
    html = (
        '<html><head><meta name="generator" content="VitePress v1.6.4"><title>Footer | '
        'VitePress</title></head><body><main><div class="vp-doc"><h1 id="f">Footer</h1>'
        "<p>The footer shows when the theme's footer setting is present in the config.</p>"
        '<div class="language-ts vp-adaptive-theme"><button title="Copy code" class="copy">'
        '</button><span class="lang">ts</span><pre class="shiki vp-code"><code>'
        '<span class="line">export default {}</span></code></pre></div></div></main></body></html>'
    )
    assert page_markdown(html, "https://docs.example/footer.html") == (
        "# Footer\n\nThe footer shows when the theme's footer setting is present in the "
        "config.\n\n```ts\nexport default {}\n```\n"
    )


def test_a_docs_category_page_keeps_its_cards():
    # Docusaurus: a category's page is its title and a card per page, each one link.
    cards = "".join(
        f'<article class="docCardListItem col col--6"><a class="card padding--lg" href="/docs/{p}">'
        f'<h2 class="cardTitle" title="{t}">{t}</h2><p class="cardDescription">{d}</p></a>'
        "</article>"
        for p, t, d in [
            ("versions", "Manage Docs Versions", "Docusaurus can manage multiple versions."),
            ("translate", "Translate your site", "Translate the docs to French."),
        ]
    )
    html = (
        '<html><head><meta name="generator" content="Docusaurus v3.10.2"><title>Extras | '
        'My Site</title></head><body><nav class="navbar"><b class="navbar__title">My Site</b>'
        '</nav><main><article><header><h1>Extras</h1></header><article class="margin-top--lg">'
        f'<section class="row">{cards}</section></article></article></main></body></html>'
    )
    md = page_markdown(html, "https://docs.example/docs/category/extras")
    assert md.startswith("# Extras\n\n")
    assert "Manage Docs Versions" in md and "Translate the docs to French." in md


def test_a_docs_page_that_is_its_title_alone_is_that_title():
    # An empty module: its top bar repeats the title, its heading has a button; an LLM
    # corpus keeps the page, headed once.
    html = RUSTDOC.format(
        title="genomes::empty", item="Module empty", heading="Module empty", body=""
    )
    html = html.replace("<body class=\"rustdoc fn\">", '<body class="rustdoc mod"><rustdoc-topbar>'
                        '<h2><a href="#">Module empty</a></h2></rustdoc-topbar>')  # fmt: skip
    assert page_markdown(html, "https://docs.example/genomes/empty/index.html") == (
        "# Module empty\n"
    )


def test_a_back_to_top_link_is_no_text():
    html = (
        '<html><head><title>Usage - Acme</title><script src="_static/documentation_options.js">'
        '</script></head><body><article role="main"><a href="#" class="back-to-top muted-link">'
        'Back to top</a><section id="usage"><h1>Usage</h1><p>Call the function with a path '
        "and read what it returns, line by line.</p></section></article></body></html>"
    )
    assert page_markdown(html, "https://docs.example/usage.html") == (
        "# Usage\n\nCall the function with a path and read what it returns, line by line.\n"
    )
