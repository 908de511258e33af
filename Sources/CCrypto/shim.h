/* The low-level SHA-256 below is deprecated in OpenSSL 3 in favour of EVP, whose one-shot
 * path allocates a context and provider state per call: for hashing thousands of short
 * strings (URLs, partial names) the direct function is several times cheaper. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

/* SHA-256 of a short buffer in one call, without EVP. */
static inline void prefetch_sha256_short(const void *data, size_t length, unsigned char *out) {
    SHA256_CTX context; /* not SHA256(): in OpenSSL 3 that fetches "SHA256" by name on each call */
    SHA256_Init(&context);
    SHA256_Update(&context, data, length);
    SHA256_Final(out, &context);
}
