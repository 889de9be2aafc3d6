"""What may be fetched: the SSRF guard and AI opt-out signals."""
