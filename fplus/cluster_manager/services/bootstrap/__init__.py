"""Bootstrap scripts for a cluster and the one-time tokens their URLs carry."""
