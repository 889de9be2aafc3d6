"""CPU time and memory of a crawl's processes, by component.

A crawl is a process tree: the crawl process itself, its page workers (with
multiprocessing's resource tracker, see crawlyx/content/workers.py), the browser (the
Playwright driver, the Chromium it launches and Chromium's own processes,
crawlyx/render/browser.py) and, when crawlyx started it, the embedded Redis (its watchdog
and the server, crawlyx/frontier/watchdog.py). Each child of the crawl process is put in
a component by what it runs, and everything below it goes with it.

A process's CPU time is read from the system: its own (user + system seconds) and that of
its children it waited for, which the system adds to its account as they end. So a
process that lives between two samples (a renderer Chromium starts for a page) is not
lost: its time is its parent's from then on. The children of the crawl process itself are
waited for by the crawl process: the time its account gains when one of them ends goes
to that child's component. Samples are a few milliseconds of reading ``/proc``: they run
on a timer, never per page.
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
    if "multiprocessing" in command:  # the page workers, the resource tracker
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
        # The root's children at the last sample: (pid, start time) -> (component, the CPU
        # seconds of the child and everything under it). A pid reused is a new key.
        self._children: dict[tuple, tuple[str, float]] = {}
        self._waited = self._waited_for()
        self._ended: Counter = Counter()  # component -> CPU of the root's children that ended

    def _waited_for(self) -> float:
        times = self.root.cpu_times()
        return times.children_user + times.children_system

    def sample(self) -> Sample:
        rss: Counter = Counter()
        cpu: Counter = Counter(dict.fromkeys(COMPONENTS, 0.0))
        root_times = self.root.cpu_times()
        cpu["crawl"] += root_times.user + root_times.system
        rss["crawl"] += self.root.memory_info().rss
        children: dict[tuple, tuple[str, float]] = {}
        for child in self.root.children():
            component = component_of(child)
            try:
                key = (child.pid, child.create_time())
                tree = [child, *child.children(recursive=True)]
            except psutil.Error:
                continue  # ended meanwhile: the root waited for it, or will
            used = 0.0
            for process in tree:
                try:
                    with process.oneshot():
                        times = process.cpu_times()
                        rss[component] += process.memory_info().rss
                except psutil.Error:
                    continue  # ended meanwhile: its parent's account has it, or will
                used += times.user + times.system + times.children_user + times.children_system
            children[key] = (component, used)
            cpu[component] += used
        self._account_ended(children)
        cpu.update(self._ended)
        return Sample(dict(cpu), {name: rss.get(name, 0) for name in COMPONENTS})

    def _account_ended(self, children: dict[tuple, tuple[str, float]]) -> None:
        """The root's children that ended since the last sample: what the root's account
        of its waited-for children gained goes to their components (their last samples
        at least; to ``crawl`` when none of those seen ended: a process no sample saw)."""
        waited = self._waited_for()
        gained, self._waited = max(0.0, waited - self._waited), waited
        ended = [value for key, value in self._children.items() if key not in children]
        self._children = children
        if not ended:
            self._ended["crawl"] += gained
            return
        sampled = sum(used for _, used in ended)
        for component, used in ended:
            share = gained * used / sampled if sampled else gained / len(ended)
            self._ended[component] += max(used, share)
