"""Database providers and the seam they implement."""
