/* See grpc-health.h. */
#include "grpc-health.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *grpc_serving_status_to_string(int status) {
        static const char *const table[] = { "UNKNOWN", "SERVING", "NOT_SERVING",
                                             "SERVICE_UNKNOWN" };
        return status >= 0 && status < 4 ? table[status] : NULL;
}

static size_t varint_put(uint8_t *p, uint64_t v) {
        size_t n = 0;
        do {
                uint8_t b = v & 0x7f;
                v >>= 7;
                p[n++] = b | (v ? 0x80 : 0);
        } while (v);
        return n;
}

static int varint_get(const uint8_t **p, const uint8_t *end, uint64_t *ret) {
        uint64_t v = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
                if (*p >= end)
                        return -EBADMSG;
                uint8_t b = *(*p)++;
                v |= (uint64_t)(b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return 0;
                }
        }
        return -EBADMSG;
}

int grpc_health_request_encode(const char *service, uint8_t **ret, size_t *ret_len) {
        size_t slen = service ? strlen(service) : 0;
        if (slen > UINT32_MAX - 16)
                return -EINVAL;
        /* prefix + tag + length varint + bytes */
        uint8_t *buf = malloc(5 + 1 + 10 + slen);
        if (!buf)
                return -ENOMEM;
        size_t n = 5;
        /* proto3 leaves the empty default out of the message. */
        if (slen > 0) {
                buf[n++] = (1 << 3) | 2; /* field 1, length-delimited */
                n += varint_put(buf + n, slen);
                memcpy(buf + n, service, slen);
                n += slen;
        }
        uint32_t body = (uint32_t)(n - 5);
        buf[0] = 0; /* not compressed */
        buf[1] = body >> 24;
        buf[2] = body >> 16;
        buf[3] = body >> 8;
        buf[4] = body;
        *ret = buf;
        *ret_len = n;
        return 0;
}

int grpc_health_response_decode(const uint8_t *buf, size_t len, int *ret_status) {
        if (!buf || len < 5)
                return -EBADMSG;
        if (buf[0] != 0)
                return -EPROTONOSUPPORT;
        uint32_t body =
                (uint32_t)buf[1] << 24 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 8 | buf[4];
        if (body > len - 5)
                return -EBADMSG;
        const uint8_t *p = buf + 5, *end = p + body;
        int status = GRPC_HEALTH_UNKNOWN;
        while (p < end) {
                uint64_t key, v;
                if (varint_get(&p, end, &key) < 0)
                        return -EBADMSG;
                switch (key & 7) {
                case 0:
                        if (varint_get(&p, end, &v) < 0)
                                return -EBADMSG;
                        if (key >> 3 == 1)
                                status = (int)(int32_t)v;
                        break;
                case 1:
                        if (end - p < 8)
                                return -EBADMSG;
                        p += 8;
                        break;
                case 2:
                        if (varint_get(&p, end, &v) < 0 || v > (uint64_t)(end - p))
                                return -EBADMSG;
                        p += v;
                        break;
                case 5:
                        if (end - p < 4)
                                return -EBADMSG;
                        p += 4;
                        break;
                default:
                        return -EBADMSG;
                }
        }
        *ret_status = status;
        return 0;
}
