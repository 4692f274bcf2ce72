"""The hostile suite: every finding of the attacker's probe, reproduced against real processes.

Each file covers one area (notify, HTTP limits, auth, privilege, files); each test starts the
services it abuses on free loopback ports in its own temp dir, so a test that breaks a server
breaks only its own.
"""
