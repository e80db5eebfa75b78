#ifndef ATTEST_GATEWAY_COPENSSL_SHIM_H
#define ATTEST_GATEWAY_COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/cms.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>

/* Function forms of OpenSSL macros that Swift cannot import. */
static inline long cshim_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long cshim_SSL_CTX_set_options(SSL_CTX *ctx, long opts) { return (long)SSL_CTX_set_options(ctx, (uint64_t)opts); }
static inline int cshim_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int v) { return (int)SSL_CTX_set_min_proto_version(ctx, v); }
static inline long cshim_BIO_get_mem_data(BIO *bio, char **pp) { return BIO_get_mem_data(bio, pp); }
static inline int cshim_SSL_set_tlsext_host_name(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }
static inline void cshim_OPENSSL_free(void *p) { OPENSSL_free(p); }
/* AttestCrypto: key-selection macros (compound expressions Swift cannot import). */
static inline int cshim_EVP_PKEY_PUBLIC_KEY(void) { return EVP_PKEY_PUBLIC_KEY; }
static inline int cshim_EVP_PKEY_KEYPAIR(void) { return EVP_PKEY_KEYPAIR; }
/* GatewayIO TLS: function forms of the SSL_CTX / BIO macros the TLS layer calls. */
static inline int cshim_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int v) { return (int)SSL_CTX_set_max_proto_version(ctx, v); }
static inline int cshim_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list) { return (int)SSL_CTX_set1_groups_list(ctx, list); }
static inline long cshim_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_session_cache_mode(ctx, mode); }
static inline long cshim_SSL_CTX_sess_set_cache_size(SSL_CTX *ctx, long size) { return SSL_CTX_sess_set_cache_size(ctx, size); }
static inline long cshim_SSL_CTX_set_read_ahead(SSL_CTX *ctx, long yes) { return SSL_CTX_set_read_ahead(ctx, yes); }
static inline int cshim_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *x509) { return (int)SSL_CTX_add1_chain_cert(ctx, x509); }
static inline long cshim_SSL_CTX_set_tlsext_servername_callback(SSL_CTX *ctx, int (*cb)(SSL *, int *, void *)) {
    return SSL_CTX_set_tlsext_servername_callback(ctx, cb);
}
static inline void cshim_BIO_set_retry_read(BIO *b) { BIO_set_retry_read(b); }
static inline void cshim_BIO_set_retry_write(BIO *b) { BIO_set_retry_write(b); }
static inline void cshim_BIO_clear_retry_flags(BIO *b) { BIO_clear_retry_flags(b); }
static inline uint64_t cshim_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
static inline uint64_t cshim_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t cshim_SSL_OP_NO_TICKET(void) { return SSL_OP_NO_TICKET; }
static inline uint64_t cshim_SSL_OP_CIPHER_SERVER_PREFERENCE(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }
static inline unsigned long cshim_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }
#endif
