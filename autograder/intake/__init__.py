"""Intake: which hand-ins there are and who handed them in (the exchange's inbound/, submission folders, zips)."""
