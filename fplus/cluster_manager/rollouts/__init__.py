"""Rollouts: a change carried to many clusters step by step, of two kinds on one engine.

The names, used everywhere: a *rollout* carries a *revision* to its *targets* (clusters) in
*steps*; its *kind* says what the revision is and how a target takes it: a fleet
deployment's (:mod:`.fleet_kind`: the Edge deployments it owns) or a cluster rollout's
(:mod:`.cluster_kind`: a ``fluxVersion`` or Flux template in the clusters' configuration
entries). The rollout's *state* (:mod:`.state`) is typed and kept in one app.

- pure: :mod:`.steps` (the ``rollout`` field and the cut into steps), :mod:`.rule` (which
  targets hold the revision, when a step is done, when to halt: :func:`.rule.advance`),
  the kinds' entries (:mod:`.fleet_entry` and :mod:`.fleet_expansion`;
  :mod:`.cluster_entry`);
- the leader: :mod:`.loop` runs every :class:`.kind.RolloutKind`'s pass;
- the API: :mod:`.service` (read, list, pause, resume, abort, promote),
  :mod:`.fleet_service` (fleet deployments), :mod:`.cluster_service` (creating a cluster
  rollout), :mod:`.unfinished` and :mod:`.label_moves` (what a label change moves).
"""
