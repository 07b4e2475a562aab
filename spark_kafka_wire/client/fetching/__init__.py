"""Reading records: fetch plans, range and multi-range fetches, offsets and timestamps."""
