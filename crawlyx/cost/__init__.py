"""What a crawl costs: the CPU time of its processes, and a price table (CRAWLYX_COST_*)."""
