"""The matrix: what to run (`model`), over which cells (`cells`), read from a file (`load`)."""

MAX_CELLS = 50_000_000  # above this a matrix is refused before anything is allocated
