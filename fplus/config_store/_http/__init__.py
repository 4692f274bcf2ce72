"""Config Store HTTP layer: routes parse and authorise, then call the domain."""
