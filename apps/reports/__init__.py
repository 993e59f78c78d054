"""Reports over the practice's own data (SQL aggregates, cached per practice and range, CSV) and report subscriptions
delivered by e-mail.
"""
