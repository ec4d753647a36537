// The generated seatd.v1 messages, enums and service descriptors, as one namespace.
export * from "./gen/seatd/v1/resources_pb.js";
export * from "./gen/seatd/v1/seat_service_pb.js";
export * from "./gen/seatd/v1/heartbeat_service_pb.js";
export * from "./gen/seatd/v1/admin_service_pb.js";
