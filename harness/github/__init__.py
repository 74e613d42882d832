"""GitHub: the REST client, pull requests to commits, and the sticky PR comment."""
