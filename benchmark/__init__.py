"""The paper's experiments as grids of training runs (run.py, presets.py) and their tables and plots (report.py)."""
