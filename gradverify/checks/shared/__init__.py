"""What two or more checks use."""
