"""URLs: the normalizer and the trap rules."""
