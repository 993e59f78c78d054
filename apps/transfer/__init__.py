"""Data transfer: CSV and PMS-export imports of patients, background exports of the practice's data, and the practice
archive (a departing practice's export and account closing).
"""
