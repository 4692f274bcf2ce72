"""``fplus``: the operator's command line for the Cluster Manager and the Config Store.

It uses only the services' public HTTP APIs: the Cluster Manager's ``/v1/cluster…`` routes and,
for login, the Config Store through :mod:`fplus.config_store.client`.
"""
