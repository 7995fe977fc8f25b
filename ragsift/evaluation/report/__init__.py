"""The report wing: what a run directory's files say (summary, statistics, HTML, plots, example
pages, ``ragsift report``). It reads the files and imports nothing of the run wing."""
