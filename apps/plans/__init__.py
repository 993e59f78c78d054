"""Treatment plans (items with tooth and surface, fees from the patient's price list, phases, status) and
treatment templates."""
