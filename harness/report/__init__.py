"""Reports: a model built once (`model.py`) and renderers that only read it."""
