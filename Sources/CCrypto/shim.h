/* The low-level SHA-256 below is deprecated in OpenSSL 3 in favour of EVP, whose one-shot
 * path allocates a context and provider state per call: for hashing thousands of short
 * strings (URLs, partial names) the direct function is several times cheaper. It is also
 * the safer one for hashing on a worker thread: its context is a plain struct, and the
 * computation touches no provider, name table or other state that OpenSSL's exit handler
 * frees (a body hashed through EVP on a dispatch thread while the process exited crashed
 * it). The same assembly (SHA extensions where the CPU has them) does the work either way. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

/* Incremental SHA-256 on a caller-owned context, without EVP. */
static inline void prefetch_sha256_init(SHA256_CTX *context) { SHA256_Init(context); }
static inline void prefetch_sha256_update(SHA256_CTX *context, const void *data, size_t length) {
    SHA256_Update(context, data, length);
}
static inline void prefetch_sha256_final(SHA256_CTX *context, unsigned char *out) { SHA256_Final(out, context); }

/* SHA-256 of a short buffer in one call, without EVP. */
static inline void prefetch_sha256_short(const void *data, size_t length, unsigned char *out) {
    SHA256_CTX context; /* not SHA256(): in OpenSSL 3 that fetches "SHA256" by name on each call */
    SHA256_Init(&context);
    SHA256_Update(&context, data, length);
    SHA256_Final(out, &context);
}
