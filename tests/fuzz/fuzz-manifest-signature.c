/* libFuzzer target: a signature file and a body as a hostile server sends
 * them (manifest_signature_verify() in every format, with the keys of
 * tests/signatures/fixtures), then the version annotations of the body
 * (manifest_version_parse()). Input: one byte choosing the format, the
 * body, a NUL, the signature. A refusal must name a reason and say why;
 * an acceptance can only be one of the fixtures' own signatures. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "manifest-signature.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char cosign_pub[] =
        "-----BEGIN PUBLIC KEY-----\n"
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEpbO/4Z1njRbqFDEX+Z143u0C1Kbe\n"
        "sNr2QgRLEkWcMdqWfwtmAJnOD7s6ENXvCM/Rc3Q6DIt0ALn2BOblpfE8pw==\n"
        "-----END PUBLIC KEY-----\n";
static const char minisign_pub[] = "untrusted comment: minisign public key E1CE69536C88EB3A\n"
                                   "RWQ664hsU2nO4cjpeEwlBIKGwh/8eVcKKv8BgyW/wMnQsAMG3CXB2H92\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static ManifestKeyring *k;
        if (!k) {
                if (manifest_keyring_new(&k, NULL) < 0 ||
                    manifest_keyring_add(k, "cosign.pub", cosign_pub, strlen(cosign_pub), NULL) <
                            0 ||
                    manifest_keyring_add(k, "minisign.pub", minisign_pub, strlen(minisign_pub),
                                         NULL) < 0)
                        __builtin_trap();
        }
        if (size < 1)
                return 0;
        ManifestSignatureFormat f =
                (ManifestSignatureFormat)(data[0] % _MANIFEST_SIGNATURE_FORMAT_MAX);
        const char *body = (const char *)data + 1;
        const char *nul = memchr(body, 0, size - 1);
        size_t body_size = nul ? (size_t)(nul - body) : size - 1;
        const char *sig = nul ? nul + 1 : "";
        size_t sig_size = nul ? size - 1 - body_size - 1 : 0;

        ManifestSignatureFailure why = _MANIFEST_SIGNATURE_FAILURE_INVALID;
        Error err = {};
        int r = manifest_signature_verify(k, f, body, body_size, sig, sig_size, NULL, &why, &err);
        if (r < 0 && (!manifest_signature_failure_to_string(why) || err.message[0] == 0))
                __builtin_trap();

        ManifestVersion v;
        Error verr = {};
        r = manifest_version_parse(body, body_size, 0, &v, &verr);
        if (r < 0 && verr.message[0] == 0)
                __builtin_trap();
        return 0;
}
