"""The laboratory outside the package: investigation runners, each calling fssl_core's public API, their records
in the measurements/ folder they feed. Run from the repository root, `python -m studies.<paper>.<name>`; never
installed (pyproject's package discovery includes fssl_core only) and never imported by fssl_core
(tests/test_architecture.py)."""
