"""Git server HTTP layer: routes authorise, then hand git traffic to git http-backend."""
