"""One connection to one broker: framing, correlation, limits on what an answer may announce."""
