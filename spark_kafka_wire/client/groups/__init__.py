"""Consumer groups: assignment, a group member's loop, committed offsets, listings."""
