/* The wire format of grpc.health.v1.Health/Check, small enough to write by
 * hand: a gRPC message is a 5-byte prefix (compressed flag, big-endian
 * length) and a protobuf body; HealthCheckRequest is {string service = 1},
 * HealthCheckResponse is {ServingStatus status = 1}. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define GRPC_HEALTH_CHECK_PATH "/grpc.health.v1.Health/Check"

typedef enum GrpcServingStatus {
        GRPC_HEALTH_UNKNOWN = 0,
        GRPC_HEALTH_SERVING = 1,
        GRPC_HEALTH_NOT_SERVING = 2,
        GRPC_HEALTH_SERVICE_UNKNOWN = 3,
} GrpcServingStatus;

/* "UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN", or NULL. */
const char *grpc_serving_status_to_string(int status);

/* The framed request for service (NULL = ""). 0 or -ENOMEM/-EINVAL. */
int grpc_health_request_encode(const char *service, uint8_t **ret, size_t *ret_len);

/* Decodes one framed HealthCheckResponse. Unknown fields are skipped;
 * a missing status is UNKNOWN (proto3 default). -EBADMSG on truncated or
 * malformed input, -EPROTONOSUPPORT for a compressed message. */
int grpc_health_response_decode(const uint8_t *buf, size_t len, int *ret_status);
