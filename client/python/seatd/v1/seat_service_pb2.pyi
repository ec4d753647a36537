from google.protobuf import duration_pb2 as _duration_pb2
from seatd.v1 import resources_pb2 as _resources_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AcquireSeatRequest(_message.Message):
    __slots__ = ["borrow_duration", "feature", "fingerprint", "hostname", "idempotency_key", "license_key", "metadata", "nonce", "user", "version"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    BORROW_DURATION_FIELD_NUMBER: _ClassVar[int]
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    LICENSE_KEY_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    NONCE_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    borrow_duration: _duration_pb2.Duration
    feature: str
    fingerprint: str
    hostname: str
    idempotency_key: str
    license_key: str
    metadata: _containers.ScalarMap[str, str]
    nonce: str
    user: str
    version: str
    def __init__(self, license_key: _Optional[str] = ..., fingerprint: _Optional[str] = ..., user: _Optional[str] = ..., hostname: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., idempotency_key: _Optional[str] = ..., nonce: _Optional[str] = ..., borrow_duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., feature: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class AcquireSeatResponse(_message.Message):
    __slots__ = ["grant", "heartbeat_interval", "lease", "lease_certificate", "lease_token", "seat_limit", "seats_in_use"]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    LEASE_CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SEATS_IN_USE_FIELD_NUMBER: _ClassVar[int]
    SEAT_LIMIT_FIELD_NUMBER: _ClassVar[int]
    grant: _resources_pb2.FeatureGrant
    heartbeat_interval: _duration_pb2.Duration
    lease: _resources_pb2.Lease
    lease_certificate: str
    lease_token: str
    seat_limit: int
    seats_in_use: int
    def __init__(self, lease: _Optional[_Union[_resources_pb2.Lease, _Mapping]] = ..., lease_token: _Optional[str] = ..., heartbeat_interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., seats_in_use: _Optional[int] = ..., seat_limit: _Optional[int] = ..., lease_certificate: _Optional[str] = ..., grant: _Optional[_Union[_resources_pb2.FeatureGrant, _Mapping]] = ...) -> None: ...

class GetReturnedCertificatesRequest(_message.Message):
    __slots__ = ["tenant_id"]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class GetReturnedCertificatesResponse(_message.Message):
    __slots__ = ["returned_certificates"]
    RETURNED_CERTIFICATES_FIELD_NUMBER: _ClassVar[int]
    returned_certificates: str
    def __init__(self, returned_certificates: _Optional[str] = ...) -> None: ...

class GetSignedLicenseFileRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetSignedLicenseFileResponse(_message.Message):
    __slots__ = ["license_file", "serial"]
    LICENSE_FILE_FIELD_NUMBER: _ClassVar[int]
    SERIAL_FIELD_NUMBER: _ClassVar[int]
    license_file: str
    serial: int
    def __init__(self, license_file: _Optional[str] = ..., serial: _Optional[int] = ...) -> None: ...

class GetSigningKeysRequest(_message.Message):
    __slots__ = ["tenant_id"]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class GetSigningKeysResponse(_message.Message):
    __slots__ = ["keys"]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[_resources_pb2.JsonWebKey]
    def __init__(self, keys: _Optional[_Iterable[_Union[_resources_pb2.JsonWebKey, _Mapping]]] = ...) -> None: ...

class QueuePosition(_message.Message):
    __slots__ = ["position", "queue_length", "ticket"]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    QUEUE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    TICKET_FIELD_NUMBER: _ClassVar[int]
    position: int
    queue_length: int
    ticket: str
    def __init__(self, position: _Optional[int] = ..., queue_length: _Optional[int] = ..., ticket: _Optional[str] = ...) -> None: ...

class ReleaseSeatRequest(_message.Message):
    __slots__ = ["lease_id", "lease_token"]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    lease_token: str
    def __init__(self, lease_id: _Optional[str] = ..., lease_token: _Optional[str] = ...) -> None: ...

class ReleaseSeatResponse(_message.Message):
    __slots__ = ["lease"]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    lease: _resources_pb2.Lease
    def __init__(self, lease: _Optional[_Union[_resources_pb2.Lease, _Mapping]] = ...) -> None: ...

class WaitForSeatRequest(_message.Message):
    __slots__ = ["feature", "fingerprint", "hostname", "idempotency_key", "license_key", "metadata", "nonce", "queue_ticket", "user", "version"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    LICENSE_KEY_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    NONCE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_TICKET_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    feature: str
    fingerprint: str
    hostname: str
    idempotency_key: str
    license_key: str
    metadata: _containers.ScalarMap[str, str]
    nonce: str
    queue_ticket: str
    user: str
    version: str
    def __init__(self, license_key: _Optional[str] = ..., fingerprint: _Optional[str] = ..., user: _Optional[str] = ..., hostname: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., idempotency_key: _Optional[str] = ..., queue_ticket: _Optional[str] = ..., nonce: _Optional[str] = ..., feature: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class WaitForSeatResponse(_message.Message):
    __slots__ = ["granted", "position"]
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    granted: AcquireSeatResponse
    position: QueuePosition
    def __init__(self, position: _Optional[_Union[QueuePosition, _Mapping]] = ..., granted: _Optional[_Union[AcquireSeatResponse, _Mapping]] = ...) -> None: ...
