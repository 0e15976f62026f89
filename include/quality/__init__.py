"""Data quality suites as code, one module per dataset (`<dataset>.py`).

Each module has `build_suite(context, config, expected_rows, hour) -> ExpectationSuite`: it adds
the suite for one hour of the dataset to a Great Expectations context and returns it. `config`
is the app's `app.toml` (column roles and thresholds in its `[quality]` section). The runner,
`streamjoin quality check` (`spark_apps/streamjoin/quality.py`), loads a module by its path, so
`include/` need not be importable; docs/quality.md says what is checked.
"""
