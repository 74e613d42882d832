"""Revisions to results: outcome tables by content (versions, cache), comparisons
and their reasons (compare, because), and the flows over revisions (diff,
history, bisect)."""
