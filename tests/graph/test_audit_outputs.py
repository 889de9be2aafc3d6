"""The audit's files and their arguments: -a audit=/tree=/llms_txt=/llms_full=, the
pages' markdown kept in Redis for llms-full.txt, the extension's switch, and the
``scrapy audit`` command's answers that need no recorded graph."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

import crawlyx.settings as project
from crawlyx.arguments import ArgumentError, CrawlArgs
from crawlyx.frontier.state import State
from crawlyx.graph.audit import audit, audit_markdown
from crawlyx.graph.extension import Audit, top_findings
from crawlyx.graph.outputs import Outputs, PageMarkdown, write_outputs
from crawlyx.graph.tree import build_tree, llms_txt, tree_markdown
from crawlyx.items import PageItem
from crawlyx.spiders.site import SiteSpider
from tests.conftest import crawl_env
from tests.graph.test_audit import B, site_graph


def test_arguments_take_the_output_paths(tmp_path):
    args = CrawlArgs.parse(
        start="http://127.0.0.1:9/",
        audit=str(tmp_path / "audit.json"),
        tree=str(tmp_path / "tree.md"),
        llms_txt=str(tmp_path / "llms.txt"),
        llms_full=str(tmp_path / "llms-full.txt"),
    )
    assert args.audit.endswith("audit.json") and args.llms_full.endswith("llms-full.txt")
    assert CrawlArgs.parse(start="http://127.0.0.1:9/").audit is None


@pytest.mark.parametrize("name", ["audit", "tree", "llms_txt", "llms_full"])
def test_an_unwritable_output_is_a_bad_argument(name):
    with pytest.raises(ArgumentError, match=f"^{name}: cannot write '/no/such/folder/x'"):
        CrawlArgs.parse(start="http://127.0.0.1:9/", **{name: "/no/such/folder/x"})


def test_write_outputs_json_markdown_tree_and_llms(tmp_path):
    graph = site_graph()
    paths = {name: str(tmp_path / name) for name in ("audit.json", "tree.md", "llms.txt")}
    outputs = Outputs(paths["audit.json"], paths["tree.md"], paths["llms.txt"])
    report = write_outputs(graph, outputs, 4, lambda url: None)
    assert report == audit(graph)
    assert json.loads((tmp_path / "audit.json").read_text()) == report
    tree = build_tree(graph)
    assert (tmp_path / "tree.md").read_text() == tree_markdown(tree, graph)
    assert (tmp_path / "llms.txt").read_text() == llms_txt(tree, graph)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.json", "llms.txt", "tree.md"]

    md = tmp_path / "audit.md"
    assert write_outputs(graph, Outputs(audit=str(md)), 2, None)["depth"]["max_depth"] == 2
    assert md.read_text() == audit_markdown(audit(graph, 2))
    # Nothing asked for the audit: none computed.
    assert write_outputs(graph, Outputs(tree=str(tmp_path / "t.md")), 4, None) == {}


def test_top_findings_what_to_fix_first_first():
    # Broken links and redirect loops before the four links to a redirect.
    text = top_findings(audit(site_graph()))
    lines = text.splitlines()
    assert lines[0] == "site audit of 17 pages:"
    assert lines[1:4] == [
        "- broken links: 3",
        "- redirect loops: 1",
        "- redirect chains of more than one hop: 1",
    ]
    assert lines.index("- links to a redirect: 4") > lines.index("- bad canonicals: 3")
    assert "duplicate descriptions" not in text


def test_page_markdown_round_trip(redis_url, redis_client):
    state = State(redis_client, "audit-md-test")
    store = PageMarkdown(state)
    store.save(B + "/", "# Home\n\ncafé " * 50)
    assert store.get(B + "/") == "# Home\n\ncafé " * 50
    assert store.get(B + "/nothing") is None
    stored = redis_client.hget("crawlyx:{audit-md-test}:graph:md", B + "/")
    assert len(stored) < len("# Home\n\ncafé " * 50)  # compressed
    redis_client.delete("crawlyx:{audit-md-test}:graph:md")


def crawler_with(redis_url, **args):
    settings = {name: value for name, value in vars(project).items() if name.isupper()}
    settings["CRAWLYX_REDIS_URL"] = redis_url
    crawler = get_crawler(SiteSpider, settings_dict=settings)
    crawler._apply_settings()
    crawler.spider = SiteSpider.from_crawler(crawler, start="http://127.0.0.1:9/", **args)
    return crawler


def scraped(crawler, item) -> None:
    crawler.signals.send_catch_log(
        signal=signals.item_scraped, item=item, response=None, spider=crawler.spider
    )


def test_extension_is_off_without_an_output(redis_url):
    crawler = crawler_with(redis_url)
    try:
        with pytest.raises(NotConfigured):
            Audit.from_crawler(crawler)
    finally:
        crawler.spider.parts.workers.close()


def test_extension_keeps_emitted_markdown_for_llms_full(redis_url, redis_client, tmp_path):
    crawler = crawler_with(redis_url, job="audit-ext-test", llms_full=str(tmp_path / "f.txt"))
    try:
        ext = Audit.from_crawler(crawler)
        scraped(crawler, PageItem(url=B + "/old", final_url=B + "/new", markdown="# New\n"))
        scraped(crawler, PageItem(url=B + "/x", final_url=B + "/x", markdown=None))
        assert ext.markdown is not None
        assert PageMarkdown(crawler.crawlyx.state).get(B + "/new") == "# New\n"
        assert redis_client.hkeys("crawlyx:{audit-ext-test}:graph:md") == [(B + "/new").encode()]
        assert crawler.stats.get_value("crawlyx/audit/markdown_saved") == 1
    finally:
        crawler.crawlyx.state.delete_all()
        crawler.spider.parts.workers.close()


def test_extension_keeps_no_markdown_without_llms_full(redis_url, redis_client, tmp_path):
    crawler = crawler_with(redis_url, job="audit-ext-test2", audit=str(tmp_path / "a.json"))
    try:
        ext = Audit.from_crawler(crawler)
        assert ext.outputs == Outputs(audit=str(tmp_path / "a.json"))
        scraped(crawler, PageItem(url=B + "/", final_url=B + "/", markdown="# Home\n"))
        assert ext.markdown is None
        assert not redis_client.exists("crawlyx:{audit-ext-test2}:graph:md")
    finally:
        crawler.spider.parts.workers.close()


def scrapy_audit(redis_url, *args, cwd):
    command = [sys.executable, "-m", "scrapy", "audit", *args]
    command += ["-s", f"CRAWLYX_REDIS_URL={redis_url}"]
    return subprocess.run(
        command, capture_output=True, text=True, env=crawl_env(), cwd=cwd, timeout=60
    )


def test_command_refuses_an_unknown_job_and_bad_options(redis_url, tmp_path):
    out = scrapy_audit(redis_url, "no-such-job", "-o", str(tmp_path / "a.json"), cwd=tmp_path)
    assert out.returncode == 1
    assert out.stderr.strip() == "crawlyx: audit: no job no-such-job (see scrapy jobs)"
    assert not (tmp_path / "a.json").exists()
    nothing = scrapy_audit(redis_url, "some-job", cwd=tmp_path)
    assert nothing.returncode == 2
    assert "nothing to write: give -o, --tree, --llms-txt or --llms-full" in nothing.stderr
    bad = scrapy_audit(redis_url, "some-job", "--tree", "/no/such/folder/t.md", cwd=tmp_path)
    assert bad.returncode == 2 and "--tree: cannot write" in bad.stderr
    assert scrapy_audit(redis_url, "../x", "-o", "a.json", cwd=tmp_path).returncode == 2


def test_command_llms_full_of_a_job_that_kept_no_markdown(site, crawl, redis_url, tmp_path):
    from tests.crawl.test_crawl import start_url

    done = crawl(f"start={start_url(site)}", "job=audit-no-markdown", "max_pages=3")
    assert done.returncode == 0, done.log[-3000:]
    full, report = tmp_path / "full.txt", tmp_path / "audit.json"
    out = scrapy_audit(
        redis_url, "audit-no-markdown", "-o", str(report), "--llms-full", str(full), cwd=tmp_path
    )
    assert out.returncode == 1
    assert out.stderr.strip() == (
        "crawlyx: audit: job audit-no-markdown kept no markdown for llms-full.txt: only a "
        "crawl run with -a llms_full=FILE keeps the pages' markdown"
    )
    assert out.stdout == ""  # nothing "written"
    assert list(tmp_path.glob("full.txt*")) == [] and not report.exists()
    # Without --llms-full, the job's graph is audited as ever.
    audited = scrapy_audit(redis_url, "audit-no-markdown", "-o", str(report), cwd=tmp_path)
    assert audited.returncode == 0, audited.stderr
    assert json.loads(report.read_text())["summary"]["pages"] >= 1
