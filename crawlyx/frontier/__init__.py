"""The frontier: Redis state, the visited table, the scheduler, the page quota, fingerprints."""
