"""What every ``fplus`` option or argument naming a cluster, chart template, deployment,
fleet deployment or rollout takes: its name or its UUID. Each resolver answers the UUID (a
UUID as it is, lower-cased) and remembers the name, so messages can name both."""

from __future__ import annotations

from collections.abc import Iterable

from .api import UUID, ApiError, ManagerApi, Row, rows

FLEETS = "/v1/fleet-deployment"
ROLLOUTS = "/v1/rollout"


def is_uuid(ref: str) -> bool:
    """Whether ``ref`` is a UUID (any case)."""
    return UUID.match(ref.lower()) is not None


def _one(api: ManagerApi, found: Iterable[Row], ref: str, what: str, listing: str) -> str:
    """The UUID of the one row of ``found`` named ``ref``; an ApiError saying what to run
    when none or several are."""
    named = [str(row["uuid"]) for row in found if row.get("name") == ref]
    if len(named) > 1:
        raise ApiError(409, f"{len(named)} {what}s are named {ref}: give its UUID "
                            f"(`{listing} -o wide` shows them)")
    if not named:
        raise ApiError(404, f"no {what} named {ref}: `{listing}` shows what there is")
    api.names[named[0]] = ref
    return named[0]


def cluster(api: ManagerApi, ref: str) -> str:
    """The cluster named ``ref`` (or whose UUID it is)."""
    if is_uuid(ref):
        return ref.lower()
    return _one(api, api.clusters(search=ref), ref, "cluster", "fplus cluster list")


def chart(api: ManagerApi, ref: str) -> str:
    """The Helm chart template named ``ref`` (or whose UUID it is)."""
    if is_uuid(ref):
        return ref.lower()
    return _one(api, api.charts(), ref, "chart template", "fplus chart list")


def deployment(api: ManagerApi, cluster_uuid: str, ref: str) -> str:
    """The deployment named ``ref`` (or whose UUID it is) on the cluster."""
    if is_uuid(ref):
        return ref.lower()
    listing = f"fplus deploy list -c {api.names.get(cluster_uuid, cluster_uuid)}"
    return _one(api, api.deployments(cluster_uuid), ref, "deployment", listing)


def fleets(api: ManagerApi) -> list[Row]:
    """Every fleet deployment."""
    return rows(api.call_object("GET", FLEETS), "fleetDeployments")


def fleet(api: ManagerApi, ref: str) -> str:
    """The fleet deployment named ``ref`` (or whose UUID it is)."""
    if is_uuid(ref):
        return ref.lower()
    return _one(api, fleets(api), ref, "fleet deployment", "fplus fleet list")


def rollouts(api: ManagerApi) -> list[Row]:
    """Every rollout, of both kinds (a fleet deployment's is named as it is)."""
    return rows(api.call_object("GET", ROLLOUTS), "rollouts")


def rollout(api: ManagerApi, ref: str) -> str:
    """The rollout named ``ref`` (a fleet deployment's rollout by the fleet deployment's
    name), or whose UUID it is."""
    if is_uuid(ref):
        return ref.lower()
    found = rollouts(api)
    if not any(row.get("name") == ref for row in found):
        found += fleets(api)  # a fleet deployment's, before its first rollout is listed
    return _one(api, found, ref, "rollout", "fplus rollout list")


def names(found: Iterable[Row]) -> dict[str, str]:
    """UUID to name of ``found`` (rows with both), to show names where a row holds UUIDs."""
    return {str(row["uuid"]): str(row["name"]) for row in found
            if row.get("uuid") and row.get("name")}


def shown(api: ManagerApi, uuid: str) -> str:
    """``name (uuid)`` when the name was resolved, else the UUID."""
    name = api.names.get(uuid)
    return f"{name} ({uuid})" if name else uuid
