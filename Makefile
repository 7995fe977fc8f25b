# The dev loop. The README's two commands are scripts/quickstart.sh and scripts/test.sh.
.PHONY: setup test fast lint types bench quickstart
setup:
	RAGSIFT_SERVER=1 bash scripts/setup.sh
test:
	bash scripts/test.sh
fast:  ## tests without the slow ones
	.venv/bin/python -m pytest -m "not slow"
lint:
	.venv/bin/ruff check ragsift tests benchmarks
types:
	.venv/bin/mypy
bench:  ## the 3-example EXIT check first (issue 29: prefix-shared >= 2.7x the reference in CPU time)
	.venv/bin/python benchmarks/exit_scoring.py --examples 3 --repeats 2 --no-authors-call
	.venv/bin/python benchmarks/exit_scoring.py
	.venv/bin/python benchmarks/ecorag_reflection.py
quickstart:
	bash scripts/quickstart.sh
