"""From source text to closure: pieces (parsing), index (bindings), extract (resolution)."""
