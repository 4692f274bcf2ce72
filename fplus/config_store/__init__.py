"""Config Store: a Factory+ ConfigDB-compatible service with the Auth subset, and its client."""
