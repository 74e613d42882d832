"""Releases from a package index or local archives, read as revisions."""
