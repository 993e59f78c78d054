"""Agreements (terms, data-processing agreement) with versions, accepted by owners on behalf of the practice."""
