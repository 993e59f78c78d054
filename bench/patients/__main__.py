"""python -m bench.patients: the patients-area benchmark (what `python -m bench` runs without a subcommand)."""

import sys

from bench.patients.run import main

sys.exit(main())
