"""python -m bench capture: sustained signed lead captures per second through daphne (issue 9)."""
