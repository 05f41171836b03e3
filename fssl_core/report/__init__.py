"""Results: the report tables (tables.py) and page, the claims' test, the figures, the publishing of
a job's results into results/, and the executed notebooks as a static site (site.py)."""
