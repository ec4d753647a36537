from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from seatd.v1 import resources_pb2 as _resources_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
HEARTBEAT_SIGNAL_EXPIRED: HeartbeatSignal
HEARTBEAT_SIGNAL_RECONNECT: HeartbeatSignal
HEARTBEAT_SIGNAL_REVOKED: HeartbeatSignal
HEARTBEAT_SIGNAL_UNSPECIFIED: HeartbeatSignal

class HeartbeatRequest(_message.Message):
    __slots__ = ["lease_id", "lease_token", "nonce"]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NONCE_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    lease_token: str
    nonce: str
    def __init__(self, lease_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., nonce: _Optional[str] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ["expires_at", "heartbeat_interval", "lease", "lease_certificate"]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    LEASE_CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    expires_at: _timestamp_pb2.Timestamp
    heartbeat_interval: _duration_pb2.Duration
    lease: _resources_pb2.Lease
    lease_certificate: str
    def __init__(self, expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., heartbeat_interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., lease: _Optional[_Union[_resources_pb2.Lease, _Mapping]] = ..., lease_certificate: _Optional[str] = ...) -> None: ...

class HeartbeatStreamRequest(_message.Message):
    __slots__ = ["lease_id", "lease_token", "nonce"]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NONCE_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    lease_token: str
    nonce: str
    def __init__(self, lease_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., nonce: _Optional[str] = ...) -> None: ...

class HeartbeatStreamResponse(_message.Message):
    __slots__ = ["expires_at", "heartbeat_interval", "lease_certificate", "signal"]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    LEASE_CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    expires_at: _timestamp_pb2.Timestamp
    heartbeat_interval: _duration_pb2.Duration
    lease_certificate: str
    signal: HeartbeatSignal
    def __init__(self, expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., heartbeat_interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., signal: _Optional[_Union[HeartbeatSignal, str]] = ..., lease_certificate: _Optional[str] = ...) -> None: ...

class HeartbeatSignal(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
