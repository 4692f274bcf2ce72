"""Cluster Manager HTTP API."""
