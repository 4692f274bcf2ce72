"""notify/v2: the wire format its clients and servers share (:mod:`.wire`), the requests
every server answers (:mod:`.protocol`) and the first message it reads (:mod:`.bearer`)."""
