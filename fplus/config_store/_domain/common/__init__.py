"""What every part of the domain shares and that knows nothing of the others: the errors
(with their HTTP status), canonical JSON values and the change events."""
