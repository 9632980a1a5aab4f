"""volsched."""
