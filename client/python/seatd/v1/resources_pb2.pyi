from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
LEASE_STATE_ACTIVE: LeaseState
LEASE_STATE_EXPIRED: LeaseState
LEASE_STATE_RELEASED: LeaseState
LEASE_STATE_REVOKED: LeaseState
LEASE_STATE_UNSPECIFIED: LeaseState
LEASING_STRATEGY_PER_ACQUISITION: LeasingStrategy
LEASING_STRATEGY_PER_FINGERPRINT: LeasingStrategy
LEASING_STRATEGY_PER_HOSTNAME: LeasingStrategy
LEASING_STRATEGY_PER_USER: LeasingStrategy
LEASING_STRATEGY_UNSPECIFIED: LeasingStrategy
SIGNING_KEY_STATE_NEXT: SigningKeyState
SIGNING_KEY_STATE_RETIRED: SigningKeyState
SIGNING_KEY_STATE_SIGNING: SigningKeyState
SIGNING_KEY_STATE_UNSPECIFIED: SigningKeyState

class ApiKey(_message.Message):
    __slots__ = ["create_time", "id", "name", "revoke_time", "role", "tenant_id"]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    REVOKE_TIME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    create_time: _timestamp_pb2.Timestamp
    id: str
    name: str
    revoke_time: _timestamp_pb2.Timestamp
    role: str
    tenant_id: str
    def __init__(self, id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., name: _Optional[str] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., revoke_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., role: _Optional[str] = ...) -> None: ...

class FeatureGrant(_message.Message):
    __slots__ = ["create_time", "expires_at", "feature", "id", "license_id", "max_borrow_duration", "max_borrowed_seats", "overdraft", "seats", "seats_in_use", "starts_at", "update_time", "version"]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_BORROWED_SEATS_FIELD_NUMBER: _ClassVar[int]
    MAX_BORROW_DURATION_FIELD_NUMBER: _ClassVar[int]
    OVERDRAFT_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    SEATS_IN_USE_FIELD_NUMBER: _ClassVar[int]
    STARTS_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    create_time: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    feature: str
    id: str
    license_id: str
    max_borrow_duration: _duration_pb2.Duration
    max_borrowed_seats: int
    overdraft: int
    seats: int
    seats_in_use: int
    starts_at: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    version: str
    def __init__(self, id: _Optional[str] = ..., license_id: _Optional[str] = ..., feature: _Optional[str] = ..., version: _Optional[str] = ..., seats: _Optional[int] = ..., overdraft: _Optional[int] = ..., starts_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., max_borrow_duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_borrowed_seats: _Optional[int] = ..., seats_in_use: _Optional[int] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class IdentityGroup(_message.Message):
    __slots__ = ["create_time", "kind", "members", "name", "update_time"]
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    KIND_HOSTS: IdentityGroup.Kind
    KIND_UNSPECIFIED: IdentityGroup.Kind
    KIND_USERS: IdentityGroup.Kind
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    create_time: _timestamp_pb2.Timestamp
    kind: IdentityGroup.Kind
    members: _containers.RepeatedScalarFieldContainer[str]
    name: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[_Union[IdentityGroup.Kind, str]] = ..., members: _Optional[_Iterable[str]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class JsonWebKey(_message.Message):
    __slots__ = ["alg", "crv", "kid", "kty", "use", "x"]
    ALG_FIELD_NUMBER: _ClassVar[int]
    CRV_FIELD_NUMBER: _ClassVar[int]
    KID_FIELD_NUMBER: _ClassVar[int]
    KTY_FIELD_NUMBER: _ClassVar[int]
    USE_FIELD_NUMBER: _ClassVar[int]
    X_FIELD_NUMBER: _ClassVar[int]
    alg: str
    crv: str
    kid: str
    kty: str
    use: str
    x: str
    def __init__(self, kty: _Optional[str] = ..., crv: _Optional[str] = ..., x: _Optional[str] = ..., kid: _Optional[str] = ..., use: _Optional[str] = ..., alg: _Optional[str] = ...) -> None: ...

class Lease(_message.Message):
    __slots__ = ["acquired_at", "borrowed", "ended_at", "expires_at", "feature", "fingerprint", "grant_id", "hostname", "id", "last_heartbeat_at", "license_id", "lingering", "metadata", "reserved_for", "state", "user", "version"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ACQUIRED_AT_FIELD_NUMBER: _ClassVar[int]
    BORROWED_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_AT_FIELD_NUMBER: _ClassVar[int]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    LINGERING_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    RESERVED_FOR_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    acquired_at: _timestamp_pb2.Timestamp
    borrowed: bool
    ended_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    feature: str
    fingerprint: str
    grant_id: str
    hostname: str
    id: str
    last_heartbeat_at: _timestamp_pb2.Timestamp
    license_id: str
    lingering: bool
    metadata: _containers.ScalarMap[str, str]
    reserved_for: PolicySubject
    state: LeaseState
    user: str
    version: str
    def __init__(self, id: _Optional[str] = ..., license_id: _Optional[str] = ..., fingerprint: _Optional[str] = ..., state: _Optional[_Union[LeaseState, str]] = ..., acquired_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., user: _Optional[str] = ..., hostname: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., last_heartbeat_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., borrowed: bool = ..., grant_id: _Optional[str] = ..., feature: _Optional[str] = ..., version: _Optional[str] = ..., reserved_for: _Optional[_Union[PolicySubject, _Mapping]] = ..., lingering: bool = ...) -> None: ...

class License(_message.Message):
    __slots__ = ["active", "allow_early_return", "create_time", "expires_at", "grants", "id", "key", "lease_ttl", "leasing_strategy", "max_borrow_duration", "max_borrowed_seats", "metadata", "name", "overdraft", "revival_window", "seats", "seats_in_use", "tenant_id", "update_time", "waiting"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    ALLOW_EARLY_RETURN_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    LEASE_TTL_FIELD_NUMBER: _ClassVar[int]
    LEASING_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    MAX_BORROWED_SEATS_FIELD_NUMBER: _ClassVar[int]
    MAX_BORROW_DURATION_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OVERDRAFT_FIELD_NUMBER: _ClassVar[int]
    REVIVAL_WINDOW_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    SEATS_IN_USE_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    active: bool
    allow_early_return: bool
    create_time: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    grants: _containers.RepeatedCompositeFieldContainer[FeatureGrant]
    id: str
    key: str
    lease_ttl: _duration_pb2.Duration
    leasing_strategy: LeasingStrategy
    max_borrow_duration: _duration_pb2.Duration
    max_borrowed_seats: int
    metadata: _containers.ScalarMap[str, str]
    name: str
    overdraft: int
    revival_window: _duration_pb2.Duration
    seats: int
    seats_in_use: int
    tenant_id: str
    update_time: _timestamp_pb2.Timestamp
    waiting: int
    def __init__(self, id: _Optional[str] = ..., key: _Optional[str] = ..., seats: _Optional[int] = ..., lease_ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., active: bool = ..., tenant_id: _Optional[str] = ..., name: _Optional[str] = ..., overdraft: _Optional[int] = ..., revival_window: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., leasing_strategy: _Optional[_Union[LeasingStrategy, str]] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., seats_in_use: _Optional[int] = ..., waiting: _Optional[int] = ..., max_borrow_duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_borrowed_seats: _Optional[int] = ..., allow_early_return: bool = ..., grants: _Optional[_Iterable[_Union[FeatureGrant, _Mapping]]] = ...) -> None: ...

class LicensePolicy(_message.Message):
    __slots__ = ["license_id", "linger", "priorities", "rules", "update_time"]
    LICENSE_ID_FIELD_NUMBER: _ClassVar[int]
    LINGER_FIELD_NUMBER: _ClassVar[int]
    PRIORITIES_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    license_id: str
    linger: _containers.RepeatedCompositeFieldContainer[PolicyLinger]
    priorities: _containers.RepeatedCompositeFieldContainer[PolicyPriority]
    rules: _containers.RepeatedCompositeFieldContainer[PolicyRule]
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, license_id: _Optional[str] = ..., rules: _Optional[_Iterable[_Union[PolicyRule, _Mapping]]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., linger: _Optional[_Iterable[_Union[PolicyLinger, _Mapping]]] = ..., priorities: _Optional[_Iterable[_Union[PolicyPriority, _Mapping]]] = ...) -> None: ...

class PolicyLinger(_message.Message):
    __slots__ = ["duration", "feature"]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    duration: _duration_pb2.Duration
    feature: str
    def __init__(self, feature: _Optional[str] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class PolicyPriority(_message.Message):
    __slots__ = ["feature", "level", "subject"]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    feature: str
    level: int
    subject: PolicySubject
    def __init__(self, feature: _Optional[str] = ..., subject: _Optional[_Union[PolicySubject, _Mapping]] = ..., level: _Optional[int] = ...) -> None: ...

class PolicyRule(_message.Message):
    __slots__ = ["count", "each_member", "feature", "kind", "subject"]
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    COUNT_FIELD_NUMBER: _ClassVar[int]
    EACH_MEMBER_FIELD_NUMBER: _ClassVar[int]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    KIND_EXCLUDE: PolicyRule.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    KIND_INCLUDE: PolicyRule.Kind
    KIND_MAX: PolicyRule.Kind
    KIND_RESERVE: PolicyRule.Kind
    KIND_UNSPECIFIED: PolicyRule.Kind
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    count: int
    each_member: bool
    feature: str
    kind: PolicyRule.Kind
    subject: PolicySubject
    def __init__(self, kind: _Optional[_Union[PolicyRule.Kind, str]] = ..., feature: _Optional[str] = ..., count: _Optional[int] = ..., subject: _Optional[_Union[PolicySubject, _Mapping]] = ..., each_member: bool = ...) -> None: ...

class PolicySubject(_message.Message):
    __slots__ = ["kind", "name"]
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    KIND_FIELD_NUMBER: _ClassVar[int]
    KIND_GROUP: PolicySubject.Kind
    KIND_HOST: PolicySubject.Kind
    KIND_HOST_GROUP: PolicySubject.Kind
    KIND_UNSPECIFIED: PolicySubject.Kind
    KIND_USER: PolicySubject.Kind
    NAME_FIELD_NUMBER: _ClassVar[int]
    kind: PolicySubject.Kind
    name: str
    def __init__(self, kind: _Optional[_Union[PolicySubject.Kind, str]] = ..., name: _Optional[str] = ...) -> None: ...

class SigningKey(_message.Message):
    __slots__ = ["create_time", "kid", "public_key", "publish_until", "retire_time", "state", "tenant_id"]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    KID_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_UNTIL_FIELD_NUMBER: _ClassVar[int]
    RETIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    create_time: _timestamp_pb2.Timestamp
    kid: str
    public_key: JsonWebKey
    publish_until: _timestamp_pb2.Timestamp
    retire_time: _timestamp_pb2.Timestamp
    state: SigningKeyState
    tenant_id: str
    def __init__(self, kid: _Optional[str] = ..., tenant_id: _Optional[str] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., retire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., publish_until: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., public_key: _Optional[_Union[JsonWebKey, _Mapping]] = ..., state: _Optional[_Union[SigningKeyState, str]] = ...) -> None: ...

class Tenant(_message.Message):
    __slots__ = ["create_time", "id", "name", "quotas"]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUOTAS_FIELD_NUMBER: _ClassVar[int]
    create_time: _timestamp_pb2.Timestamp
    id: str
    name: str
    quotas: TenantQuotas
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., quotas: _Optional[_Union[TenantQuotas, _Mapping]] = ...) -> None: ...

class TenantQuotas(_message.Message):
    __slots__ = ["max_api_keys", "max_licenses", "max_seats"]
    MAX_API_KEYS_FIELD_NUMBER: _ClassVar[int]
    MAX_LICENSES_FIELD_NUMBER: _ClassVar[int]
    MAX_SEATS_FIELD_NUMBER: _ClassVar[int]
    max_api_keys: int
    max_licenses: int
    max_seats: int
    def __init__(self, max_licenses: _Optional[int] = ..., max_seats: _Optional[int] = ..., max_api_keys: _Optional[int] = ...) -> None: ...

class LeasingStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class LeaseState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SigningKeyState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
