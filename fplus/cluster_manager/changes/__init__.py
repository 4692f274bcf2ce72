"""What a change of configuration does to the clusters it reaches, worked out before anything
is written: each cluster's repo rendered (:mod:`.rendering`, also the reconciler's) with what
the central repos hold (:mod:`.central_files`), the refusals, and the preview's diffs."""
