"""Tuning an eCP index: compare two builds, sweep build parameters, and the costs behind them
(issue 23). Above build and search, which it runs."""
