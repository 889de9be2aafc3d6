"""``scrapy jobs``: listing crawl jobs with their state and counts, and dropping one."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

from crawlyx.arguments import JOB_NAME
from crawlyx.frontier.jobs import generated_name
from tests.conftest import crawl_command, crawl_env, free_port, read_items
from tests.sites.site import SiteServer

SLOW_HOST = {"CRAWLYX_WINDOW_MIN": 1, "CRAWLYX_WINDOW_START": 2, "CRAWLYX_WINDOW_MAX": 2}
WEEK = 7 * 86400


def start_url(site) -> str:
    return f"http://127.0.0.1:{site.port}/start"


def scrapy_jobs(redis_url, *args, cwd=None):
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "jobs",
        *args,
        "-s",
        f"CRAWLYX_REDIS_URL={redis_url}",
    ]
    return subprocess.run(
        command, capture_output=True, text=True, env=crawl_env(), cwd=cwd, timeout=60
    )


def listed(redis_url, cwd) -> dict[str, dict]:
    out = scrapy_jobs(redis_url, "--json", cwd=cwd)
    assert out.returncode == 0, out.stderr[-2000:]
    return {job["job"]: job for job in json.loads(out.stdout)}


def test_jobs_lists_a_finished_and_a_paused_job_and_drops_one(tmp_path, redis_url, redis_client):
    settings = {"CRAWLYX_REDIS_URL": redis_url, **SLOW_HOST}
    with SiteServer() as small:
        done = tmp_path / "done.jsonl"
        finished = subprocess.run(
            crawl_command(done, f"start={start_url(small)}", settings=settings),
            cwd=tmp_path, env=crawl_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert finished.returncode == 0, finished.stderr[-2000:]
    unnamed = re.search(r"crawlyx: job (\S+) \(resume", finished.stderr).group(1)

    # Long enough (about 20 s at two fetches at a time) to be running at every check
    # below, whatever the machine's load: the crawl is stopped there.
    with SiteServer(generated=400, latency=0.1) as site:
        paused_out = tmp_path / "paused.jsonl"
        command = crawl_command(
            paused_out, f"start={start_url(site)}", "job=jobs-paused", settings=settings
        )
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True
        )
        try:
            deadline = time.monotonic() + 60
            while sum(site.counts.values()) < 15 and time.monotonic() < deadline:
                time.sleep(0.05)
            running = listed(redis_url, tmp_path)["jobs-paused"]
            assert running["state"] == "running" and running["processes"] == 1
            # A running job is not dropped.
            refused = scrapy_jobs(redis_url, "--drop", "jobs-paused", cwd=tmp_path)
            assert refused.returncode == 1
            assert "job jobs-paused is running (1 processes); stop it first" in refused.stderr
            assert redis_client.exists("crawlyx:{jobs-paused}:visited")
        finally:
            proc.send_signal(signal.SIGINT)
            log = proc.communicate(timeout=60)[1]
        assert proc.returncode == 0, log[-2000:]

    jobs = listed(redis_url, tmp_path)
    ended = jobs[unnamed]
    assert ended["state"] == "finished" and ended["last_stop"] == "finished"
    assert ended["pages"] == len(read_items(done)) == len(small.expected_pages())
    assert ended["queued"] == ended["leased"] == 0
    assert ended["start"] == start_url(small)
    # A week from when it finished: the crawls since took minutes on a loaded machine.
    assert ended["expires"] and WEEK - 600 < ended["expires_in"] <= WEEK

    paused = jobs["jobs-paused"]
    assert paused["state"] == "paused" and paused["last_stop"] == "shutdown"
    assert paused["processes"] == 0
    assert paused["pages"] == len(read_items(paused_out)) > 0
    left = redis_client.llen("crawlyx:{jobs-paused}:queue")
    left += redis_client.llen("crawlyx:{jobs-paused}:parked")
    assert paused["queued"] == left > 0
    assert paused["leased"] == 0  # the pause handed every lease back
    assert not paused["expires"] and paused["expires_in"] is None
    assert paused["last_run"] >= ended["last_run"]

    table = scrapy_jobs(redis_url, cwd=tmp_path).stdout.splitlines()
    assert table[-1].startswith("finished and unnamed jobs are kept 7 days after their last run")
    table = table[:-1]
    assert table[0].split() == [
        "job", "state", "pages", "queued", "leased", "last", "run", "(UTC)", "expires", "start",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in table[1:]}
    assert rows["jobs-paused"][1:5] == ["paused", str(paused["pages"]), str(left), "0"]
    assert rows["jobs-paused"][7:] == ["never", start_url(site)]
    assert rows[unnamed][1] == "finished" and rows[unnamed][7:9] == ["6d", "23h"]

    dropped = scrapy_jobs(redis_url, "--drop", "jobs-paused", cwd=tmp_path)
    assert dropped.returncode == 0, dropped.stderr
    assert re.fullmatch(r"crawlyx: dropped job jobs-paused \(\d+ keys\)\n", dropped.stdout)
    assert not list(redis_client.scan_iter("crawlyx:{jobs-paused}:*"))
    assert "jobs-paused" not in listed(redis_url, tmp_path)
    assert redis_client.exists(f"crawlyx:{{{unnamed}}}:visited")  # the other job is untouched

    again = scrapy_jobs(redis_url, "--drop", "jobs-paused", cwd=tmp_path)
    assert again.returncode == 1 and "no job jobs-paused" in again.stderr


def test_a_named_job_runs_again_only_when_there_is_something_to_do(tmp_path, redis_url):
    settings = {"CRAWLYX_REDIS_URL": redis_url, **SLOW_HOST}
    job = f"again-{tmp_path.name}"[:100]

    def command(out, start, *args, overwrite=False):
        command = crawl_command(out, f"start={start}", f"job={job}", *args, settings=settings)
        if overwrite:
            command[command.index("-o")] = "-O"
        return command

    def run(*args, **options):
        return subprocess.run(
            command(*args, **options),
            cwd=tmp_path, env=crawl_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    with SiteServer(generated=40, latency=0.05) as site:
        start = start_url(site)
        first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
        proc = subprocess.Popen(
            command(first, start), cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 60
        while sum(site.counts.values()) < 15 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        log = proc.communicate(timeout=60)[1]
        assert proc.returncode == 0 and f"crawlyx: paused; resume with -a job={job}" in log
        assert re.search(r"crawlyx: paused: \d+ pages in ", log), log[-2000:]
        assert listed(redis_url, tmp_path)[job]["expires_in"] is None  # named and paused

        # Paused: it resumes, to the end; finished, it is kept a week.
        resumed = run(second, start)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        urls = [item["url"] for item in read_items(first) + read_items(second)]
        assert len(urls) == len(set(urls)) and set(urls) == site.expected_pages()
        assert re.search(r"crawlyx: finished: \d+ pages in ", resumed.stderr)
        assert WEEK - 600 < listed(redis_url, tmp_path)[job]["expires_in"] <= WEEK

        # Finished: run again (its start spelled otherwise) with -O, it is refused before
        # anything is fetched or written.
        written, fetched = second.read_bytes(), dict(site.counts)
        again = run(second, start.replace("http:", "HTTP:"), overwrite=True)
        assert again.returncode == 2
        finished = re.fullmatch(
            rf"crawlyx: job {job} finished on (\S+ \S+) UTC with (\d+) pages; use a new job "
            rf"name, -a refresh=1 for what changed since, or scrapy jobs --drop {job}\n",
            again.stderr,
        )
        assert finished, again.stderr[-2000:]
        assert finished[1] == listed(redis_url, tmp_path)[job]["last_run"].replace("T", " ")[:-1]
        assert int(finished[2]) == len(urls)
        assert second.read_bytes() == written

        # Another start URL: refused, naming the job's.
        other = run(tmp_path / "other.jsonl", f"{site.base}/about")
        assert other.returncode == 2
        assert other.stderr == (
            f"crawlyx: job {job} crawls {start}, not {site.base}/about; use a new job name, "
            f"or scrapy jobs --drop {job}\n"
        )
        assert dict(site.counts) == fetched and not (tmp_path / "other.jsonl").exists()

        # refresh=1: the finished job starts afresh, from its start URL.
        refresh = run(second, start, "refresh=1", overwrite=True)
        assert refresh.returncode == 0, refresh.stderr[-2000:]
        assert "crawlyx: finished:" in refresh.stderr
        assert site.counts["/start"] == fetched["/start"] + 1
    again = listed(redis_url, tmp_path)[job]
    assert again["state"] == "finished" and WEEK - 600 < again["expires_in"] <= WEEK


def test_a_crawl_of_a_dead_host_fails_and_says_so_as_jobs_shows_it(tmp_path, redis_url):
    """The last line says what became of the job in the word ``jobs`` then shows."""
    job = f"dead-{tmp_path.name}"[:100]
    out = tmp_path / "pages.jsonl"
    start = f"http://127.0.0.1:{free_port()}/"  # nothing listens there
    quiet = {"CRAWLYX_REDIS_URL": redis_url, "LOG_LEVEL": "WARNING"}
    command = crawl_command(out, f"start={start}", f"job={job}", settings=quiet)
    dead = subprocess.run(
        command, cwd=tmp_path, env=crawl_env(), capture_output=True, text=True, timeout=120
    )
    assert dead.returncode == 1, dead.stderr[-2000:]
    assert dead.stderr.rstrip().splitlines()[-1].startswith("crawlyx: failed: 0 pages in "), (
        dead.stderr[-2000:]
    )
    record = listed(redis_url, tmp_path)[job]
    assert record["state"] == "failed" and record["last_stop"] == "start_failed"
    assert record["queued"] == 1  # the start page, for a run once the host is up
    # max_pages stops a crawl with pages left: paused, and why.
    with SiteServer(generated=20) as site:
        capped = crawl_command(
            tmp_path / "capped.jsonl", f"start={start_url(site)}", "max_pages=2",
            settings=quiet,
        )  # fmt: skip
        result = subprocess.run(
            capped, cwd=tmp_path, env=crawl_env(), capture_output=True, text=True, timeout=120
        )
    assert result.returncode == 0, result.stderr[-2000:]
    last = result.stderr.rstrip().splitlines()[-1]
    assert last.startswith("crawlyx: paused (max_pages): 2 pages in "), last


def test_pages_agree_with_the_output_after_forced_stops(tmp_path, redis_url):
    settings = {"CRAWLYX_REDIS_URL": redis_url, **SLOW_HOST}
    job = f"forced-{tmp_path.name}"[:100]
    out = tmp_path / "pages.jsonl"  # -o: every run appends to it

    def started(site, fetches):
        command = crawl_command(out, f"start={start_url(site)}", f"job={job}", settings=settings)
        proc = subprocess.Popen(command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while sum(site.counts.values()) < fetches and time.monotonic() < deadline:
            time.sleep(0.05)
        return proc

    with SiteServer(generated=120, latency=0.1) as site:
        # Killed outright mid-crawl, twice: nothing runs on the way out.
        for fetches in (20, 45):
            proc = started(site, fetches)
            proc.kill()
            proc.wait(30)
        # Ctrl-C twice: the second stops it at once.
        proc = started(site, 70)
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
        stopped = listed(redis_url, tmp_path)[job]
        assert stopped["state"] == "paused"
        # Then it runs to the end.
        final = subprocess.run(
            crawl_command(out, f"start={start_url(site)}", f"job={job}", settings=settings),
            cwd=tmp_path, env=crawl_env(), capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert final.returncode == 0, final.stderr[-2000:]
    urls = [item["url"] for item in read_items(out)]
    assert set(urls) == site.expected_pages()
    assert len(urls) == len(set(urls)), "a page was written twice"
    # What scrapy jobs says the job emitted is what its output holds.
    ended = listed(redis_url, tmp_path)[job]
    assert ended["state"] == "finished"
    assert ended["pages"] == len(urls) > stopped["pages"]
    table = {line.split()[0]: line.split() for line in scrapy_jobs(redis_url).stdout.splitlines()}
    assert table[job][1:3] == ["finished", str(len(urls))]


def test_an_unusable_data_directory_is_one_line(tmp_path):
    listed = scrapy_jobs("", "-s", "CRAWLYX_DATA_DIR=/dev/null", cwd=tmp_path)
    assert listed.returncode == 1
    assert listed.stderr == (
        "crawlyx: jobs: CRAWLYX_DATA_DIR (/dev/null) cannot hold the embedded Redis: not a "
        "directory; give a directory this user may write, or set CRAWLYX_REDIS_URL\n"
    )


def test_drop_refuses_a_bad_name(tmp_path, redis_url, redis_client):
    redis_client.set("crawlyx:_breadth:keep", 1)
    out = scrapy_jobs(redis_url, "--drop", "_breadth", cwd=tmp_path)
    assert out.returncode == 2 and "bad job name '_breadth'" in out.stderr
    assert redis_client.get("crawlyx:_breadth:keep") == b"1"
    assert "_breadth" not in listed(redis_url, tmp_path)
    redis_client.delete("crawlyx:_breadth:keep")


def test_generated_names_are_valid_job_names():
    now = datetime(2026, 11, 30, 3, 15, 0, tzinfo=UTC)
    name = generated_name("https://Docs.Example.com:8443/a?b=c", now)
    assert re.fullmatch(r"docs\.example\.com-20261130-031500-[0-9a-f]{4}", name)
    # Two crawls started in the same second get different names.
    assert len({generated_name("https://docs.example.com/", now) for _ in range(8)}) > 1
    for start in ("http://[::1]:8080/", "http://xn--bcher-kva.example/", "http://" + "a" * 90):
        assert JOB_NAME.fullmatch(generated_name(start, now)), start
