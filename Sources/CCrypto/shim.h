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
#include <openssl/provider.h>

/* Incremental SHA-256 on a caller-owned context, without EVP. */
static inline void prefetch_sha256_init(SHA256_CTX *context) { SHA256_Init(context); }
static inline void prefetch_sha256_update(SHA256_CTX *context, const void *data, size_t length) {
    SHA256_Update(context, data, length);
}
static inline void prefetch_sha256_final(SHA256_CTX *context, unsigned char *out) { SHA256_Final(out, context); }

/* Incremental SHA-1 (zsync's whole-file check, SPEC §9), the same way. */
static inline void prefetch_sha1_init(SHA_CTX *context) { SHA1_Init(context); }
static inline void prefetch_sha1_update(SHA_CTX *context, const void *data, size_t length) { SHA1_Update(context, data, length); }
static inline void prefetch_sha1_final(SHA_CTX *context, unsigned char *out) { SHA1_Final(out, context); }

/* SHA-256 of a short buffer in one call, without EVP. */
static inline void prefetch_sha256_short(const void *data, size_t length, unsigned char *out) {
    SHA256_CTX context; /* not SHA256(): in OpenSSL 3 that fetches "SHA256" by name on each call */
    SHA256_Init(&context);
    SHA256_Update(&context, data, length);
    SHA256_Final(out, &context);
}

/* Ed25519 and BLAKE2b-512 for minisign signatures (PrefetchCore/Signatures). In C so that the
 * key and the context are freed on every path, and so that a failed check leaves nothing on
 * this thread's OpenSSL error queue: libcurl's OpenSSL backend reads that queue to explain
 * its own TLS failures, and a stale entry would be shown as the cause of an unrelated one. */
#include <openssl/err.h>

/* 1 when `signature` (64 bytes) is `public_key`'s (32 bytes) Ed25519 signature of
 * `message`, 0 when it is not or libcrypto could not check it. */
static inline int prefetch_ed25519_verify(const unsigned char *public_key, const unsigned char *signature,
                                          const unsigned char *message, size_t length) {
    static const unsigned char nothing = 0;
    int verified = 0;
    if (message == NULL) message = &nothing; /* an empty message: a valid pointer all the same */
    EVP_PKEY *key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, public_key, 32);
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    if (key != NULL && context != NULL && EVP_DigestVerifyInit(context, NULL, NULL, NULL, key) == 1) {
        /* Ed25519 has no streaming mode in libcrypto: the whole message in one call. */
        verified = EVP_DigestVerify(context, signature, 64, message, length) == 1;
    }
    EVP_MD_CTX_free(context);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return verified;
}

/* BLAKE2b-512 of `data` into `out` (64 bytes): 1 when done, 0 when libcrypto failed. */
static inline int prefetch_blake2b512(const void *data, size_t length, unsigned char *out) {
    unsigned int size = 0;
    int done = EVP_Digest(data, length, out, &size, EVP_blake2b512(), NULL) == 1 && size == 64;
    ERR_clear_error();
    return done;
}
