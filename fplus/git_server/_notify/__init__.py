"""The Git server's notify/v2: WATCH subscriptions of polled state (its status URLs)."""
