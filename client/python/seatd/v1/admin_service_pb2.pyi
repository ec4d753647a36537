from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from seatd.v1 import resources_pb2 as _resources_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
USAGE_BUCKET_DAY: UsageBucket
USAGE_BUCKET_HOUR: UsageBucket
USAGE_BUCKET_UNSPECIFIED: UsageBucket

class AuditEvent(_message.Message):
    __slots__ = ["action", "actor", "at", "details", "id", "resource", "resource_id"]
    class DetailsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    action: str
    actor: str
    at: _timestamp_pb2.Timestamp
    details: _containers.ScalarMap[str, str]
    id: str
    resource: str
    resource_id: str
    def __init__(self, id: _Optional[str] = ..., actor: _Optional[str] = ..., action: _Optional[str] = ..., resource: _Optional[str] = ..., resource_id: _Optional[str] = ..., details: _Optional[_Mapping[str, str]] = ..., at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CleanupEvent(_message.Message):
    __slots__ = ["cleaned_at", "cleanup_type", "expires_at", "feature", "grant_id", "last_heartbeat_at", "lease_id", "license_id"]
    CLEANED_AT_FIELD_NUMBER: _ClassVar[int]
    CLEANUP_TYPE_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_AT_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    cleaned_at: _timestamp_pb2.Timestamp
    cleanup_type: str
    expires_at: _timestamp_pb2.Timestamp
    feature: str
    grant_id: str
    last_heartbeat_at: _timestamp_pb2.Timestamp
    lease_id: str
    license_id: str
    def __init__(self, lease_id: _Optional[str] = ..., license_id: _Optional[str] = ..., cleanup_type: _Optional[str] = ..., last_heartbeat_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., cleaned_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., grant_id: _Optional[str] = ..., feature: _Optional[str] = ...) -> None: ...

class CleanupRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class CleanupResponse(_message.Message):
    __slots__ = ["run"]
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: CleanupRun
    def __init__(self, run: _Optional[_Union[CleanupRun, _Mapping]] = ...) -> None: ...

class CleanupRun(_message.Message):
    __slots__ = ["duration", "errors", "expired", "result", "scanned", "started_at", "trigger"]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    SCANNED_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    duration: _duration_pb2.Duration
    errors: int
    expired: int
    result: str
    scanned: int
    started_at: _timestamp_pb2.Timestamp
    trigger: str
    def __init__(self, started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., scanned: _Optional[int] = ..., expired: _Optional[int] = ..., result: _Optional[str] = ..., trigger: _Optional[str] = ..., errors: _Optional[int] = ...) -> None: ...

class CreateApiKeyRequest(_message.Message):
    __slots__ = ["name", "role", "tenant_id"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    role: str
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., name: _Optional[str] = ..., role: _Optional[str] = ...) -> None: ...

class CreateApiKeyResponse(_message.Message):
    __slots__ = ["api_key", "secret"]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    api_key: _resources_pb2.ApiKey
    secret: str
    def __init__(self, api_key: _Optional[_Union[_resources_pb2.ApiKey, _Mapping]] = ..., secret: _Optional[str] = ...) -> None: ...

class CreateFeatureGrantRequest(_message.Message):
    __slots__ = ["grant", "license_id", "tenant_id"]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    grant: _resources_pb2.FeatureGrant
    license_id: str
    tenant_id: str
    def __init__(self, license_id: _Optional[str] = ..., grant: _Optional[_Union[_resources_pb2.FeatureGrant, _Mapping]] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class CreateFeatureGrantResponse(_message.Message):
    __slots__ = ["grant"]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    grant: _resources_pb2.FeatureGrant
    def __init__(self, grant: _Optional[_Union[_resources_pb2.FeatureGrant, _Mapping]] = ...) -> None: ...

class CreateLicenseRequest(_message.Message):
    __slots__ = ["license", "tenant_id"]
    LICENSE_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    license: _resources_pb2.License
    tenant_id: str
    def __init__(self, license: _Optional[_Union[_resources_pb2.License, _Mapping]] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class CreateLicenseResponse(_message.Message):
    __slots__ = ["license"]
    LICENSE_FIELD_NUMBER: _ClassVar[int]
    license: _resources_pb2.License
    def __init__(self, license: _Optional[_Union[_resources_pb2.License, _Mapping]] = ...) -> None: ...

class CreateTenantRequest(_message.Message):
    __slots__ = ["tenant"]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    tenant: _resources_pb2.Tenant
    def __init__(self, tenant: _Optional[_Union[_resources_pb2.Tenant, _Mapping]] = ...) -> None: ...

class CreateTenantResponse(_message.Message):
    __slots__ = ["tenant"]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    tenant: _resources_pb2.Tenant
    def __init__(self, tenant: _Optional[_Union[_resources_pb2.Tenant, _Mapping]] = ...) -> None: ...

class CreateWebhookEndpointRequest(_message.Message):
    __slots__ = ["description", "secret", "tenant_id", "types", "url"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    description: str
    secret: str
    tenant_id: str
    types: _containers.RepeatedScalarFieldContainer[str]
    url: str
    def __init__(self, tenant_id: _Optional[str] = ..., url: _Optional[str] = ..., types: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ..., secret: _Optional[str] = ...) -> None: ...

class CreateWebhookEndpointResponse(_message.Message):
    __slots__ = ["endpoint", "secret"]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    endpoint: WebhookEndpoint
    secret: str
    def __init__(self, endpoint: _Optional[_Union[WebhookEndpoint, _Mapping]] = ..., secret: _Optional[str] = ...) -> None: ...

class DeleteFeatureGrantRequest(_message.Message):
    __slots__ = ["grant_id", "license_id", "tenant_id"]
    GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    grant_id: str
    license_id: str
    tenant_id: str
    def __init__(self, license_id: _Optional[str] = ..., grant_id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class DeleteFeatureGrantResponse(_message.Message):
    __slots__ = ["revoked_leases"]
    REVOKED_LEASES_FIELD_NUMBER: _ClassVar[int]
    revoked_leases: int
    def __init__(self, revoked_leases: _Optional[int] = ...) -> None: ...

class DeleteGroupRequest(_message.Message):
    __slots__ = ["name", "tenant_id"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    tenant_id: str
    def __init__(self, name: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class DeleteGroupResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class DeleteLicenseRequest(_message.Message):
    __slots__ = ["license_id", "tenant_id"]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    license_id: str
    tenant_id: str
    def __init__(self, license_id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class DeleteLicenseResponse(_message.Message):
    __slots__ = ["revoked_leases"]
    REVOKED_LEASES_FIELD_NUMBER: _ClassVar[int]
    revoked_leases: int
    def __init__(self, revoked_leases: _Optional[int] = ...) -> None: ...

class DeleteWebhookEndpointRequest(_message.Message):
    __slots__ = ["id", "tenant_id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class DeleteWebhookEndpointResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ExportUsageRequest(_message.Message):
    __slots__ = ["end_time", "start_time"]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    end_time: _timestamp_pb2.Timestamp
    start_time: _timestamp_pb2.Timestamp
    def __init__(self, start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ExportUsageResponse(_message.Message):
    __slots__ = ["created_at", "file_serial", "period_end", "period_start", "rows", "site_key_id", "usage_export"]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    FILE_SERIAL_FIELD_NUMBER: _ClassVar[int]
    PERIOD_END_FIELD_NUMBER: _ClassVar[int]
    PERIOD_START_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    SITE_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    USAGE_EXPORT_FIELD_NUMBER: _ClassVar[int]
    created_at: _timestamp_pb2.Timestamp
    file_serial: int
    period_end: _timestamp_pb2.Timestamp
    period_start: _timestamp_pb2.Timestamp
    rows: _containers.RepeatedCompositeFieldContainer[UsageExportRow]
    site_key_id: str
    usage_export: str
    def __init__(self, usage_export: _Optional[str] = ..., file_serial: _Optional[int] = ..., site_key_id: _Optional[str] = ..., period_start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., period_end: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., rows: _Optional[_Iterable[_Union[UsageExportRow, _Mapping]]] = ...) -> None: ...

class GetCleanupStatusRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetCleanupStatusResponse(_message.Message):
    __slots__ = ["instance_id", "interval", "is_leader", "last_run", "leader_id", "next_run_at"]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    IS_LEADER_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    NEXT_RUN_AT_FIELD_NUMBER: _ClassVar[int]
    instance_id: str
    interval: _duration_pb2.Duration
    is_leader: bool
    last_run: CleanupRun
    leader_id: str
    next_run_at: _timestamp_pb2.Timestamp
    def __init__(self, leader_id: _Optional[str] = ..., is_leader: bool = ..., instance_id: _Optional[str] = ..., last_run: _Optional[_Union[CleanupRun, _Mapping]] = ..., next_run_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class GetLicenseFileRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetLicenseFileResponse(_message.Message):
    __slots__ = ["license_file"]
    LICENSE_FILE_FIELD_NUMBER: _ClassVar[int]
    license_file: LicenseFile
    def __init__(self, license_file: _Optional[_Union[LicenseFile, _Mapping]] = ...) -> None: ...

class GetLicensePolicyRequest(_message.Message):
    __slots__ = ["license_id", "tenant_id"]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    license_id: str
    tenant_id: str
    def __init__(self, license_id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class GetLicensePolicyResponse(_message.Message):
    __slots__ = ["policy"]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    policy: _resources_pb2.LicensePolicy
    def __init__(self, policy: _Optional[_Union[_resources_pb2.LicensePolicy, _Mapping]] = ...) -> None: ...

class GetLicenseRequest(_message.Message):
    __slots__ = ["license_id", "tenant_id"]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    license_id: str
    tenant_id: str
    def __init__(self, license_id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class GetLicenseResponse(_message.Message):
    __slots__ = ["license"]
    LICENSE_FIELD_NUMBER: _ClassVar[int]
    license: _resources_pb2.License
    def __init__(self, license: _Optional[_Union[_resources_pb2.License, _Mapping]] = ...) -> None: ...

class GetUsageReportRequest(_message.Message):
    __slots__ = ["bucket", "end_time", "feature", "license_id", "start_time", "tenant_id", "user_limit"]
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_LIMIT_FIELD_NUMBER: _ClassVar[int]
    bucket: UsageBucket
    end_time: _timestamp_pb2.Timestamp
    feature: str
    license_id: str
    start_time: _timestamp_pb2.Timestamp
    tenant_id: str
    user_limit: int
    def __init__(self, tenant_id: _Optional[str] = ..., license_id: _Optional[str] = ..., start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., bucket: _Optional[_Union[UsageBucket, str]] = ..., user_limit: _Optional[int] = ..., feature: _Optional[str] = ...) -> None: ...

class GetUsageReportResponse(_message.Message):
    __slots__ = ["bucket", "end_time", "rows", "start_time", "users"]
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    bucket: UsageBucket
    end_time: _timestamp_pb2.Timestamp
    rows: _containers.RepeatedCompositeFieldContainer[UsageReportRow]
    start_time: _timestamp_pb2.Timestamp
    users: _containers.RepeatedCompositeFieldContainer[UserUsage]
    def __init__(self, start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., bucket: _Optional[_Union[UsageBucket, str]] = ..., rows: _Optional[_Iterable[_Union[UsageReportRow, _Mapping]]] = ..., users: _Optional[_Iterable[_Union[UserUsage, _Mapping]]] = ...) -> None: ...

class GetWebhookEndpointRequest(_message.Message):
    __slots__ = ["id", "tenant_id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class GetWebhookEndpointResponse(_message.Message):
    __slots__ = ["endpoint"]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    endpoint: WebhookEndpoint
    def __init__(self, endpoint: _Optional[_Union[WebhookEndpoint, _Mapping]] = ...) -> None: ...

class GetZombieReportRequest(_message.Message):
    __slots__ = ["end_time", "feature", "start_time", "tenant_id", "top_limit"]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TOP_LIMIT_FIELD_NUMBER: _ClassVar[int]
    end_time: _timestamp_pb2.Timestamp
    feature: str
    start_time: _timestamp_pb2.Timestamp
    tenant_id: str
    top_limit: int
    def __init__(self, tenant_id: _Optional[str] = ..., start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., top_limit: _Optional[int] = ..., feature: _Optional[str] = ...) -> None: ...

class GetZombieReportResponse(_message.Message):
    __slots__ = ["days", "end_time", "mean_minutes_to_cleanup", "start_time", "top_licenses", "zombies_total"]
    DAYS_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    MEAN_MINUTES_TO_CLEANUP_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    TOP_LICENSES_FIELD_NUMBER: _ClassVar[int]
    ZOMBIES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    days: _containers.RepeatedCompositeFieldContainer[ZombieDay]
    end_time: _timestamp_pb2.Timestamp
    mean_minutes_to_cleanup: float
    start_time: _timestamp_pb2.Timestamp
    top_licenses: _containers.RepeatedCompositeFieldContainer[LicenseZombies]
    zombies_total: int
    def __init__(self, start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., days: _Optional[_Iterable[_Union[ZombieDay, _Mapping]]] = ..., top_licenses: _Optional[_Iterable[_Union[LicenseZombies, _Mapping]]] = ..., mean_minutes_to_cleanup: _Optional[float] = ..., zombies_total: _Optional[int] = ...) -> None: ...

class LicenseFile(_message.Message):
    __slots__ = ["customer", "in_force_since", "issued_at", "license_count", "not_after", "serial", "sha256", "site_key_id", "vendor_key_id"]
    CUSTOMER_FIELD_NUMBER: _ClassVar[int]
    IN_FORCE_SINCE_FIELD_NUMBER: _ClassVar[int]
    ISSUED_AT_FIELD_NUMBER: _ClassVar[int]
    LICENSE_COUNT_FIELD_NUMBER: _ClassVar[int]
    NOT_AFTER_FIELD_NUMBER: _ClassVar[int]
    SERIAL_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SITE_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    VENDOR_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    customer: str
    in_force_since: _timestamp_pb2.Timestamp
    issued_at: _timestamp_pb2.Timestamp
    license_count: int
    not_after: _timestamp_pb2.Timestamp
    serial: int
    sha256: str
    site_key_id: str
    vendor_key_id: str
    def __init__(self, serial: _Optional[int] = ..., customer: _Optional[str] = ..., issued_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., not_after: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., site_key_id: _Optional[str] = ..., vendor_key_id: _Optional[str] = ..., license_count: _Optional[int] = ..., sha256: _Optional[str] = ..., in_force_since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class LicenseZombies(_message.Message):
    __slots__ = ["feature", "lease_count", "license_id", "license_name", "zombie_count", "zombie_percentage"]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    LEASE_COUNT_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    LICENSE_NAME_FIELD_NUMBER: _ClassVar[int]
    ZOMBIE_COUNT_FIELD_NUMBER: _ClassVar[int]
    ZOMBIE_PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
    feature: str
    lease_count: int
    license_id: str
    license_name: str
    zombie_count: int
    zombie_percentage: float
    def __init__(self, license_id: _Optional[str] = ..., license_name: _Optional[str] = ..., zombie_count: _Optional[int] = ..., lease_count: _Optional[int] = ..., zombie_percentage: _Optional[float] = ..., feature: _Optional[str] = ...) -> None: ...

class ListApiKeysRequest(_message.Message):
    __slots__ = ["page_size", "page_token", "tenant_id"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListApiKeysResponse(_message.Message):
    __slots__ = ["api_keys", "next_page_token"]
    API_KEYS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    api_keys: _containers.RepeatedCompositeFieldContainer[_resources_pb2.ApiKey]
    next_page_token: str
    def __init__(self, api_keys: _Optional[_Iterable[_Union[_resources_pb2.ApiKey, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListAuditEventsRequest(_message.Message):
    __slots__ = ["end_time", "page_size", "page_token", "start_time", "tenant_id"]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    end_time: _timestamp_pb2.Timestamp
    page_size: int
    page_token: str
    start_time: _timestamp_pb2.Timestamp
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListAuditEventsResponse(_message.Message):
    __slots__ = ["audit_events", "next_page_token"]
    AUDIT_EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    audit_events: _containers.RepeatedCompositeFieldContainer[AuditEvent]
    next_page_token: str
    def __init__(self, audit_events: _Optional[_Iterable[_Union[AuditEvent, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListCleanupEventsRequest(_message.Message):
    __slots__ = ["end_time", "license_id", "page_size", "page_token", "start_time", "tenant_id"]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    end_time: _timestamp_pb2.Timestamp
    license_id: str
    page_size: int
    page_token: str
    start_time: _timestamp_pb2.Timestamp
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., license_id: _Optional[str] = ..., start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListCleanupEventsResponse(_message.Message):
    __slots__ = ["cleanup_events", "next_page_token"]
    CLEANUP_EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    cleanup_events: _containers.RepeatedCompositeFieldContainer[CleanupEvent]
    next_page_token: str
    def __init__(self, cleanup_events: _Optional[_Iterable[_Union[CleanupEvent, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListGroupsRequest(_message.Message):
    __slots__ = ["tenant_id"]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class ListGroupsResponse(_message.Message):
    __slots__ = ["groups"]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[_resources_pb2.IdentityGroup]
    def __init__(self, groups: _Optional[_Iterable[_Union[_resources_pb2.IdentityGroup, _Mapping]]] = ...) -> None: ...

class ListLeasesRequest(_message.Message):
    __slots__ = ["feature", "license_id", "page_size", "page_token", "state", "tenant_id"]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    feature: str
    license_id: str
    page_size: int
    page_token: str
    state: _resources_pb2.LeaseState
    tenant_id: str
    def __init__(self, license_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., state: _Optional[_Union[_resources_pb2.LeaseState, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., feature: _Optional[str] = ...) -> None: ...

class ListLeasesResponse(_message.Message):
    __slots__ = ["leases", "next_page_token"]
    LEASES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    leases: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Lease]
    next_page_token: str
    def __init__(self, leases: _Optional[_Iterable[_Union[_resources_pb2.Lease, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListLicensesRequest(_message.Message):
    __slots__ = ["page_size", "page_token", "tenant_id"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListLicensesResponse(_message.Message):
    __slots__ = ["licenses", "next_page_token"]
    LICENSES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    licenses: _containers.RepeatedCompositeFieldContainer[_resources_pb2.License]
    next_page_token: str
    def __init__(self, licenses: _Optional[_Iterable[_Union[_resources_pb2.License, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListSigningKeysRequest(_message.Message):
    __slots__ = ["tenant_id"]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class ListSigningKeysResponse(_message.Message):
    __slots__ = ["signing_keys"]
    SIGNING_KEYS_FIELD_NUMBER: _ClassVar[int]
    signing_keys: _containers.RepeatedCompositeFieldContainer[_resources_pb2.SigningKey]
    def __init__(self, signing_keys: _Optional[_Iterable[_Union[_resources_pb2.SigningKey, _Mapping]]] = ...) -> None: ...

class ListTenantsRequest(_message.Message):
    __slots__ = ["page_size", "page_token"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTenantsResponse(_message.Message):
    __slots__ = ["next_page_token", "tenants"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    tenants: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Tenant]
    def __init__(self, tenants: _Optional[_Iterable[_Union[_resources_pb2.Tenant, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListUsageEventsRequest(_message.Message):
    __slots__ = ["end_time", "license_id", "page_size", "page_token", "start_time", "tenant_id"]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    end_time: _timestamp_pb2.Timestamp
    license_id: str
    page_size: int
    page_token: str
    start_time: _timestamp_pb2.Timestamp
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., license_id: _Optional[str] = ..., start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListUsageEventsResponse(_message.Message):
    __slots__ = ["next_page_token", "usage_events"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    USAGE_EVENTS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    usage_events: _containers.RepeatedCompositeFieldContainer[UsageEvent]
    def __init__(self, usage_events: _Optional[_Iterable[_Union[UsageEvent, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListWebhookDeliveriesRequest(_message.Message):
    __slots__ = ["endpoint_id", "page_size", "page_token", "tenant_id"]
    ENDPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    endpoint_id: str
    page_size: int
    page_token: str
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., endpoint_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListWebhookDeliveriesResponse(_message.Message):
    __slots__ = ["deliveries", "next_page_token"]
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    deliveries: _containers.RepeatedCompositeFieldContainer[WebhookDelivery]
    next_page_token: str
    def __init__(self, deliveries: _Optional[_Iterable[_Union[WebhookDelivery, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListWebhookEndpointsRequest(_message.Message):
    __slots__ = ["tenant_id"]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class ListWebhookEndpointsResponse(_message.Message):
    __slots__ = ["endpoints"]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    endpoints: _containers.RepeatedCompositeFieldContainer[WebhookEndpoint]
    def __init__(self, endpoints: _Optional[_Iterable[_Union[WebhookEndpoint, _Mapping]]] = ...) -> None: ...

class PutGroupRequest(_message.Message):
    __slots__ = ["group", "tenant_id"]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    group: _resources_pb2.IdentityGroup
    tenant_id: str
    def __init__(self, group: _Optional[_Union[_resources_pb2.IdentityGroup, _Mapping]] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class PutGroupResponse(_message.Message):
    __slots__ = ["group"]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    group: _resources_pb2.IdentityGroup
    def __init__(self, group: _Optional[_Union[_resources_pb2.IdentityGroup, _Mapping]] = ...) -> None: ...

class ReloadLicenseFileRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ReloadLicenseFileResponse(_message.Message):
    __slots__ = ["changed", "license_file"]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    LICENSE_FILE_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    license_file: LicenseFile
    def __init__(self, license_file: _Optional[_Union[LicenseFile, _Mapping]] = ..., changed: bool = ...) -> None: ...

class ReplayWebhookDeliveryRequest(_message.Message):
    __slots__ = ["id", "tenant_id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class ReplayWebhookDeliveryResponse(_message.Message):
    __slots__ = ["delivery"]
    DELIVERY_FIELD_NUMBER: _ClassVar[int]
    delivery: WebhookDelivery
    def __init__(self, delivery: _Optional[_Union[WebhookDelivery, _Mapping]] = ...) -> None: ...

class RevokeApiKeyRequest(_message.Message):
    __slots__ = ["api_key_id"]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    api_key_id: str
    def __init__(self, api_key_id: _Optional[str] = ...) -> None: ...

class RevokeApiKeyResponse(_message.Message):
    __slots__ = ["api_key"]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    api_key: _resources_pb2.ApiKey
    def __init__(self, api_key: _Optional[_Union[_resources_pb2.ApiKey, _Mapping]] = ...) -> None: ...

class RevokeLeaseRequest(_message.Message):
    __slots__ = ["lease_id", "reason", "tenant_id"]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    reason: str
    tenant_id: str
    def __init__(self, lease_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RevokeLeaseResponse(_message.Message):
    __slots__ = ["lease"]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    lease: _resources_pb2.Lease
    def __init__(self, lease: _Optional[_Union[_resources_pb2.Lease, _Mapping]] = ...) -> None: ...

class RotateSigningKeyRequest(_message.Message):
    __slots__ = ["tenant_id"]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class RotateSigningKeyResponse(_message.Message):
    __slots__ = ["signing_key"]
    SIGNING_KEY_FIELD_NUMBER: _ClassVar[int]
    signing_key: _resources_pb2.SigningKey
    def __init__(self, signing_key: _Optional[_Union[_resources_pb2.SigningKey, _Mapping]] = ...) -> None: ...

class RotateWebhookSecretRequest(_message.Message):
    __slots__ = ["id", "keep_previous", "secret", "tenant_id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    KEEP_PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    keep_previous: _duration_pb2.Duration
    secret: str
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., id: _Optional[str] = ..., secret: _Optional[str] = ..., keep_previous: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class RotateWebhookSecretResponse(_message.Message):
    __slots__ = ["endpoint", "secret"]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    endpoint: WebhookEndpoint
    secret: str
    def __init__(self, endpoint: _Optional[_Union[WebhookEndpoint, _Mapping]] = ..., secret: _Optional[str] = ...) -> None: ...

class SetLicensePolicyRequest(_message.Message):
    __slots__ = ["license_id", "policy", "tenant_id"]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    license_id: str
    policy: _resources_pb2.LicensePolicy
    tenant_id: str
    def __init__(self, license_id: _Optional[str] = ..., policy: _Optional[_Union[_resources_pb2.LicensePolicy, _Mapping]] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class SetLicensePolicyResponse(_message.Message):
    __slots__ = ["policy"]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    policy: _resources_pb2.LicensePolicy
    def __init__(self, policy: _Optional[_Union[_resources_pb2.LicensePolicy, _Mapping]] = ...) -> None: ...

class SetWebhookEndpointDisabledRequest(_message.Message):
    __slots__ = ["disabled", "id", "tenant_id"]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    disabled: bool
    id: str
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., id: _Optional[str] = ..., disabled: bool = ...) -> None: ...

class SetWebhookEndpointDisabledResponse(_message.Message):
    __slots__ = ["endpoint"]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    endpoint: WebhookEndpoint
    def __init__(self, endpoint: _Optional[_Union[WebhookEndpoint, _Mapping]] = ...) -> None: ...

class UpdateFeatureGrantRequest(_message.Message):
    __slots__ = ["grant", "license_id", "tenant_id", "update_mask"]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    grant: _resources_pb2.FeatureGrant
    license_id: str
    tenant_id: str
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, license_id: _Optional[str] = ..., grant: _Optional[_Union[_resources_pb2.FeatureGrant, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class UpdateFeatureGrantResponse(_message.Message):
    __slots__ = ["grant"]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    grant: _resources_pb2.FeatureGrant
    def __init__(self, grant: _Optional[_Union[_resources_pb2.FeatureGrant, _Mapping]] = ...) -> None: ...

class UpdateLicenseRequest(_message.Message):
    __slots__ = ["license", "tenant_id", "update_mask"]
    LICENSE_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    license: _resources_pb2.License
    tenant_id: str
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, license: _Optional[_Union[_resources_pb2.License, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class UpdateLicenseResponse(_message.Message):
    __slots__ = ["license"]
    LICENSE_FIELD_NUMBER: _ClassVar[int]
    license: _resources_pb2.License
    def __init__(self, license: _Optional[_Union[_resources_pb2.License, _Mapping]] = ...) -> None: ...

class UsageEvent(_message.Message):
    __slots__ = ["duration", "end_state", "ended_at", "feature", "grant_id", "lease_id", "license_id", "started_at"]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    END_STATE_FIELD_NUMBER: _ClassVar[int]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    duration: _duration_pb2.Duration
    end_state: _resources_pb2.LeaseState
    ended_at: _timestamp_pb2.Timestamp
    feature: str
    grant_id: str
    lease_id: str
    license_id: str
    started_at: _timestamp_pb2.Timestamp
    def __init__(self, lease_id: _Optional[str] = ..., license_id: _Optional[str] = ..., end_state: _Optional[_Union[_resources_pb2.LeaseState, str]] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., grant_id: _Optional[str] = ..., feature: _Optional[str] = ...) -> None: ...

class UsageExportRow(_message.Message):
    __slots__ = ["denials", "feature", "license_id", "peak_seats", "seat_hours"]
    DENIALS_FIELD_NUMBER: _ClassVar[int]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    PEAK_SEATS_FIELD_NUMBER: _ClassVar[int]
    SEAT_HOURS_FIELD_NUMBER: _ClassVar[int]
    denials: int
    feature: str
    license_id: str
    peak_seats: int
    seat_hours: float
    def __init__(self, license_id: _Optional[str] = ..., feature: _Optional[str] = ..., peak_seats: _Optional[int] = ..., denials: _Optional[int] = ..., seat_hours: _Optional[float] = ...) -> None: ...

class UsageReportRow(_message.Message):
    __slots__ = ["acquisitions", "bucket_start", "denials", "denials_by_reason", "distinct_users", "feature", "license_id", "mean_queue_wait", "peak_seats", "queue_waits", "seat_hours"]
    class DenialsByReasonEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ACQUISITIONS_FIELD_NUMBER: _ClassVar[int]
    BUCKET_START_FIELD_NUMBER: _ClassVar[int]
    DENIALS_BY_REASON_FIELD_NUMBER: _ClassVar[int]
    DENIALS_FIELD_NUMBER: _ClassVar[int]
    DISTINCT_USERS_FIELD_NUMBER: _ClassVar[int]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    MEAN_QUEUE_WAIT_FIELD_NUMBER: _ClassVar[int]
    PEAK_SEATS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_WAITS_FIELD_NUMBER: _ClassVar[int]
    SEAT_HOURS_FIELD_NUMBER: _ClassVar[int]
    acquisitions: int
    bucket_start: _timestamp_pb2.Timestamp
    denials: int
    denials_by_reason: _containers.ScalarMap[str, int]
    distinct_users: int
    feature: str
    license_id: str
    mean_queue_wait: _duration_pb2.Duration
    peak_seats: int
    queue_waits: int
    seat_hours: float
    def __init__(self, license_id: _Optional[str] = ..., bucket_start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., peak_seats: _Optional[int] = ..., seat_hours: _Optional[float] = ..., acquisitions: _Optional[int] = ..., denials: _Optional[int] = ..., distinct_users: _Optional[int] = ..., queue_waits: _Optional[int] = ..., mean_queue_wait: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., feature: _Optional[str] = ..., denials_by_reason: _Optional[_Mapping[str, int]] = ...) -> None: ...

class UserUsage(_message.Message):
    __slots__ = ["seat_hours", "sessions", "user"]
    SEAT_HOURS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    seat_hours: float
    sessions: int
    user: str
    def __init__(self, user: _Optional[str] = ..., seat_hours: _Optional[float] = ..., sessions: _Optional[int] = ...) -> None: ...

class WebhookDelivery(_message.Message):
    __slots__ = ["attempts", "created_at", "endpoint_id", "event_id", "event_type", "id", "last_attempt_at", "last_error", "last_latency", "last_status", "license_id", "next_attempt_at", "payload", "sequence", "state"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ATTEMPT_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_LATENCY_FIELD_NUMBER: _ClassVar[int]
    LAST_STATUS_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_AT_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    attempts: int
    created_at: _timestamp_pb2.Timestamp
    endpoint_id: str
    event_id: str
    event_type: str
    id: str
    last_attempt_at: _timestamp_pb2.Timestamp
    last_error: str
    last_latency: _duration_pb2.Duration
    last_status: int
    license_id: str
    next_attempt_at: _timestamp_pb2.Timestamp
    payload: str
    sequence: int
    state: str
    def __init__(self, id: _Optional[str] = ..., endpoint_id: _Optional[str] = ..., event_id: _Optional[str] = ..., event_type: _Optional[str] = ..., sequence: _Optional[int] = ..., state: _Optional[str] = ..., attempts: _Optional[int] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., next_attempt_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_status: _Optional[int] = ..., last_error: _Optional[str] = ..., last_latency: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., last_attempt_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., payload: _Optional[str] = ..., license_id: _Optional[str] = ...) -> None: ...

class WebhookEndpoint(_message.Message):
    __slots__ = ["created_at", "description", "disabled", "disabled_reason", "failing_since", "id", "previous_secret_until", "tenant_id", "types", "updated_at", "url"]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    DISABLED_REASON_FIELD_NUMBER: _ClassVar[int]
    FAILING_SINCE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_SECRET_UNTIL_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    created_at: _timestamp_pb2.Timestamp
    description: str
    disabled: bool
    disabled_reason: str
    failing_since: _timestamp_pb2.Timestamp
    id: str
    previous_secret_until: _timestamp_pb2.Timestamp
    tenant_id: str
    types: _containers.RepeatedScalarFieldContainer[str]
    updated_at: _timestamp_pb2.Timestamp
    url: str
    def __init__(self, id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., url: _Optional[str] = ..., types: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ..., disabled: bool = ..., disabled_reason: _Optional[str] = ..., previous_secret_until: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., failing_since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ZombieDay(_message.Message):
    __slots__ = ["affected_licenses", "date", "zombies_cleaned"]
    AFFECTED_LICENSES_FIELD_NUMBER: _ClassVar[int]
    DATE_FIELD_NUMBER: _ClassVar[int]
    ZOMBIES_CLEANED_FIELD_NUMBER: _ClassVar[int]
    affected_licenses: int
    date: str
    zombies_cleaned: int
    def __init__(self, date: _Optional[str] = ..., zombies_cleaned: _Optional[int] = ..., affected_licenses: _Optional[int] = ...) -> None: ...

class UsageBucket(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
