"""Well-known Factory+ UUIDs: the single source of truth for every package.

Values follow the ACS code (``acs-configdb/lib/constants.js``,
``acs-cluster-manager/lib/uuids.js``, ``acs-service-setup/lib/uuids.js``) so a real
ACS installation and ours agree.

Naming note: the Factory+ documentation page on the Cluster Manager labels
``747a62c9-…`` "Edge cluster setup status". The ACS code and its edge-bootstrap
document use ``f6c67e6f-…`` for the Cluster Manager's *private* setup status and
``747a62c9-…`` for the *Edge cluster status* written by Edge Sync. We follow the code:
:attr:`App.EdgeClusterSetupStatus` is ``f6c67e6f-…`` and :attr:`App.EdgeClusterStatus`
is ``747a62c9-…``.
"""

from __future__ import annotations

import re
from typing import TypeGuard

UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
"""The UUID form every service accepts in paths and entries (lower-case, as ACS)."""
_UUID = re.compile(UUID_PATTERN)


def is_uuid(value: object) -> TypeGuard[str]:
    """True for a lower-case UUID string: the one UUID check for every package."""
    return isinstance(value, str) and _UUID.fullmatch(value) is not None


NULL = "00000000-0000-0000-0000-000000000000"
"""The Null UUID; as a grant target it is the wildcard."""


class Service:
    """Directory service-function UUIDs."""

    ConfigDB = "af15f175-78a0-4e05-97c0-2a0bb82b9f3b"
    Auth = "cab2642a-f7d9-42e5-8845-8f35affe1fd4"
    Directory = "af4a1d66-e6f7-43c4-8a67-0fa3be2b1cf9"
    Git = "7adf4db0-2e7b-4a68-ab9d-376f4c5ce14b"
    Clusters = "2706aa43-a826-441e-9cec-cd3d4ce623c2"
    Manager = "619eecab-742d-4824-8b97-bcae472e5c04"
    MQTT = "feb27ba3-bd2c-4916-9269-79a61ebc4a47"


class Class:
    """ConfigDB classes (rank roots first)."""

    Individual = "2494ae9b-cd87-4c01-98db-437a303b43e9"
    R1Class = "04a1c90d-2295-4cbe-b33a-74eded62cbf1"
    R2Class = "705888ce-53fa-434d-afee-274b331d4642"
    R3Class = "52b80183-6998-4bf9-9b30-132755e7dede"
    App = "d319bd87-f42b-4b66-be4f-f82ff48b93f0"
    Device = "18773d6d-a70d-443a-b29a-3f1583195290"
    Schema = "83ee28d4-023e-4c2c-ab86-12c24e86372c"
    ServiceFunction = "265d481f-87a7-4f93-8fc6-53fa64dc11bb"
    Special = "ddb132e4-5cdd-49c8-b9b1-2f35879eab6d"
    Principal = "11614546-b6d7-11ef-aebd-8fbb45451d7c"
    Permission = "8ae784bb-c4b5-4995-9bf6-799b3c7f21ad"
    EdgeCluster = "f24d354d-abc1-4e32-98e1-0667b3e40b61"
    EdgeAccount = "97756c9a-38e6-4238-b78c-3df6f227a6c9"
    HelmChart = "f9be0334-0ff7-43d3-9d8a-188d3e4d472b"
    SystemHelmChart = "a5c54a2e-8f7b-4b2a-9e8d-3f7c9e7d1c6a"
    K8sResourceKind = "487c20bc-d4d8-11f0-b591-7fa91b119c9d"
    ClustersManagedGroup = "979f7fd9-bbc7-4810-a774-6082c7394db6"
    EdgeDeployment = "e6f6a6e6-f6b2-422a-bc86-2dcb417a362a"
    GitRepo = "d25f2afc-1ab8-4d27-b51b-d02314624e3e"
    GitRepoGroup = "b03d4dfe-7e78-4252-8e62-af594cf316c9"
    ClusterManagerAccounts = "26d192cf-73c1-4c14-93cf-1e63743bab08"
    EdgeClusterName = "f2e98be9-ea64-4205-b11e-3a9b7fe11f3a"
    """Ours: objects whose entry claims one cluster name
    (``fplus.cluster_manager.model.name_claims``)."""
    FleetDeployment = "cc06aab9-8e8d-48d9-95f1-05791976dd46"
    """Ours: the objects of fleet deployments (their entries: :attr:`App.FleetDeployment`)."""
    ClusterRollout = "ba67a584-c565-4a76-a82c-2c95901f1364"
    """Ours: the objects of cluster rollouts (their entries: :attr:`App.ClusterRollout`)."""
    MaintenanceWindow = "c229927d-62d6-425a-9372-86e370a23a5a"
    """Ours: the objects of maintenance windows (their entries:
    :attr:`App.MaintenanceWindow`)."""


RANK_ROOTS: tuple[str, ...] = (Class.Individual, Class.R1Class, Class.R2Class, Class.R3Class)
"""Rank roots ordered by depth: ``RANK_ROOTS[r]`` is the root class of rank-``r`` objects."""


class Special:
    """Special objects (members of :attr:`Class.Special`)."""

    Null = NULL
    Unowned = "091e796a-65c0-4080-adff-c3ce01a65b2e"
    Self = "5855a1cc-46d8-4b16-84f8-ab3916ecb230"
    Mine = "724c0316-4cfd-11f0-b355-0b70840faae8"
    FactoryPlus = "11ad7b32-1d32-4c4a-b0c9-fa049208939a"


class App:
    """ConfigDB applications."""

    Registration = "cb40bed5-49ad-4443-a7f5-08c75009da8f"
    Info = "64a8bfa9-7772-45c4-9d1a-9e6290690957"
    SparkplugAddress = "8e32801b-f35a-4cbf-a5c3-2af64d3debd7"
    ConfigSchema = "dbd8a535-52ba-4f6e-b4f8-9b71aefe09d3"
    ServiceConfig = "5b47881c-b012-4040-945c-eacafca539b2"
    EdgeClusterConfiguration = "bdb13634-0b3d-4e38-a065-9d88c12ee78d"
    EdgeClusterSetupStatus = "f6c67e6f-e48e-4f69-b4bb-bfbddcc2a517"
    EdgeClusterStatus = "747a62c9-1b66-4a2e-8dd9-0b70a91b6b75"
    FluxTemplate = "72804a19-636b-4836-b62b-7ad1476f2b86"
    HelmChartTemplate = "729fe070-5e67-4bc7-94b5-afd75cb42b03"
    K8sResourceTemplate = "88436128-09a3-4c9c-b7f4-b0e495137265"
    BootstrapScript = "a807d8fc-63ff-48bb-85c7-82b93beb606e"
    EdgeDeployment = "f2b9417a-ef7f-421f-b387-bb8183a48cdb"
    EdgeAgentConfig = "aac6f843-cfee-4683-b121-6943bfdf9173"
    GitRepoConfig = "38d62a93-b6b4-4f63-bad4-d433e3eaff29"
    EdgeClusterNameClaim = "bbafdbf1-aa61-4d11-89f0-87142520a552"
    """Ours: ``{cluster, name}``, the one cluster holding a name (written If-None-Match)."""
    EdgeClusterRequest = "c54b50a0-7058-44f3-b4f5-b75ed826601e"
    """Ours: what the Cluster Manager's API asks its reconciler to do for a cluster
    (``{redeploy?: time, forceDelete?: true}``)."""
    FleetDeployment = "207267a7-b2b6-47d8-a5b5-6ab4c36ee0d2"
    """Ours: ``{name, chart, values?, selector?, clusters?, overrides?, createdAt?}``, one
    application for many clusters; the leading Cluster Manager expands each into one Edge
    deployment per matching cluster (``fplus.cluster_manager.rollouts.fleet_expansion``)."""
    FleetRolloutStatus = "9b8e4f2a-6c1d-4e7b-a35f-0d2c8e6b1f47"
    """Ours: per fleet deployment, the progress of its paced rollout ``{rolloutId, revision,
    state, step, steps, failed, updatedAt}``, written by the leading Cluster Manager only
    (``fplus.cluster_manager.rollouts.state``), so a new leader resumes where it was."""
    ClusterRollout = "81edd621-29de-4c95-b8ae-c1d196f13e47"
    """Ours: ``{name, change: {fluxVersion} | {fluxTemplate}, selector?, clusters?, rollout,
    createdAt, rolloutRequest?}``, a paced change of many clusters' configuration entries
    (``fplus.cluster_manager.rollouts.cluster_entry``); its progress is in
    :attr:`FleetRolloutStatus` under the same uuid, and a template rollout's candidate Flux
    template in :attr:`FluxTemplate` under it too."""
    MaintenanceWindow = "8c5538ba-bda2-4e9a-be94-3161d6029c3a"
    """Ours: ``{name, selector, schedule, duration, timeZone}``, when a rollout may change the
    clusters ``selector`` matches (``fplus.cluster_manager.rollouts.windows``); the leading
    Cluster Manager reads them."""
    ServiceUrl = "5ef70c20-d5e9-41ec-87dc-cc346e8c5dae"
    """Ours: ``{url}`` per service-function object, where the service is reached; each
    service writes its own at start, and the Directory route answers from it."""


class K8sResource:
    """Objects keying K8s resource template entries."""

    GitRepository = "03827afc-d4dc-11f0-9645-dfc5bcb16bc6"
    HelmRelease = "0c92f608-d4dc-11f0-b2a0-1bc42be2ebc8"


class Shared:
    """Ours: objects the Cluster Manager seeds for every edge."""

    HelmChartsRepo = "889f0f08-f60e-42e1-97c9-5a0bf356eb26"
    """The central Helm charts Git repo (``shared/helm-charts``): every edge's Flux account
    may pull it; edges install charts from it (GitRepository ``helm-charts``)."""
    FluxSystemRepo = "a0d7bdd1-f353-42ad-b2cc-9c0210634f2d"
    """The central Flux repo (``shared/flux-system``): one directory per imported Flux
    version; every edge's Flux account may pull it; edges upgrade Flux from it."""
    EdgeClusterChart = "c4ac99a7-f271-4dd3-979e-181f37d1d6c3"
    """The default Helm chart template entry: chart ``edge-cluster`` from the charts repo."""


class ConfigDBPerm:
    """ConfigDB permissions; :attr:`All` is the permission group containing the rest."""

    All = "c43c7157-a50b-4d2a-ac1a-86ff8e8e88c1"
    ReadApp = "4a339562-cd57-408d-9d1a-6529a383ea4b"
    WriteApp = "6c799ccb-d2ad-4715-a2a7-3c8728d6c0bf"
    ListObj = "6b4d73ea-50f1-11f0-9333-132037a152a5"
    CreateObj = "ae09e2ba-50ef-11f0-ac03-1f9f5e6548be"
    CreateSpecificObj = "e3491b9c-50f1-11f0-8e16-e75c8f93227b"
    ReadMembers = "d4fd61da-50ef-11f0-ad24-335234e4c8a2"
    WriteMembers = "c2759f6e-50ef-11f0-8730-ef0ba0514a0e"
    WriteMemberships = "e08d89bc-50ef-11f0-8352-83e3d3d35028"
    ReadSubclasses = "e6bb9978-50ef-11f0-b3c2-b79b9f64d2ff"
    WriteSubclasses = "ed11bd2a-50ef-11f0-9f85-df13a1dff9e6"
    WriteSuperclasses = "fb8e5048-50ef-11f0-91c5-7fd3cb373fbb"
    DeleteObj = "6957174b-7b08-45ca-ac5c-c03ab6928a6e"
    GiveTo = "4eaab346-4d1e-11f0-800e-dfdc061c6a63"
    TakeFrom = "6ad67652-5009-11f0-9404-73b79124c3d5"


class AuthPerm:
    """Auth service permissions."""

    ReadACL = "ba566181-0e8a-405b-b16e-3fb89130fbee"
    WriteACL = "3a41f5ce-fc08-4669-9762-ec9e71061168"
    ReadKerberos = "e8c9c0f7-0d54-4db2-b8d6-cd80c45f6a5c"
    WriteKerberos = "327c4cc8-9c46-4e1e-bb6b-257ace37b0f6"
    ManageGroup = "be9b6d47-c845-49b2-b9d5-d87b83f11c3b"
    """Upstream's legacy permission for the old Auth groups (``/authz/group``)."""
    Grant = "db252a1c-85a1-4c03-a20a-025ce988beb3"
    """Ours (not in ACS): may grant, on this target, any permission it holds WriteACL on,
    without holding that permission itself (the grant rule,
    ``fplus.config_store._domain.core.acl``)."""
    ReadAudit = "2c11ecd2-2e52-48e9-82fa-d200a03b432e"
    """Ours: read the Auth audit log (``GET /v2/audit``); the target is the wildcard."""


class EdgePerm:
    """Cluster Manager permissions."""

    All = "9e07fd33-6400-4662-92c4-4dff1f61f990"
    Clusters = "a40acff8-0c61-4251-bef3-d8d53e50cdd0"
    Secrets = "07fba27a-0d01-4c07-875b-d25345261d3a"
    Audit = "a9084ce5-eba0-4a32-9f53-8ced895cb72e"
    """Read the Cluster Manager's audit log (``GET /v1/audit``)."""
    Imports = "6719190b-1bc6-4b53-ae50-9f09fe02be93"
    """Ours: import Helm charts and Flux versions into the central repos over the API
    (``POST /v1/chart``, ``POST /v1/flux-version``); the target is the wildcard."""
    KubeView = "dfa5fb3d-7ca1-4fe7-b7fa-8779dee76653"
    """Ours: reach the cluster's Kubernetes API through the Cluster Manager's proxy
    (``/v1/cluster/<uuid>/kube/...``) as Kubernetes' ``view`` ClusterRole (the edge's user
    ``fplus:view``); the target is a cluster's uuid or the wildcard."""
    KubeEdit = "d61193c2-3cf6-4a85-90d4-3a1937cf28cf"
    """Ours: the same as Kubernetes' ``edit`` ClusterRole (the edge's user ``fplus:edit``);
    the target is a cluster's uuid or the wildcard."""
    KubeAdmin = "51f2794b-87b5-4edd-9a41-9f1137965840"
    """Ours: the same as Kubernetes' ``admin`` ClusterRole (the edge's user ``fplus:admin``);
    the target is a cluster's uuid or the wildcard."""


class GitPerm:
    """Git server permissions."""

    All = "c0c55c78-116e-4526-8ff4-e4595251f76c"
    Pull = "12ecb694-b4b9-4d2a-927e-d100019f7ebe"
    Push = "b2d8d437-5060-4202-bcc2-bd2beda09651"
    ManageStorage = "7fd8a8c1-6050-4950-97bd-a35bb83ff750"
    Create = "3668660f-f949-4657-be76-21967144c1a2"
    Delete = "55870092-91b6-4d5e-828f-7637d080bf1c"
