"""The reconcile wing: configuration entries in, commissioned clusters out.

Start at :mod:`.commissioning` (what happens to one cluster, step by step); the
:class:`~.reconciler.Reconciler` feeds it from notify subscriptions through a
:class:`~.workqueue.KeyedWorkQueue`. :mod:`.rendering` makes the repo content,
:mod:`.accounts` the edge principals, :mod:`.seeding` the Config Store set-up. Nothing
here imports the API wing (:mod:`fplus.cluster_manager.api`).
"""
