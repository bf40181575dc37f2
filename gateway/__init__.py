"""toolreel gateway."""
