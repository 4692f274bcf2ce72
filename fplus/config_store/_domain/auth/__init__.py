"""Auth: grants, identities, principals with passwords and tokens, enrolment in one request,
and loading Auth dumps. A principal is a ConfigDB object, so enrolment uses :mod:`..configdb`."""
