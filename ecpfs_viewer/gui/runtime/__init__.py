"""What keeps the window responsive: workers, their scheduling, the collector, settings."""
