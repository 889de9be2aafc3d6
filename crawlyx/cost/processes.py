"""CPU time and memory of a crawl's processes, by component.

A crawl is a process tree: the crawl process itself, its page workers (a fork server
and the workers it forks, see crawlyx/content/workers.py), the browser (the Playwright
driver and the Chromium it launches, crawlyx/render/browser.py) and, when crawlyx
started it, the embedded Redis (its watchdog and the server, crawlyx/frontier/watchdog.py).
Each child of the crawl process is put in a component by what it runs, and everything
below it goes with it.

A process's CPU time is read from the system (user + system seconds). A process that
ends keeps the time it had at its last sample: what it used after that is lost, unless
the crawl process waits for it (the browser's driver, at close), which then shows in
the crawl process's own account of its waited-for children, and is given to the
components whose processes ended since the last sample. Samples are a few
milliseconds of reading ``/proc``: they run on a timer, never per page.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import psutil

COMPONENTS = ("crawl", "workers", "browser", "redis")


def component_of(process: psutil.Process) -> str:
    """The component of a child of the crawl process (and of its descendants)."""
    try:
        command = " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return "crawl"
    if "multiprocessing" in command:  # the fork server and its workers, the resource tracker
        return "workers"
    if "playwright" in command or "chrom" in command:
        return "browser"
    if "redis" in command:  # crawlyx.frontier.watchdog, redis-server
        return "redis"
    return "crawl"


@dataclass
class Sample:
    cpu: dict[str, float]  # component -> CPU seconds so far, ended processes included
    rss: dict[str, int]  # component -> resident memory of its live processes, bytes


class ProcessMeter:
    """Samples the CPU time and the memory of the tree under ``pid`` (this process)."""

    def __init__(self, pid: int | None = None):
        self.root = psutil.Process(pid or os.getpid())
        # (pid, start time) -> (component, CPU seconds at its last sample, the key of the
        # root's child it is under), for every process of the tree seen so far: a pid
        # reused by a new process is a new key.
        self._seen: dict[tuple, tuple[str, float, tuple]] = {}
        self._children: set[tuple] = set()  # the root's children at the last sample
        self._waited = self._waited_for()
        self._extra: Counter = Counter()  # component -> CPU of ended processes, unsampled

    def _waited_for(self) -> float:
        times = self.root.cpu_times()
        return times.children_user + times.children_system

    def sample(self) -> Sample:
        rss: Counter = Counter()
        root_times = self.root.cpu_times()
        rss["crawl"] += self.root.memory_info().rss
        children: set[tuple] = set()
        for child in self.root.children():
            component = component_of(child)
            try:
                tree = [child, *child.children(recursive=True)]
            except psutil.Error:
                tree = [child]
            top = None
            for process in tree:
                try:
                    with process.oneshot():
                        key = (process.pid, process.create_time())
                        times = process.cpu_times()
                        rss[component] += process.memory_info().rss
                except psutil.Error:
                    continue  # gone meanwhile: it keeps its last sample
                if process is child:
                    top = key
                    children.add(key)
                self._seen[key] = (component, times.user + times.system, top)
        self._account_ended(children)
        cpu: Counter = Counter(dict.fromkeys(COMPONENTS, 0.0))
        cpu["crawl"] += root_times.user + root_times.system
        for component, seconds, _ in self._seen.values():
            cpu[component] += seconds
        cpu.update(self._extra)
        return Sample(dict(cpu), {name: rss.get(name, 0) for name in COMPONENTS})

    def _account_ended(self, children: set[tuple]) -> None:
        """The root's children that ended since the last sample and were waited for: the
        CPU time the wait added to the root's account beyond what their trees' last
        samples held goes to their components; with none of them ended, to ``crawl`` (a
        short-lived process no sample saw)."""
        waited = self._waited_for()
        gained, self._waited = waited - self._waited, waited
        ended = self._children - children
        self._children = children
        if gained <= 0:
            return
        sampled: Counter = Counter()  # component -> the ended trees' sampled CPU
        for component, seconds, top in self._seen.values():
            if top in ended:
                sampled[component] += seconds
        if not ended:
            self._extra["crawl"] += gained
            return
        total = sum(sampled.values())
        unsampled = gained - total
        if unsampled <= 0:
            return
        if not total:  # ended before using a sampled moment of CPU: shared evenly
            sampled = Counter(self._seen[top][0] for top in ended if top in self._seen)
            total = sum(sampled.values())
        for component, weight in sampled.items():
            self._extra[component] += unsampled * weight / total
