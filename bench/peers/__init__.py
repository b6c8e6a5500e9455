"""Naive peers, written the way a paper's one-off script would be."""
