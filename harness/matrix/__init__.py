"""The matrix: what to run (`model`), over which cells (`cells`), read from a file (`load`)."""
